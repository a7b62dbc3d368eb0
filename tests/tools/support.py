"""MCP clients of both protocol eras talking to graphmem's server in memory, in this process.

The server is composed as `graphmem serve` composes it (graphmem.app.running with
serve_stale, then graphmem.transports.serving), on the settings the same environment would
give the process, and the SDK's in-process `Client` connects to it: `mode="legacy"` runs the
server's JSON-RPC loop over memory streams after an `initialize` handshake; the default mode
dispatches 2026-07-28 requests straight to the handlers. What only a process has (the stdio
wire and its fast path, HTTP, signals, exit codes) is tested in tests/e2e.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client, ClientSession

from graphmem.app import running
from graphmem.config import Settings
from graphmem.server import MemoryServer
from graphmem.transports import serving
from tests.e2e.support import call, text, value, write_schema

__all__ = [
    "call",
    "legacy_session",
    "modern_client",
    "served",
    "settings_for",
    "text",
    "value",
    "write_schema",
]

MessageHandler = Callable[[Any], Awaitable[None]]

# Bounds every request's wait for its answer, as a hung handler must fail the test, not hang it.
CALL_TIMEOUT = 60.0


def settings_for(data_dir: Path, *, tools: str | None = None, **env: str) -> Settings:
    """The settings `graphmem serve` would read from this environment (tests/e2e's
    server_params): `tools` sets GRAPHMEM_TOOLS, `env` any other setting.

    Unless `env` names GRAPHMEM_SCHEMAS_DIR, the user schema folder is an empty folder inside
    the data dir, so schema files in the developer's own config folder never leak into a test.
    """
    if "GRAPHMEM_SCHEMAS_DIR" not in env:
        user_schemas = data_dir / "user-schemas"
        user_schemas.mkdir(parents=True, exist_ok=True)
        env = {**env, "GRAPHMEM_SCHEMAS_DIR": str(user_schemas)}
    if tools is not None:
        env = {**env, "GRAPHMEM_TOOLS": tools}
    return Settings.from_env(
        {"GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_LOG_LEVEL": "WARNING", **env}
    )


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[MemoryServer]:
    """graphmem's MCP server on `settings`, its actors running until the block ends."""
    with running(settings, serve_stale=True, embed=True) as app, serving(app) as (notifier, server):
        notifier.bind_loop(asyncio.get_running_loop())
        yield server


@asynccontextmanager
async def legacy_session(
    data_dir: Path,
    message_handler: MessageHandler | None = None,
    tools: str | None = None,
    client_info: types.Implementation | None = None,
    **env: str,
) -> AsyncIterator[ClientSession]:
    """The handshake era (`initialize`), as MCP hosts speak it today."""
    async with (
        served(settings_for(data_dir, tools=tools, **env)) as server,
        Client(
            server,
            mode="legacy",
            message_handler=message_handler,
            client_info=client_info,
            read_timeout_seconds=CALL_TIMEOUT,
        ) as client,
    ):
        yield client.session


@asynccontextmanager
async def modern_client(
    data_dir: Path, tools: str | None = None, **env: str
) -> AsyncIterator[Client]:
    """The 2026-07-28 era (`server/discover`, `subscriptions/listen`)."""
    async with (
        served(settings_for(data_dir, tools=tools, **env)) as server,
        Client(server, read_timeout_seconds=CALL_TIMEOUT) as client,
    ):
        yield client
