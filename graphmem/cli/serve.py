"""`graphmem serve`: the memory over MCP, on stdio for one client or over streamable HTTP."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from graphmem.backup_schedule import BackupScheduler
from graphmem.cli.command import CliError, Subparsers
from graphmem.config import DEFAULT_TOOLS, TOOL_FAMILIES, Settings, SettingsError, parse_tools

if TYPE_CHECKING:
    from graphmem.early_handshake import Handshake

__all__ = ["add_parsers", "host_port", "serve"]


def host_port(value: str) -> tuple[str, int]:
    """An argparse type: HOST:PORT, HOST or :PORT, the missing part the default."""
    # The server's modules (graphmem.app, graphmem.transports, the MCP SDK) are imported
    # where a command runs them: registering `serve` must not load them for `graphmem import`.
    from graphmem.transports import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT  # noqa: PLC0415

    if not value:
        return DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = value, str(DEFAULT_HTTP_PORT)
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not HOST:PORT (e.g. 127.0.0.1:8765)"
        ) from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port {number} is outside 1-65535")
    return host.strip("[]") or DEFAULT_HTTP_HOST, number


def add_parsers(subparsers: Subparsers) -> None:
    """Register `serve`."""
    serve_ = subparsers.add_parser(
        "serve",
        help="serve the memory over MCP (stdio by default)",
        description="Serve the knowledge graph over MCP: on stdio for one client (what MCP "
        "hosts spawn), or with --http as one long-running streamable-HTTP service many "
        "clients share (path /mcp).",
    )
    serve_.add_argument(
        "--http",
        nargs="?",
        const="",
        default=None,
        type=host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP instead of stdio (default 127.0.0.1:8765); any host "
        "but 127.0.0.1, localhost or ::1 needs a bearer token (GRAPHMEM_HTTP_TOKEN or "
        "GRAPHMEM_HTTP_TOKEN_FILE)",
    )
    serve_.add_argument(
        "--tools",
        default=None,
        metavar="FAMILIES",
        help="the tool families to serve, comma-separated, from: "
        f"{', '.join(TOOL_FAMILIES)} (overrides GRAPHMEM_TOOLS; default "
        f"{','.join(DEFAULT_TOOLS)}). memory: the official memory tools and their extensions; "
        "schema: add_/update_/delete_<type> per schema file; mesh: the node/edge/metadata "
        "tools (their read_graph, search_nodes and open_nodes answer in place of memory's)",
    )
    serve_.add_argument(
        "--replicate",
        default=None,
        metavar="URL",
        help="replicate through a NATS JetStream hub, e.g. nats://hub.example:4222 "
        "(overrides GRAPHMEM_REPLICATE; see `graphmem hub` and `graphmem replication status`)",
    )
    serve_.set_defaults(run=serve)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until the client goes away (stdio) or a signal stops the service (HTTP).
    `args` may come from a bare `graphmem`, which serves on stdio with the defaults."""
    from graphmem import lean_imports  # noqa: PLC0415 (see host_port)

    lean_imports.lean_sdk_packages()  # before anything imports the SDK
    # Large blocks unmapped when freed until the writer has loaded (projections.heap).
    from projections.heap import map_large_blocks_while_loading  # noqa: PLC0415 (as the app)

    map_large_blocks_while_loading()
    # A stdio server's sse_starlette (which the SDK's server imports) is imported without
    # uvicorn where the SDK is loaded (graphmem.transports), if it is.
    from actors.search_handover import SearchHandover  # noqa: PLC0415 (as the app)
    from graphmem.app import running  # noqa: PLC0415 (see host_port)
    from graphmem.transports import serve_stdio  # noqa: PLC0415

    tools: str | None = getattr(args, "tools", None)
    if tools is not None:
        try:
            settings = settings.with_tools(parse_tools(tools, where="--tools"))
        except SettingsError as problem:
            raise CliError(str(problem), code=2) from None
    replicate: str | None = getattr(args, "replicate", None)
    if replicate:
        settings = settings.with_replicate(replicate)
    if "graph" in settings.tools:
        # Only here: the embeddings load numpy, which a server without the family never uses.
        from graphmem.embedding.loader import embedder_problem  # noqa: PLC0415

        if missing := embedder_problem(settings.graph.embedder):
            raise CliError(missing, code=2)
    http: tuple[str, int] | None = getattr(args, "http", None)
    if http is None:
        handshake: Handshake | None = getattr(args, "handshake", None)
        # The early reads built a search index: the writer adopts it rather than warm its own,
        # and serves from their graph rather than restore a second one (lend_graph).
        early = handshake.early if handshake is not None else None
        handover = SearchHandover(
            awaited=early is not None and early.has_search_index,
            lend_graph=early.lend_graph if early is not None else None,
        )
        with (
            running(
                settings,
                serve_stale=True,
                schedule_decay=True,
                embed=True,
                replicate=True,
                search_handover=handover,
                graph_images=True,
            ) as app,
            _scheduled_backups(settings),
        ):
            if handshake is not None and handover.awaited:
                handshake.hand_search_to = app.graph.adopt_search
            serve_stdio(app, handshake)
        return 0
    return _serve_http(settings, http)


def _serve_http(settings: Settings, http: tuple[str, int]) -> int:
    """Serve streamable HTTP on `http` (host, port) until a signal stops the service."""
    # Imported here: a stdio server, what hosts spawn, never needs the HTTP stack.
    from graphmem.app import running  # noqa: PLC0415 (see host_port)
    from graphmem.http_service import (  # noqa: PLC0415
        TokenError,
        exposure_problem,
        load_tokens,
        metrics_token,
    )
    from graphmem.http_service.oauth import (  # noqa: PLC0415
        OAuthConfigError,
        OAuthStateError,
        plan_oauth,
    )
    from graphmem.http_transport import serve_http  # noqa: PLC0415

    # Checked before the store opens: an unsafe service must not start at all.
    try:
        tokens = load_tokens(settings.http)
        scraper = metrics_token(settings.http)
        oauth = plan_oauth(settings.http.oauth, *http, tokens)
    except (TokenError, OAuthConfigError) as error:
        raise CliError(str(error), code=2) from None
    # OAuth mode guards every path but its public OAuth ones, with or without static tokens.
    if oauth is None and (unsafe := exposure_problem(http[0], tokens)) is not None:
        raise CliError(unsafe, code=2)
    try:
        with (
            running(
                settings,
                serve_stale=True,
                schedule_decay=True,
                embed=True,
                replicate=True,
                graph_images=True,
            ) as app,
            _scheduled_backups(settings),
        ):
            serve_http(app, *http, tokens, scraper, oauth=oauth)
    except OAuthStateError as error:
        raise CliError(str(error), code=2) from None
    return 0


@contextmanager
def _scheduled_backups(settings: Settings) -> Iterator[None]:
    """GRAPHMEM_BACKUP_DIR's backups while serving; stopped before the log closes."""
    if settings.backup_dir is None:
        yield
        return
    scheduler = BackupScheduler(settings)
    scheduler.start()
    try:
        yield
    finally:
        scheduler.stop()
