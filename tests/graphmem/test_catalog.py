"""Tool families and profiles: which static tools a profile serves, which family answers a
shared name, and the schema tools rebuilt only when the schemas in force change."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.commands import RegisterSchemas, SchemaDefinition
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.tools.catalog import MESH_TOOL_NAMES, STATIC_TOOL_NAMES, ToolCatalog, static_tools
from graphmem.tools.graph_tools import GRAPH_TOOLS
from graphmem.tools.history_tools import HISTORY_TOOLS
from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.memory_extensions import MEMORY_EXTENSION_TOOLS
from graphmem.tools.mesh import MESH_TOOLS
from projections.entity_schema import EntitySchema, canonical_json, parse_schema

MEMORY_NAMES = [spec.tool.name for spec in (*MEMORY_TOOLS, *MEMORY_EXTENSION_TOOLS, *HISTORY_TOOLS)]
GRAPH_NAMES = [spec.tool.name for spec in GRAPH_TOOLS]
# The schema family's own static tool, listed before the generated ones.
SCHEMA_STATIC = ["check_schemas"]


def document(type_name: str, description: str = "A thing") -> dict[str, Any]:
    return {
        "name": f"add_{type_name}",
        "description": description,
        "properties": {"kind": {"type": "string", "description": "What kind"}},
    }


def schema(type_name: str, description: str = "A thing") -> EntitySchema:
    return parse_schema(document(type_name, description))


def definition(type_name: str, description: str = "A thing") -> SchemaDefinition:
    text, digest = canonical_json(document(type_name, description))
    return SchemaDefinition(type_name, text, digest)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(), load_schemas=False)
    yield started
    stop_actors(started)


def test_the_memory_family_is_the_official_nine_then_their_extensions() -> None:
    assert list(static_tools(["memory"])) == MEMORY_NAMES


def test_the_mesh_family_is_seed_000s_eleven_static_tools() -> None:
    assert [spec.tool.name for spec in MESH_TOOLS] == list(MESH_TOOL_NAMES)
    specs = static_tools(["mesh"])
    assert list(specs) == list(MESH_TOOL_NAMES)
    assert all(spec in MESH_TOOLS and spec.error_style == "mesh" for spec in specs.values())


def test_where_memory_and_mesh_share_a_name_the_mesh_tool_answers() -> None:
    specs = static_tools(["memory", "mesh"])
    shared = set(MEMORY_NAMES) & set(MESH_TOOL_NAMES)
    assert shared == {"read_graph", "search_nodes", "open_nodes"}
    assert all(specs[name] in MESH_TOOLS for name in shared)
    assert specs["create_entities"] in MEMORY_TOOLS
    assert set(specs) == set(MEMORY_NAMES) | set(MESH_TOOL_NAMES)


def test_every_static_name_of_every_family_is_reserved() -> None:
    # graph_cypher's name is reserved whether or not its extra is installed.
    every = set(MEMORY_NAMES) | set(MESH_TOOL_NAMES) | set(SCHEMA_STATIC) | set(GRAPH_NAMES)
    assert every | {"graph_cypher"} == STATIC_TOOL_NAMES


def test_without_the_schema_family_schemas_add_no_tools() -> None:
    catalog = ToolCatalog(["memory"])
    catalog.update(1, [schema("npc")])
    assert catalog.get("add_npc") is None
    assert [t.name for t in catalog.tools()] == MEMORY_NAMES


def test_the_schema_family_adds_three_tools_per_schema_after_the_static_ones() -> None:
    catalog = ToolCatalog(["memory", "schema"])
    catalog.update(1, [schema("location"), schema("npc")])
    names = [t.name for t in catalog.tools()]
    assert names[: len(MEMORY_NAMES)] == MEMORY_NAMES
    assert names[len(MEMORY_NAMES) :] == [
        *SCHEMA_STATIC,
        "add_location",
        "update_location",
        "delete_location",
        "add_npc",
        "update_npc",
        "delete_npc",
    ]
    assert catalog.revision == 1


def test_the_tools_are_rebuilt_only_when_the_version_changes() -> None:
    catalog = ToolCatalog(["schema"])
    catalog.update(1, [schema("npc")])
    first = catalog.get("add_npc")

    catalog.update(1, [schema("npc", "Changed")])
    catalog.update(2, None)  # None: unchanged since the version known
    assert catalog.get("add_npc") is first

    catalog.update(3, [schema("npc", "Changed")])
    rebuilt = catalog.get("add_npc")
    assert rebuilt is not first and rebuilt is not None
    assert rebuilt.tool.description is not None and "Changed" in rebuilt.tool.description

    catalog.update(4, [])
    assert catalog.get("add_npc") is None
    assert [t.name for t in catalog.tools()] == SCHEMA_STATIC


def test_a_static_tool_keeps_its_name_against_a_schema_that_would_take_it() -> None:
    catalog = ToolCatalog(["memory", "schema"])
    catalog.update(1, [schema("observations")])
    spec = catalog.get("add_observations")
    assert spec is not None and spec in MEMORY_TOOLS + MEMORY_EXTENSION_TOOLS
    assert catalog.get("update_observations") is static_tools(["memory"])["update_observations"]
    delete = catalog.get("delete_observations")
    assert delete is not None and delete in MEMORY_TOOLS


def test_refresh_follows_the_schemas_in_force(app: App) -> None:
    catalog = ToolCatalog(["memory", "schema"])

    async def refreshed() -> list[str]:
        await catalog.refresh(app.graph)
        return [t.name for t in catalog.tools()][len(MEMORY_NAMES) + len(SCHEMA_STATIC) :]

    assert asyncio.run(refreshed()) == []
    app.graph.execute_blocking(RegisterSchemas([definition("npc")]))
    assert asyncio.run(refreshed()) == ["add_npc", "update_npc", "delete_npc"]
    spec = catalog.get("add_npc")
    assert asyncio.run(refreshed()) == ["add_npc", "update_npc", "delete_npc"]
    assert catalog.get("add_npc") is spec

    app.graph.execute_blocking(RegisterSchemas([], retired=["npc"]))
    assert asyncio.run(refreshed()) == []
