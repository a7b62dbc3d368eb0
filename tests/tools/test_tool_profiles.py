"""Tool profiles (GRAPHMEM_TOOLS): which families a server exposes, and which family answers
where names clash. How `serve --tools` and a bad profile reach the process: tests/e2e's
test_tool_profile_options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import ClientSession

from graphmem.tools.catalog import MESH_TOOL_NAMES
from tests.tools.support import call, legacy_session, text

pytestmark = pytest.mark.anyio

NINE = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}
EXTENSIONS = {
    "update_entities",
    "update_observations",
    "update_relations",
    "merge_entities",
    "read_conflicts",
}
HISTORY = {"read_history"}


async def tool_names(s: ClientSession) -> list[str]:
    return [t.name for t in (await s.list_tools()).tools]


async def test_the_default_profile_serves_memory_and_schema_tools(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with legacy_session(tmp_path / "data", GRAPHMEM_SCHEMAS_DIR=str(seed_schemas)) as s:
        names = await tool_names(s)
        init = s.initialize_result
    # The official nine first, then their extensions, then the tools of each schema.
    assert set(names[:9]) == NINE and set(names[9:14]) == EXTENSIONS
    assert {"add_npc", "update_npc", "delete_npc", "add_person"} <= set(names)
    assert "add_nodes" not in names and "add_edges" not in names
    assert len(names) == len(set(names))
    assert init is not None and init.instructions is not None
    assert "add_<type>" in init.instructions and "create_entities" in init.instructions


async def test_the_mesh_profile_serves_only_the_static_mesh_tools(tmp_path: Path) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        names = await tool_names(s)
        created = await call(
            s, "add_nodes", {"nodes": [{"name": "A", "nodeType": "t", "metadata": ["K: v"]}]}
        )
        init = s.initialize_result
    assert sorted(names) == sorted(MESH_TOOL_NAMES)
    assert not created.is_error, text(created)
    assert init is not None and init.instructions is not None
    assert "add_nodes" in init.instructions and "create_entities" not in init.instructions


async def test_with_memory_and_mesh_the_mesh_shapes_answer_the_shared_names(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="memory,mesh") as s:
        names = await tool_names(s)
        await call(
            s,
            "create_entities",
            {"entities": [{"name": "Alice", "entityType": "person", "observations": ["x"]}]},
        )
        graph = await call(s, "read_graph", {})
    assert NINE | EXTENSIONS | HISTORY | set(MESH_TOOL_NAMES) == set(names)
    assert len(names) == len(set(names))
    answer = json.loads(text(graph))
    assert answer["data"] == {
        "nodes": [{"name": "Alice", "nodeType": "person", "metadata": ["x"]}],
        "edges": [],
    }
    assert answer["actionTaken"].startswith("Read complete knowledge graph")
