"""A bare low-level MCP SDK server over stdio: one tool that answers an empty graph, doing nothing.

Run as a script (`python bench/bare_server.py stock|graphmem`), never imported by the other
benchmarks: it must import graphmem from wherever PYTHONPATH points (a `git archive` of a
revision) and nothing from `bench`. `stock` uses the SDK's own stdio transport; `graphmem` the
event-loop transport graphmem serves stdio with (`graphmem.wire.stdio_transport.fast_stdio_server`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

EMPTY_GRAPH: dict[str, Any] = {"entities": [], "relations": []}
EMPTY_TEXT = '{\n  "entities": [],\n  "relations": []\n}'


async def on_list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])


async def on_call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=EMPTY_TEXT)],
        structured_content=EMPTY_GRAPH,
    )


def main(transport_name: str) -> None:
    server: Server[Any] = Server("bare", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.middleware = []  # as graphmem does: no OpenTelemetry span per message
    transport: Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]] = stdio_server
    if transport_name == "graphmem":
        transport = importlib.import_module("graphmem.wire.stdio_transport").fast_stdio_server

    async def run() -> None:
        async with transport() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "stock")
