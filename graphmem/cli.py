"""The `graphmem` command line: serve over MCP, and the operator's tools around the log."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from graphmem.config import Settings, SettingsError
from graphmem.logs import configure_logging


def _host_port(value: str) -> tuple[str, int]:
    from graphmem.transports import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT

    if not value:
        return DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = value, str(DEFAULT_HTTP_PORT)
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (e.g. 127.0.0.1:8765)") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port {number} is outside 1-65535")
    return host.strip("[]") or DEFAULT_HTTP_HOST, number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphmem",
        description="graphmem: an event-sourced knowledge-graph memory for AI agents, served "
        "over MCP. The data dir is GRAPHMEM_DIR (default: the platform's user data dir).",
    )
    parser.add_argument(
        "--data-dir", help="the data dir to use (overrides GRAPHMEM_DIR)", default=None
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve the memory over MCP (stdio by default)",
        description="Serve the knowledge graph over MCP: on stdio for one client (what MCP "
        "hosts spawn), or with --http as one long-running streamable-HTTP service many "
        "clients share (path /mcp).",
    )
    serve.add_argument(
        "--http",
        nargs="?",
        const="",
        default=None,
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP instead of stdio (default 127.0.0.1:8765)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as problem:
        print(f"graphmem: {problem}", file=sys.stderr)
        return 2
    if args.data_dir:
        settings = settings.with_data_dir(args.data_dir)
    configure_logging(settings.log_level)
    command = args.command or "serve"
    if command == "serve":
        return _serve(settings, getattr(args, "http", None))
    parser.print_help(sys.stderr)
    return 2


def _serve(settings: Settings, http: tuple[str, int] | None) -> int:
    from graphmem.app import running
    from graphmem.transports import serve_http, serve_stdio

    with running(settings) as app:
        if http is None:
            serve_stdio(app)
        else:
            serve_http(app, *http)
    return 0
