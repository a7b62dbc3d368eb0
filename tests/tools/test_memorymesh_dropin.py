"""A MemoryMesh user's drop-in (issue 18): their schema files (tests/fixtures/memorymesh, with
MemoryMesh's structure), the mesh and schema families, through a real MCP client of each
protocol era: stored keys, update answers, the tool list, errors and type checks as MemoryMesh
users expect them."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, ClientSession

from tests.tools.support import call, legacy_session, modern_client, text

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "memorymesh"
SCHEMAS = FIXTURES / "schemas"
ERAS = ("legacy", "modern")
MESH_PROFILE = "mesh,schema"
# What a MemoryMesh user sets: their own schema folder, and no general-purpose default set.
MEMORYMESH_ENV = {"GRAPHMEM_SCHEMAS_DIR": str(SCHEMAS), "GRAPHMEM_DEFAULT_SCHEMAS": "false"}
MeshClient = ClientSession | Client
TOOL_NAME = re.compile(r"\b(?:add|update|delete|search|open|read)_[A-Za-z0-9_]+")


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def mesh_client(era: str, data_dir: Path, **env: str) -> AsyncIterator[MeshClient]:
    """A client of `era` on a server set up as a MemoryMesh user would (env may override)."""
    settings = {**MEMORYMESH_ENV, **env}
    if era == "legacy":
        async with legacy_session(data_dir, tools=MESH_PROFILE, **settings) as session:
            yield session
    else:
        async with modern_client(data_dir, tools=MESH_PROFILE, **settings) as client:
            yield client


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """The `data` of MemoryMesh's success body."""
    assert not result.is_error, text(result)
    body: dict[str, Any] = json.loads(text(result))
    return dict(body["data"])


def refused(result: types.CallToolResult) -> dict[str, Any]:
    """MemoryMesh's error body: error, suggestions."""
    assert result.is_error, text(result)
    body: dict[str, Any] = json.loads(text(result))
    return body


async def metadata(client: MeshClient, name: str) -> list[str]:
    found = ok(await call(client, "open_nodes", {"names": [name]}))
    node = next(n for n in found["nodes"] if n["name"] == name)
    return list(node["metadata"])


async def rivendell_and_gandalf(client: MeshClient) -> None:
    for name, kind in (("Rivendell", "Valley"), ("Mordor", "Wasteland")):
        location = {"name": name, "type": kind, "description": "A place", "status": "Standing"}
        ok(await call(client, "add_location", {"location": location}))
    npc = {
        "name": "Gandalf",
        "role": "Wizard",
        "status": "Active",
        "currentLocation": "Rivendell",
        "description": "Grey",
        "motto": "Onward",
    }
    ok(await call(client, "add_npc", {"npc": npc}))


# --- 1. stored keys -------------------------------------------------------------------------


async def test_properties_are_stored_under_the_key_the_schema_spells_and_found_by_it(
    tmp_path: Path, era: str
) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        await rivendell_and_gandalf(client)
        quest = {
            "name": "Ring",
            "description": "Destroy it",
            "status": "Active",
            "objectives": ["Reach Mordor"],
            "rewards": ["Peace"],
            "relatedNPCs": ["Gandalf"],
        }
        ok(await call(client, "add_quest", {"quest": quest}))

        assert await metadata(client, "Gandalf") == [
            "role: Wizard",
            "status: Active",
            "currentLocation: Rivendell",
            "description: Grey",
            "motto: Onward",
        ]
        assert "relatedNPCs: Gandalf" in await metadata(client, "Ring")
        found = ok(await call(client, "search_nodes", {"query": "currentLocation"}))
        assert [n["name"] for n in found["nodes"]][:1] == ["Gandalf"]
        deleted = ok(
            await call(
                client, "delete_metadata", {"nodeName": "Gandalf", "metadata": ["motto: Onward"]}
            )
        )
        assert deleted["deletions"] == [
            {"nodeName": "Gandalf", "deletedMetadata": ["motto: Onward"]}
        ]


