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


def server_params(data_dir: Path, *, tools: str | None = None, **env: str) -> StdioServerParameters:
    """`graphmem serve` on `data_dir`; `tools` sets GRAPHMEM_TOOLS, `env` any other setting.

    Unless `env` names GRAPHMEM_SCHEMAS_DIR, the user schema folder is an empty folder inside
    the data dir, so schema files in the developer's own config folder never leak into a test;
    unless it names XDG_CACHE_HOME, so is the user's cache (answers kept for every store,
    graphmem.kept_answer), so no other test's or the developer's kept answers do either.
    """
    if "XDG_CACHE_HOME" not in env:
        env = {**env, "XDG_CACHE_HOME": str(data_dir / "user-cache")}
    if "GRAPHMEM_SCHEMAS_DIR" not in env:
        user_schemas = data_dir / "user-schemas"
        user_schemas.mkdir(parents=True, exist_ok=True)
        env = {**env, "GRAPHMEM_SCHEMAS_DIR": str(user_schemas)}
    if tools is not None:
        env = {**env, "GRAPHMEM_TOOLS": tools}
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
    tools: str | None = None,
    **env: str,
) -> AsyncIterator[ClientSession]:
    """The handshake era (`initialize`), as MCP hosts speak it today."""
    params = server_params(data_dir, tools=tools, **env)
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write, message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def modern_client(
    data_dir: Path, tools: str | None = None, **env: str
) -> AsyncIterator[Client]:
    """The 2026-07-28 era (`server/discover`, `subscriptions/listen`)."""
    async with Client(server_params(data_dir, tools=tools, **env)) as client:
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


def write_schema(folder: Path, stem: str, document: Any) -> Path:
    """Write a schema file whole (temp file, then rename), so a watcher never reads half."""
    path = folder / f"{stem}.schema.json"
    draft = folder / f".{stem}.schema.json.tmp"
    text = document if isinstance(document, str) else json.dumps(document, indent=2)
    draft.write_text(text, encoding="utf-8")
    draft.replace(path)
    return path
