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

from graphmem import lean_imports
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
    lean_imports.sse_without_uvicorn()  # stdio runs no uvicorn
    with serving(app, metrics=False) as (notifier, server):
        anyio.run(main, notifier, server)


def _serve_stdio_lazily(app: App, handshake: Handshake | None) -> None:
    """Serve one client on stdio, starting the SDK's session only when a line needs it."""
    from graphmem.notifier import Notifier  # noqa: PLC0415 (SDK-free until an SDK session)
    from graphmem.tool_runner import ToolRunner  # noqa: PLC0415
    from graphmem.tools.tools_list import tools_list_result  # noqa: PLC0415

    notifier = Notifier(announce_tool_changes="schema" in app.settings.tools)
    runner = ToolRunner(app, notifier)
    identity = ServerIdentity(runner.name, runner.title, runner.version, runner.instructions)
    fast = FastCalls(runner.call_tool) if app.settings.fast_calls else None

    async def list_tools(version: str) -> bytes:
        return tools_list_result(await runner.definitions(), version)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        notifier.bind_loop(loop)
        front = Front(
            identity,
            handshake if handshake is not None else Handshake(b""),
            list_tools=list_tools,
            on_initialized=runner.start_family_index,
        )
        async with fast_stdio_server(
            app.settings.max_line_bytes, front.handshake, front=front, fast=fast
        ) as (read, write):
            announce = _announce_tool_changes(lambda: loop.call_soon_threadsafe(read.tools_changed))
            with _subscribed(app, announce if notifier.announce_tool_changes else None):
                if not await read.sdk_needed():
                    return
            # Only now: the SDK's server, its pydantic models and its session (~30 MiB).
            lean_imports.sse_without_uvicorn()  # stdio runs no uvicorn
            from graphmem.server import server_over  # noqa: PLC0415

            server = server_over(runner)
            await server.run(read, write, server.create_initialization_options())

    app.graph.subscribe(notifier.on_published)
    try:
        anyio.run(main)
    finally:
        app.graph.unsubscribe(notifier.on_published)


def _announce_tool_changes(announce: Callable[[], object]) -> Callable[[Published], None]:
    """A writer subscriber that calls `announce` when the schemas in force change (the
    notifier's rule, for the session before the SDK's)."""
    from graphmem.notifier import tools_changed_by  # noqa: PLC0415 (SDK-free, as above)

    def on_published(published: Published) -> None:
        if tools_changed_by(published):
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
