"""Running the MCP server over stdio (one client); streamable HTTP is graphmem.http_transport.

The HTTP side (uvicorn, starlette, the guards, OAuth with PyJWT and cryptography) is a module
of its own: a stdio `graphmem serve`, what every host spawns, never loads it (issue 21 item 2:
tens of MB of RSS and a tenth of a second of start-up that only `--http` needs)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import anyio

from graphmem.app import App
from graphmem.early_handshake import Handshake
from graphmem.notifier import Notifier
from graphmem.server import MemoryServer, build_server
from graphmem.wire.stdio_transport import fast_stdio_server

DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
HTTP_PATH = "/mcp"


@contextlib.contextmanager
def serving(app: App, *, metrics: bool = True) -> Iterator[tuple[Notifier, MemoryServer]]:
    """The MCP server for `app`, with its notifier subscribed to the writer while serving;
    with `metrics`, the counters /metrics serves (the HTTP service: stdio has no /metrics).

    Every transport composes the server this way, and so do the in-memory tool tests
    (tests/tools), so what they test is what a client reaches."""
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

    with serving(app, metrics=False) as (notifier, server):
        anyio.run(main, notifier, server)
