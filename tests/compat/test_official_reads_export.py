"""The official memory server reads what `graphmem export` writes, and graphmem imports what the
official server writes: same graph, same bytes."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from actors.commands import (
    AddObservations,
    CreateEntities,
    CreateRelations,
    EntityInput,
    ObservationInput,
    RelationInput,
)
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from graphmem.migration import export_jsonl
from graphmem.tools.graph_values import whole_graph
from tests.compat.official import official_server_params

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TIMEOUT = 120

TRICKY = [
    'says "hi" and \\o/',
    "🎉 emoji, 東京, Zoë, e\u0301",
    "line\nbreak and\ttab",
    "separators \u2028 and \u2029",
    "",
]


@asynccontextmanager
async def session_on(params: StdioServerParameters) -> AsyncIterator[ClientSession]:
    with anyio.fail_after(TIMEOUT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult)
    assert not result.is_error, result.content
    return result.structured_content


def graphmem_params(data_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphmem", "serve"],
        env={
            "GRAPHMEM_DIR": str(data_dir),
            "GRAPHMEM_LOG_LEVEL": "WARNING",
            "PATH": os.environ.get("PATH", ""),
        },
    )


async def graphmem_cli(data_dir: Path, *args: str) -> tuple[int, bytes, bytes]:
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(
            [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
            check=False,
            env={**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING"},
        )
    return done.returncode, done.stdout, done.stderr


async def test_the_official_server_reads_our_export_and_saves_the_same_bytes(
    tmp_path: Path,
) -> None:
    app = start_actors(Settings(data_dir=tmp_path / "graph"), InMemoryEventLog(node_id="n1"))
    try:
        app.graph.execute_blocking(
            CreateEntities(
                entities=[
                    EntityInput("Zoë", "persön", TRICKY),
                    EntityInput("東京", "city", []),
                    EntityInput('a "quoted" name', "thing", ["x"]),
                ]
            )
        )
        app.graph.execute_blocking(
            CreateRelations(
                relations=[
                    RelationInput("Zoë", "東京", "visits"),
                    RelationInput('a "quoted" name', "Zoë", "belongs to"),
                ]
            )
        )
        app.graph.execute_blocking(
            AddObservations(observations=[ObservationInput("東京", ["capital 🗼"])])
        )
        exported = app.graph.query_blocking(export_jsonl)
        ours = app.graph.query_blocking(whole_graph)
    finally:
        stop_actors(app)
    memory = tmp_path / "memory.jsonl"
    memory.write_bytes(exported)

    async with session_on(official_server_params(memory)) as session:
        theirs = await call(session, "read_graph", {})
        # A no-op mutation makes the official server rewrite the whole file from what it read.
        await call(session, "create_entities", {"entities": []})

    assert theirs == ours
    assert memory.read_bytes() == exported


async def test_graphmem_imports_what_the_official_server_wrote(tmp_path: Path) -> None:
    memory = tmp_path / "official.jsonl"
    async with session_on(official_server_params(memory)) as session:
        await call(
            session,
            "create_entities",
            {
                "entities": [
                    {"name": "Alice", "entityType": "person", "observations": TRICKY},
                    {"name": "Bob", "entityType": "person", "observations": []},
                    {"name": "Acme", "entityType": "company", "observations": ["anvils"]},
                ]
            },
        )
        await call(
            session,
            "create_relations",
            {
                "relations": [
                    {"from": "Alice", "to": "Bob", "relationType": "knows"},
                    {"from": "Bob", "to": "Acme", "relationType": "works at"},
                ]
            },
        )
        await call(
            session,
            "add_observations",
            {"observations": [{"entityName": "Bob", "contents": ["likes 🍵", "likes 🍵"]}]},
        )
        theirs = await call(session, "read_graph", {})
    written = memory.read_bytes()
    data_dir = tmp_path / "graph"

    code, out, err = await graphmem_cli(data_dir, "import", str(memory))
    assert code == 0, err.decode()
    assert "problems:     0" in out.decode()

    async with session_on(graphmem_params(data_dir)) as session:
        ours = await call(session, "read_graph", {})
    assert ours == theirs

    code, exported, err = await graphmem_cli(data_dir, "export")
    assert code == 0, err.decode()
    assert exported == written