async def test_a_graph_stored_with_the_old_title_case_keys_still_reads_and_matches(
    tmp_path: Path, era: str
) -> None:
    data_dir = tmp_path / "data"
    # What an older graphmem's add_npc appended: the entries under Title Case display names.
    async with mesh_client(era, data_dir) as client:
        nodes = [
            {"name": "Rivendell", "nodeType": "location", "metadata": ["Type: Valley"]},
            {"name": "Mordor", "nodeType": "location", "metadata": ["Type: Wasteland"]},
            {
                "name": "Gandalf",
                "nodeType": "npc",
                "metadata": [
                    "Role: Wizard",
                    "Status: Active",
                    "Current Location: Rivendell",
                    "Description: Grey",
                    "Motto: Onward",
                ],
            },
        ]
        ok(await call(client, "add_nodes", {"nodes": nodes}))
        edge = {"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in"}
        ok(await call(client, "add_edges", {"edges": [edge]}))

    async with mesh_client(era, data_dir) as client:
        for query in ("currentLocation", "current_location", "Current Location: Rivendell"):
            found = ok(await call(client, "search_nodes", {"query": query}))
            assert "Gandalf" in [n["name"] for n in found["nodes"]], query
        deleted = ok(
            await call(
                client, "delete_metadata", {"nodeName": "Gandalf", "metadata": ["motto: Onward"]}
            )
        )
        assert deleted["deletions"][0]["deletedMetadata"] == ["Motto: Onward"]
        ok(
            await call(
                client, "update_npc", {"npc": {"name": "Gandalf", "currentLocation": "Mordor"}}
            )
        )
        assert await metadata(client, "Gandalf") == [
            "Role: Wizard",
            "Status: Active",
            "Description: Grey",
            "currentLocation: Mordor",
        ]
        checked = ok(await call(client, "check_schemas", {"entityType": "npc"}))
        assert checked["nonconforming"] == 0, checked


# --- 2. update_<type> answers ---------------------------------------------------------------


