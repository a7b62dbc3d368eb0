"""Both protocol eras' clients of a server that serves the memory and graph families."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client, ClientSession

from tests.tools.support import call, legacy_session, modern_client, text, value

__all__ = [
    "ERAS",
    "GraphClient",
    "create_slug_twins",
    "graph_client",
    "history",
    "latest_fields",
    "tool_call",
    "tool_error",
    "tool_value",
    "whole_graph",
]

ERAS = ("legacy", "modern")
GraphClient = ClientSession | Client


@asynccontextmanager
async def graph_client(era: str, data_dir: Path, **env: str) -> AsyncIterator[GraphClient]:
    """A client of `era` on a fresh server with the memory and graph families."""
    if era == "legacy":
        async with legacy_session(data_dir, tools="memory,graph", **env) as session:
            yield session
    else:
        async with modern_client(data_dir, tools="memory,graph", **env) as client:
            yield client


async def tool_call(
    client: GraphClient, tool: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    return await call(client, tool, arguments)


async def tool_value(client: GraphClient, tool: str, arguments: dict[str, Any]) -> Any:
    """The tool's JSON answer; a graph tool's structured content must be the same object."""
    result = await call(client, tool, arguments)
    answer = value(result)
    if tool.startswith("graph_"):
        assert result.structured_content == answer
    return answer


async def tool_error(client: GraphClient, tool: str, arguments: dict[str, Any]) -> str:
    """The text of a refused call (which must be an isError result)."""
    result = await call(client, tool, arguments)
    assert result.is_error, text(result)
    return text(result)


async def history(client: GraphClient, name: str) -> list[dict[str, Any]]:
    """read_history's events for `name`, oldest first."""
    events: list[dict[str, Any]] = (await tool_value(client, "read_history", {"name": name}))[
        "events"
    ]
    return events


async def latest_fields(client: GraphClient, name: str, event: str) -> dict[str, Any]:
    """The fields of the newest `event` (e.g. EntityUpdated) in `name`'s history."""
    found = [e for e in await history(client, name) if e["event"] == event]
    assert found, f"no {event} for {name}"
    fields: dict[str, Any] = found[-1]["fields"]
    return fields


async def whole_graph(client: GraphClient) -> Any:
    return await tool_value(client, "read_graph", {})


async def create_slug_twins(client: GraphClient) -> None:
    """`Data Lake` and `data lake`, made by the memory family: two live entities sharing one
    slug, so a reference to either by id is ambiguous."""
    await tool_value(
        client,
        "create_entities",
        {
            "entities": [
                {"name": "Data Lake", "entityType": "c", "observations": []},
                {"name": "data lake", "entityType": "c", "observations": []},
            ]
        },
    )
