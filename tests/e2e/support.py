"""Real MCP clients talking to a real graphmem process over stdio (both protocol eras)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MessageHandler = Callable[[Any], Awaitable[None]]

CALL_TIMEOUT = 60.0


def server_params(data_dir: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphmem", "serve"],
        env={
            "GRAPHMEM_DIR": str(data_dir),
            "GRAPHMEM_LOG_LEVEL": "WARNING",
            "PATH": os.environ.get("PATH", ""),
            **env,
        },
    )


@asynccontextmanager
async def legacy_session(
    data_dir: Path,
    message_handler: MessageHandler | None = None,
    errlog: Any = None,
    **env: str,
) -> AsyncIterator[ClientSession]:
    """The handshake era (`initialize`), as MCP hosts speak it today."""
    params = server_params(data_dir, **env)
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write, message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def modern_client(data_dir: Path, **env: str) -> AsyncIterator[Client]:
    """The 2026-07-28 era (`server/discover`, `subscriptions/listen`)."""
    async with Client(server_params(data_dir, **env)) as client:
        yield client


async def call(
    session: ClientSession | Client, tool: str, arguments: dict[str, Any] | None
) -> types.CallToolResult:
    result = await session.call_tool(tool, arguments)  # type: ignore[arg-type]
    assert isinstance(result, types.CallToolResult)
    return result


def text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


def value(result: types.CallToolResult) -> Any:
    assert not result.is_error, text(result)
    return json.loads(text(result))
