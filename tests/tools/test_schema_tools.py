"""The schema family (as MemoryMesh defines it): add_/update_/delete_<type> generated from
schema files, through a real MCP client (in memory), on the graph the memory tools use."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession

from tests.tools.support import call, legacy_session, text

pytestmark = pytest.mark.anyio

SHIPPED_TYPES = (
    "person",
    "project",
    "preference",
    "concept",
    "decision",
    "fact",
    "event",
    "object",
)


@asynccontextmanager
async def schema_session(tmp_path: Path, schemas: Path) -> AsyncIterator[ClientSession]:
    async with legacy_session(tmp_path / "data", GRAPHMEM_SCHEMAS_DIR=str(schemas)) as session:
        yield session


def body(result: types.CallToolResult) -> dict[str, Any]:
    """MemoryMesh's body of a success: data, actionTaken, timestamp (text and structured)."""
    assert not result.is_error, text(result)
    parsed: dict[str, Any] = json.loads(text(result))
    assert parsed == result.structured_content
    assert set(parsed) == {"data", "actionTaken", "timestamp"}
    return parsed


def failure(result: types.CallToolResult) -> dict[str, Any]:
    """The body of an error: what went wrong and what to try next."""
    assert result.is_error, text(result)
    parsed: dict[str, Any] = json.loads(text(result))
    assert parsed["suggestions"], parsed
    return parsed


async def nodes(s: ClientSession, *names: str) -> dict[str, Any]:
    """The memory family's open_nodes: entities (with observations) and relations."""
    result = await call(s, "open_nodes", {"names": list(names)})
    assert not result.is_error, text(result)
    graph: dict[str, Any] = json.loads(text(result))
    return graph


def gandalf(**more: Any) -> dict[str, Any]:
    return {"npc": {"name": "Gandalf", "role": "Wizard", "status": "Active", **more}}


async def places(s: ClientSession, *names: str) -> None:
    for name in names:
        body(await call(s, "add_location", {"location": {"name": name}}))


