"""Running the MCP server over stdio (one client); streamable HTTP is graphmem.http_transport.

The HTTP side (uvicorn, starlette, the guards, OAuth with PyJWT and cryptography) is a module
of its own: a stdio `graphmem serve`, what every host spawns, never loads it (issue 21 item 2:
tens of MB of RSS and a tenth of a second of start-up that only `--http` needs).

A stdio session starts without the SDK's session (graphmem.wire.front): the handshake era's
plain traffic is answered by graphmem's own front and fast path, and the SDK's server is built
and run over the same wire, handed the session so far, only when a line needs it.
`GRAPHMEM_LAZY_SDK=0` starts the SDK's session at once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import anyio

from graphmem.app import App
from graphmem.early_handshake import Handshake
from graphmem.wire.fast_calls import FastCalls
from graphmem.wire.front import Front
from graphmem.wire.initialize_answer import ServerIdentity
from graphmem.wire.stdio_transport import fast_stdio_server

if TYPE_CHECKING:
    from actors.subscribers import Published
    from graphmem.notifier import Notifier
    from graphmem.server import MemoryServer

DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
HTTP_PATH = "/mcp"


@contextlib.contextmanager
def serving(app: App, *, metrics: bool = True) -> Iterator[tuple[Notifier, MemoryServer]]:
    """The MCP server for `app`, with its notifier subscribed to the writer while serving;
    with `metrics`, the counters /metrics serves (the HTTP service: stdio has no /metrics).

    Every transport composes the server this way, and so do the in-memory tool tests
    (tests/tools), so what they test is what a client reaches."""
    from graphmem.notifier import Notifier  # noqa: PLC0415 (the SDK: see the module's doc)
    from graphmem.server import build_server  # noqa: PLC0415

    notifier = Notifier(announce_tool_changes="schema" in app.settings.tools)
    counters = None
    if metrics:
        # Here: a stdio server has no /metrics, and prometheus_client costs it memory and start-up.
        from graphmem.metrics import ServiceMetrics  # noqa: PLC0415

        counters = ServiceMetrics(app)
        app.graph.subscribe(counters.on_published)
    app.graph.subscribe(notifier.on_published)
    try:
        yield notifier, build_server(app, notifier, counters)
    finally:
        if counters is not None:
            app.graph.unsubscribe(counters.on_published)
        app.graph.unsubscribe(notifier.on_published)


def serve_stdio(app: App, handshake: Handshake | None = None) -> None:
    """Serve one client on stdio; `handshake`: what graphmem.early_handshake read (and
    perhaps answered) before the server was loaded."""

    async def main(notifier: Notifier, server: MemoryServer) -> None:
        notifier.bind_loop(asyncio.get_running_loop())
        options = server.create_initialization_options()
        async with fast_stdio_server(app.settings.max_line_bytes, handshake) as (read, write):
            await server.run(read, write, options)

    if app.settings.lazy_sdk:
        _serve_stdio_lazily(app, handshake)
        return
    with serving(app, metrics=False) as (notifier, server):
        anyio.run(main, notifier, server)


def _serve_stdio_lazily(app: App, handshake: Handshake | None) -> None:
    """Serve one client on stdio, starting the SDK's session only when a line needs it."""
    with serving(app, metrics=False) as (notifier, server):
        identity = ServerIdentity(
            name=server.name,
            title=server.title or "",
            version=server.version or "",
            instructions=server.instructions or "",
        )
        assert server.call_tool is not None
        fast = FastCalls(server.call_tool) if app.settings.fast_calls else None

        async def main() -> None:
            loop = asyncio.get_running_loop()
            notifier.bind_loop(loop)
            front = Front(
                identity,
                handshake if handshake is not None else Handshake(b""),
                lists_fixed="schema" not in app.settings.tools,
                on_initialized=_on_initialized(app),
            )
            async with fast_stdio_server(
                app.settings.max_line_bytes, front.handshake, front=front, fast=fast
            ) as (read, write):
                announce = _announce_tool_changes(
                    lambda: loop.call_soon_threadsafe(read.tools_changed)
                )
                with _subscribed(app, announce if notifier.announce_tool_changes else None):
                    if not await read.sdk_needed():
                        return
                options = server.create_initialization_options()
                await server.run(read, write, options)

        anyio.run(main)


def _on_initialized(app: App) -> Callable[[], None]:
    """What the server's own `notifications/initialized` handler does besides the SDK's:
    with the graph family, build its index in the background now (graphmem.server)."""
    if "graph" in app.settings.tools:
        return app.graph.start_family_index
    return lambda: None


def _announce_tool_changes(announce: Callable[[], object]) -> Callable[[Published], None]:
    """A writer subscriber that calls `announce` when the schemas in force change (the
    notifier's rule: graphmem.notifier.Notifier.on_published)."""
    from eventstore.events import SchemaRegistered, SchemaRetired  # noqa: PLC0415

    def on_published(published: Published) -> None:
        if any(isinstance(e.event, SchemaRegistered | SchemaRetired) for e in published.envelopes):
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                announce()

    return on_published


@contextlib.contextmanager
def _subscribed(app: App, subscriber: Callable[[Published], None] | None) -> Iterator[None]:
    if subscriber is None:
        yield
        return
    app.graph.subscribe(subscriber)
    try:
        yield
    finally:
        app.graph.unsubscribe(subscriber)
