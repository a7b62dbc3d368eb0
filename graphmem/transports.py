"""Running the MCP server over stdio (one client) or streamable HTTP (a shared service)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator

import anyio
import structlog
import uvicorn
from uvicorn.server import HANDLED_SIGNALS

from graphmem.app import App
from graphmem.notifier import Notifier
from graphmem.server import MemoryServer, build_server
from graphmem.stdio_transport import fast_stdio_server

log = structlog.get_logger(__name__)

DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
HTTP_PATH = "/mcp"


@contextlib.contextmanager
def _serving(app: App) -> Iterator[tuple[Notifier, MemoryServer]]:
    """The MCP server for `app`, with its notifier subscribed to the writer while serving."""
    notifier = Notifier(announce_tool_changes="schema" in app.settings.tools)
    app.graph.subscribe(notifier.on_published)
    try:
        yield notifier, build_server(app, notifier)
    finally:
        app.graph.unsubscribe(notifier.on_published)


def serve_stdio(app: App) -> None:
    async def main(notifier: Notifier, server: MemoryServer) -> None:
        notifier.bind_loop(asyncio.get_running_loop())
        options = server.create_initialization_options()
        async with fast_stdio_server(app.settings.max_line_bytes) as (read, write):
            await server.run(read, write, options)

    with _serving(app) as (notifier, server):
        anyio.run(main, notifier, server)


class _UvicornServer(uvicorn.Server):
    """uvicorn, except that a stop signal only stops the HTTP service.

    uvicorn re-raises a caught SIGTERM once its own shutdown is done, and SIGTERM's default
    action ends the process on the spot: the actors would never stop nor the log close. Here
    the signal makes `serve_http` return, and the caller's shutdown runs as on any other exit.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # signals: main only
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def serve_http(app: App, host: str, port: int) -> None:
    with _serving(app) as (notifier, server):
        asgi = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        config = uvicorn.Config(asgi, host=host, port=port, log_config=None, lifespan="on")
        http = _UvicornServer(config)

        async def main() -> None:
            notifier.bind_loop(asyncio.get_running_loop())
            log.info("http_listening", url=f"http://{host}:{port}{HTTP_PATH}")
            await http.serve()

        asyncio.run(main())