async def test_each_schema_file_gives_three_tools_next_to_the_shipped_ones(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    for type_name in ("npc", "location", *SHIPPED_TYPES):
        assert {f"add_{type_name}", f"update_{type_name}", f"delete_{type_name}"} <= set(tools)
    add_npc = tools["add_npc"].input_schema
    assert add_npc["required"] == ["npc"]
    inner = add_npc["properties"]["npc"]
    assert set(inner["required"]) == {"name", "role", "status"}
    assert inner["properties"]["role"]["enum"][:2] == ["Warrior", "Wizard"]
    assert tools["update_npc"].input_schema["properties"]["npc"]["required"] == ["name"]
    assert tools["delete_npc"].input_schema["properties"]["npc"]["required"] == ["name"]
    assert (tools["add_npc"].description or "").startswith("Add a non-player character")
    annotations = tools["delete_npc"].annotations
    assert annotations is not None and annotations.destructive_hint is True


async def test_add_npc_stores_properties_as_metadata_and_relationships_as_edges(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        plain = body(await call(s, "add_npc", gandalf()))
        assert plain["actionTaken"] == "Created npc: Gandalf"
        assert plain["data"] == {
            "nodes": [
                {
                    "name": "Gandalf",
                    "nodeType": "npc",
                    "metadata": ["role: Wizard", "status: Active"],
                }
            ],
            "edges": [],
        }

        await places(s, "Rivendell")
        linked = body(
            await call(
                s,
                "add_npc",
                {
                    "npc": {
                        "name": "Elrond",
                        "role": "Noble",
                        "status": "Active",
                        "currentLocation": "Rivendell",
                        "traits": ["wise", "patient"],
                    }
                },
            )
        )
        assert linked["data"]["nodes"][0]["metadata"] == [
            "role: Noble",
            "status: Active",
            "currentLocation: Rivendell",
            "traits: wise, patient",
        ]
        edge = {"from": "Elrond", "to": "Rivendell", "edgeType": "located_in", "weight": 1.0}
        assert linked["data"]["edges"] == [edge]
        graph = await nodes(s, "Elrond")
        assert graph["relations"] == [
            {"from": "Elrond", "to": "Rivendell", "relationType": "located_in"}
        ]


async def test_update_npc_moves_the_edge_and_replaces_only_the_changed_key(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        await places(s, "Rivendell", "Mordor")
        body(await call(s, "add_npc", gandalf(currentLocation="Rivendell", description="Grey")))

        updated = body(
            await call(s, "update_npc", {"npc": {"name": "Gandalf", "currentLocation": "Mordor"}})
        )
        assert updated["actionTaken"] == "Updated npc: Gandalf"
        data = updated["data"]
        assert data["edgeChanges"] == {
            "remove": [
                {"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "weight": 1.0}
            ],
            "add": [{"from": "Gandalf", "to": "Mordor", "edgeType": "located_in", "weight": 1.0}],
        }
        metadata = data["updatedNode"]["metadata"]
        assert sorted(metadata) == [
            "currentLocation: Mordor",
            "description: Grey",
            "role: Wizard",
            "status: Active",
        ]
        graph = await nodes(s, "Gandalf")
        assert sorted(graph["entities"][0]["observations"]) == sorted(metadata)
        assert graph["relations"] == [
            {"from": "Gandalf", "to": "Mordor", "relationType": "located_in"}
        ]


async def test_delete_npc_removes_the_node_and_every_edge_touching_it(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        await places(s, "Rivendell")
        body(await call(s, "add_npc", gandalf(currentLocation="Rivendell")))
        await call(
            s,
            "create_relations",
            {"relations": [{"from": "Rivendell", "to": "Gandalf", "relationType": "shelters"}]},
        )

        deleted = body(await call(s, "delete_npc", {"npc": {"name": "Gandalf"}}))
        assert deleted["actionTaken"] == "Deleted npc: Gandalf"
        assert deleted["data"]["deletedNode"] == "Gandalf"
        removed = {(e["from"], e["to"], e["edgeType"]) for e in deleted["data"]["removedEdges"]}
        assert removed == {
            ("Gandalf", "Rivendell", "located_in"),
            ("Rivendell", "Gandalf", "shelters"),
        }
        graph = await nodes(s, "Gandalf", "Rivendell")
        assert [e["name"] for e in graph["entities"]] == ["Rivendell"]
        assert graph["relations"] == []

        again = failure(await call(s, "delete_npc", {"npc": {"name": "Gandalf"}}))
        assert "Gandalf" in again["error"]


async def test_a_value_outside_the_enum_is_refused_with_the_allowed_values(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        refused = failure(await call(s, "add_npc", {"npc": {**gandalf()["npc"], "role": "Dragon"}}))
        assert "Dragon" in refused["error"]
        assert "Warrior" in refused["error"] and "Thief" in refused["error"]
        assert (await nodes(s, "Gandalf"))["entities"] == []


async def test_upstream_argument_shapes_are_accepted_too(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        await places(s, "Rivendell")
        body(await call(s, "add_npc", {"add_npc": gandalf()["npc"]}))
        body(
            await call(
                s, "update_npc", {"update_npc": {"name": "Gandalf", "currentLocation": "Rivendell"}}
            )
        )
        graph = await nodes(s, "Gandalf")
        assert graph["relations"] == [
            {"from": "Gandalf", "to": "Rivendell", "relationType": "located_in"}
        ]
        body(await call(s, "delete_npc", {"delete_npc": {"name": "Gandalf"}}))
        assert (await nodes(s, "Gandalf"))["entities"] == []


async def test_a_missing_relationship_target_leaves_no_node_behind(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        refused = failure(await call(s, "add_npc", gandalf(currentLocation="Mordor")))
        assert "Mordor" in refused["error"]
        assert (await nodes(s, "Gandalf", "Mordor"))["entities"] == []

        await places(s, "Rivendell")
        body(await call(s, "add_npc", gandalf(currentLocation="Rivendell")))
        moved = failure(
            await call(s, "update_npc", {"npc": {"name": "Gandalf", "currentLocation": "Mordor"}})
        )
        assert "Mordor" in moved["error"]
        graph = await nodes(s, "Gandalf")
        assert "currentLocation: Rivendell" in graph["entities"][0]["observations"]
        assert graph["relations"] == [
            {"from": "Gandalf", "to": "Rivendell", "relationType": "located_in"}
        ]


async def test_bad_input_is_a_tool_error_that_says_what_to_fix(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        missing_wrapper = failure(await call(s, "add_npc", gandalf()["npc"]))
        assert '"npc"' in missing_wrapper["error"]
        not_an_object = failure(await call(s, "add_npc", {"npc": "Gandalf"}))
        assert "object" in not_an_object["error"]
        wrong_type = failure(await call(s, "add_npc", {"npc": {**gandalf()["npc"], "role": 3}}))
        assert "role" in wrong_type["error"]
        missing = failure(await call(s, "add_npc", {"npc": {"name": "Gandalf", "role": "Wizard"}}))
        assert "status" in missing["error"]
        nameless = failure(
            await call(s, "add_npc", {"npc": {"role": "Wizard", "status": "Active"}})
        )
        assert "name" in nameless["error"]
        unknown = failure(
            await call(s, "add_location", {"location": {"name": "Rivendell", "weather": "mild"}})
        )
        assert "weather" in unknown["error"]
        too_long = failure(await call(s, "add_npc", gandalf(description="x" * 200_000)))
        assert "limit" in too_long["error"]
        assert (await nodes(s, "Gandalf", "Rivendell"))["entities"] == []

        unknown_tool = await call(s, "add_dragon", {"dragon": {"name": "Smaug"}})
        assert unknown_tool.is_error
        assert text(unknown_tool) == "MCP error -32602: Tool add_dragon not found"


async def test_schema_tools_and_memory_tools_share_one_graph(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with schema_session(tmp_path, seed_schemas) as s:
        await call(
            s,
            "create_entities",
            {"entities": [{"name": "Shire", "entityType": "location", "observations": []}]},
        )
        body(await call(s, "add_npc", gandalf(currentLocation="Shire")))
        await call(
            s,
            "add_observations",
            {"observations": [{"entityName": "Gandalf", "contents": ["Carries a staff"]}]},
        )

        graph = await nodes(s, "Gandalf")
        assert graph["entities"] == [
            {
                "name": "Gandalf",
                "entityType": "npc",
                "observations": [
                    "role: Wizard",
                    "status: Active",
                    "currentLocation: Shire",
                    "Carries a staff",
                ],
            }
        ]
        assert graph["relations"] == [
            {"from": "Gandalf", "to": "Shire", "relationType": "located_in"}
        ]
        updated = body(
            await call(s, "update_npc", {"npc": {"name": "Gandalf", "status": "Missing"}})
        )
        assert "Carries a staff" in updated["data"]["updatedNode"]["metadata"]