async def test_update_answers_edge_changes_as_remove_and_add_with_each_edges_weight(
    tmp_path: Path, era: str
) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        await rivendell_and_gandalf(client)
        moved = {"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "newWeight": 0.4}
        ok(await call(client, "update_edges", {"edges": [moved]}))

        updated = ok(
            await call(
                client, "update_npc", {"npc": {"name": "Gandalf", "currentLocation": "Mordor"}}
            )
        )

    assert updated["edgeChanges"] == {
        "remove": [{"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "weight": 0.4}],
        "add": [{"from": "Gandalf", "to": "Mordor", "edgeType": "located_in", "weight": 1.0}],
    }


# --- 4. the default set can be turned off ---------------------------------------------------


async def test_turning_the_default_set_off_serves_only_the_users_types_even_on_an_old_data_dir(
    tmp_path: Path, era: str
) -> None:
    data_dir = tmp_path / "data"
    async with mesh_client(era, data_dir, GRAPHMEM_DEFAULT_SCHEMAS="true") as client:
        with_default = {t.name for t in (await client.list_tools()).tools}
    assert {"add_person", "update_project", "add_npc"} <= with_default

    async with mesh_client(era, data_dir) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        gone = await call(client, "add_person", {"person": {"name": "Ada"}})

    mesh_tools = 11 + 1  # MemoryMesh's static tools, and check_schemas
    assert len(names) == mesh_tools + 3 * 11
    assert "add_person" not in names and {"add_npc", "update_temporal", "delete_quest"} <= names
    assert gone.is_error and text(gone).startswith("MCP error -32602: Tool add_person not found")


# --- 5. errors --------------------------------------------------------------------------------


async def test_errors_name_no_internal_steps_or_wire_prefixes(tmp_path: Path, era: str) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        npc = {
            "name": "Gandalf",
            "role": "Wizard",
            "status": "Active",
            "currentLocation": "Nowhere",
            "description": "Grey",
        }
        missing_target = refused(await call(client, "add_npc", {"npc": npc}))
        bad_weight = refused(
            await call(
                client,
                "add_edges",
                {"edges": [{"from": "a", "to": "b", "edgeType": "x", "weight": 2}]},
            )
        )
        bad_shape = refused(await call(client, "open_nodes", {"names": "Gandalf"}))
        no_such_npc = refused(
            await call(client, "update_npc", {"npc": {"name": "Nobody", "role": "Bard"}})
        )
        wrong_kind = refused(await call(client, "add_npc", {"npc": {**npc, "traits": 3}}))

    for body in (missing_target, bad_weight, bad_shape, no_such_npc, wrong_kind):
        message = body["error"]
        for internal in (
            "Step ",
            "AddEdges",
            "AddNodes",
            "SetNodeProperties",
            "CommitTransaction",
            "MCP error",
        ):
            assert internal not in message, message
        assert body["suggestions"]
    assert missing_target["error"].startswith("Node not found: Nowhere.")
    assert bad_shape["error"].startswith("Invalid arguments for open_nodes: ")


async def test_suggestions_name_only_tools_that_exist(tmp_path: Path, era: str) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        hobbit = {"name": "Bilbo", "nodeType": "hobbit", "metadata": []}
        ok(await call(client, "add_nodes", {"nodes": [hobbit]}))
        names = {t.name for t in (await client.list_tools()).tools}

        exists = refused(await call(client, "add_nodes", {"nodes": [hobbit]}))
        wrong_type = refused(
            await call(client, "update_npc", {"npc": {"name": "Bilbo", "role": "x"}})
        )
        unknown_key = refused(
            await call(client, "add_location", {"location": {"name": "Shire", "type": "x"}})
        )

    for body in (exists, wrong_type, unknown_key):
        assert body["suggestions"], body
        assert "update_hobbit" not in json.dumps(body) and "delete_hobbit" not in json.dumps(body)
        for suggestion in body["suggestions"]:
            for tool in TOOL_NAME.findall(suggestion):
                assert tool in names, (tool, body)
    assert any("update_nodes" in s for s in wrong_type["suggestions"])


async def test_a_static_tools_refusal_suggests_the_schema_tools_of_the_type_at_hand(
    tmp_path: Path, era: str
) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        # The first calls are static tools: nothing has listed the schema tools yet.
        gandalf = {"name": "Gandalf", "nodeType": "npc", "metadata": []}
        ok(await call(client, "add_nodes", {"nodes": [gandalf]}))
        exists = refused(await call(client, "add_nodes", {"nodes": [gandalf]}))

    assert exists["suggestions"][:2] == [
        'Update "Gandalf" with update_npc',
        'Update "Gandalf" with update_nodes',
    ]


async def test_an_unknown_tool_is_answered_with_the_closest_tool_names(
    tmp_path: Path, era: str
) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        misspelt = await call(client, "add_npcs", {})
        far = await call(client, "summon_dragon", {})

    assert misspelt.is_error
    assert text(misspelt).startswith(
        "MCP error -32602: Tool add_npcs not found. Did you mean: add_npc"
    )
    # Nothing close: the official server's words, unchanged.
    assert far.is_error and text(far) == "MCP error -32602: Tool summon_dragon not found"


# --- 6. one type rule for declared and undeclared keys -----------------------------------------


async def test_a_number_is_text_for_a_declared_string_property_as_for_an_undeclared_key(
    tmp_path: Path, era: str
) -> None:
    async with mesh_client(era, tmp_path / "data") as client:
        location = {
            "name": "Bree",
            "type": "Village",
            "description": 100,
            "status": True,
            "population": 100,
        }
        ok(await call(client, "add_location", {"location": location}))
        listed = refused(
            await call(
                client,
                "add_location",
                {"location": {**location, "name": "Bree 2", "description": ["a", "b"]}},
            )
        )
        stored = await metadata(client, "Bree")

    assert stored == [
        "type: Village",
        "description: 100",
        "status: true",
        "population: 100",
    ]
    assert 'Property "description" of location must be a string' in listed["error"]
