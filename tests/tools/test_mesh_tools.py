"""The mesh family (MemoryMesh's static tools) through a real MCP client (in memory), one server
per test with the `mesh` profile: answers in MemoryMesh's {data, actionTaken, timestamp}
envelope and errors with suggestions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types

from graphmem.graph_resource import GRAPH_URI
from tests.tools.support import call, legacy_session, modern_client, text

pytestmark = pytest.mark.anyio

WAIT = 30.0
MESH_TOOLS = [
    "add_nodes",
    "update_nodes",
    "delete_nodes",
    "add_edges",
    "update_edges",
    "delete_edges",
    "add_metadata",
    "delete_metadata",
    "read_graph",
    "search_nodes",
    "open_nodes",
]
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def node(name: str, node_type: str = "person", *metadata: str) -> dict[str, Any]:
    return {"name": name, "nodeType": node_type, "metadata": list(metadata)}


def edge(from_: str, to: str, edge_type: str, weight: float = 1.0) -> dict[str, Any]:
    return {"from": from_, "to": to, "edgeType": edge_type, "weight": weight}


def key(from_: str, to: str, edge_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "edgeType": edge_type}


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """The success envelope, the same in the text and the structured content."""
    assert not result.is_error, text(result)
    body: dict[str, Any] = json.loads(text(result))
    assert result.structured_content == body
    assert set(body) == {"data", "actionTaken", "timestamp"}
    assert TIMESTAMP.match(body["timestamp"]), body["timestamp"]
    return body


def failed(result: types.CallToolResult, *fragments: str) -> dict[str, Any]:
    """The error body: the message names what went wrong and suggestions say what to try."""
    assert result.is_error, text(result)
    body: dict[str, Any] = json.loads(text(result))
    assert result.structured_content == body
    for fragment in fragments:
        assert fragment in body["error"], body["error"]
    assert body["suggestions"], body
    assert all(isinstance(s, str) and s for s in body["suggestions"])
    return body


async def graph(s: ClientSession) -> dict[str, Any]:
    data: dict[str, Any] = ok(await call(s, "read_graph", {}))["data"]
    return data


async def seed(s: ClientSession) -> None:
    """Ada -works_at-> Acme (0.8), Bob -knows-> Ada; Cy alone."""
    ok(
        await call(
            s,
            "add_nodes",
            {
                "nodes": [
                    node("Ada", "person", "Role: Engineer"),
                    node("Acme", "company", "Industry: Anvils"),
                    node("Bob", "person", "Role: Chess player"),
                    node("Cy", "person"),
                ]
            },
        )
    )
    ok(
        await call(
            s,
            "add_edges",
            {
                "edges": [
                    {"from": "Ada", "to": "Acme", "edgeType": "works_at", "weight": 0.8},
                    {"from": "Bob", "to": "Ada", "edgeType": "knows"},
                ]
            },
        )
    )


async def test_the_mesh_profile_lists_the_eleven_static_tools_with_titles_and_hints(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert list(tools) == MESH_TOOLS
        for tool in tools.values():
            assert tool.title and tool.description and tool.annotations
            assert tool.input_schema["type"] == "object"
        for name in ("read_graph", "search_nodes", "open_nodes"):
            assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
        for name in ("delete_nodes", "delete_edges", "delete_metadata"):
            assert tools[name].annotations.destructive_hint is True  # type: ignore[union-attr]
        assert tools["add_nodes"].annotations.read_only_hint is False  # type: ignore[union-attr]


async def test_add_nodes_and_read_graph_answer_with_data_action_and_timestamp(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        empty = ok(await call(s, "read_graph", {}))
        assert empty["data"] == {"nodes": [], "edges": []}
        assert empty["actionTaken"] == (
            "Read complete knowledge graph (graph is empty - no nodes or edges exist yet)"
        )
        added = ok(
            await call(
                s,
                "add_nodes",
                {"nodes": [node("Ada", "person", "Role: Engineer"), node("Acme", "company")]},
            )
        )
        assert added["data"] == {
            "nodes": [node("Ada", "person", "Role: Engineer"), node("Acme", "company")]
        }
        assert added["actionTaken"] == "Added 2 nodes: Ada, Acme"
        # A client may send no arguments at all to read_graph (upstream refuses that).
        read = ok(await call(s, "read_graph", None))
        assert read["data"] == {
            "nodes": [node("Ada", "person", "Role: Engineer"), node("Acme", "company")],
            "edges": [],
        }
        assert read["actionTaken"] == "Read complete knowledge graph (2 nodes, 0 edges)"


async def test_add_nodes_refuses_an_existing_name_and_writes_none_of_the_call(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        ok(await call(s, "add_nodes", {"nodes": [node("Ada")]}))
        result = await call(s, "add_nodes", {"nodes": [node("Bob"), node("Ada", "robot")]})
        failed(result, "Node already exists: Ada")
        assert await graph(s) == {"nodes": [node("Ada")], "edges": []}
        bad = await call(s, "add_nodes", {"nodes": [{"name": "Cy", "nodeType": "person"}]})
        body = failed(bad, "metadata")
        assert any("add_nodes" in suggestion for suggestion in body["suggestions"])


async def test_update_nodes_retypes_and_replaces_metadata_and_refuses_a_missing_node(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        updated = ok(
            await call(
                s,
                "update_nodes",
                {
                    "nodes": [
                        {"name": "Ada", "metadata": ["Role: Architect", "Level: Senior"]},
                        {"name": "Acme", "nodeType": "organisation"},
                    ]
                },
            )
        )
        assert updated["data"] == {
            "nodes": [
                node("Ada", "person", "Role: Architect", "Level: Senior"),
                node("Acme", "organisation", "Industry: Anvils"),
            ]
        }
        assert updated["actionTaken"] == "Updated 2 nodes: Ada, Acme"
        before = await graph(s)
        missing = await call(
            s,
            "update_nodes",
            {"nodes": [{"name": "Ada", "nodeType": "robot"}, {"name": "Zed", "metadata": []}]},
        )
        failed(missing, "Node not found: Zed")
        assert await graph(s) == before


async def test_delete_nodes_cascades_to_their_edges_and_reports_names_not_found(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        deleted = ok(await call(s, "delete_nodes", {"nodeNames": ["Ada", "Nobody"]}))
        assert deleted["data"] == {
            "deleted": ["Ada"],
            "notFound": ["Nobody"],
            "edgesRemoved": [key("Ada", "Acme", "works_at"), key("Bob", "Ada", "knows")],
        }
        assert deleted["actionTaken"] == (
            "Deleted 1 node: Ada and 2 connected edges. Not found: Nobody"
        )
        after = await graph(s)
        assert [n["name"] for n in after["nodes"]] == ["Acme", "Bob", "Cy"]
        assert after["edges"] == []


async def test_add_edges_defaults_the_weight_and_refuses_bad_weights_duplicates_and_dangling(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        ok(await call(s, "add_nodes", {"nodes": [node("Ada"), node("Bob"), node("Cy")]}))
        added = ok(await call(s, "add_edges", {"edges": [key("Ada", "Bob", "knows")]}))
        assert added["data"] == {"edges": [edge("Ada", "Bob", "knows", 1.0)]}
        assert added["actionTaken"] == "Added 1 edge: Ada -> Bob (knows)"
        before = await graph(s)
        assert before["edges"] == [edge("Ada", "Bob", "knows", 1.0)]

        too_heavy = {**key("Bob", "Cy", "knows"), "weight": 1.5}
        failed(await call(s, "add_edges", {"edges": [too_heavy]}), "between 0 and 1")
        twice = [key("Bob", "Cy", "knows"), key("Bob", "Cy", "knows")]
        failed(await call(s, "add_edges", {"edges": twice}), "Bob -> Cy (knows)")
        dangling = [key("Bob", "Cy", "knows"), key("Cy", "Zed", "knows")]
        failed(await call(s, "add_edges", {"edges": dangling}), "Node not found: Zed")
        existing = [key("Bob", "Cy", "knows"), key("Ada", "Bob", "knows")]
        failed(
            await call(s, "add_edges", {"edges": existing}),
            "Edge already exists: Ada -> Bob (knows)",
        )
        assert await graph(s) == before  # each refused call wrote nothing, not even Bob -> Cy


async def test_update_edges_averages_weight_evidence_replaces_new_weight_and_repoints(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        averaged = ok(
            await call(
                s, "update_edges", {"edges": [{**key("Ada", "Acme", "works_at"), "weight": 0.6}]}
            )
        )
        # (0.8 + 0.6) / 2.
        (after,) = averaged["data"]["edges"]
        assert after["weight"] == pytest.approx(0.7)
        assert averaged["actionTaken"] == "Updated 1 edge: Ada -> Acme (works_at)"
        replaced = ok(
            await call(
                s,
                "update_edges",
                {"edges": [{**key("Ada", "Acme", "works_at"), "newWeight": 0.3, "newTo": "Cy"}]},
            )
        )
        assert replaced["data"] == {"edges": [edge("Ada", "Cy", "works_at", 0.3)]}
        edges = (await graph(s))["edges"]
        assert edge("Ada", "Cy", "works_at", 0.3) in edges
        assert all(e["to"] != "Acme" for e in edges)

        before = await graph(s)
        failed(
            await call(
                s, "update_edges", {"edges": [{**key("Ada", "Cy", "works_at"), "weight": 2}]}
            ),
            "between 0 and 1",
        )
        failed(
            await call(
                s, "update_edges", {"edges": [{**key("Cy", "Ada", "knows"), "weight": 0.5}]}
            ),
            "Edge not found: Cy -> Ada (knows)",
        )
        assert await graph(s) == before


async def test_delete_edges_removes_exact_triples_and_reports_the_misses(tmp_path: Path) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        deleted = ok(
            await call(
                s,
                "delete_edges",
                {"edges": [key("Bob", "Ada", "knows"), key("Ada", "Bob", "knows")]},
            )
        )
        assert deleted["data"] == {
            "deleted": [key("Bob", "Ada", "knows")],
            "notFound": [key("Ada", "Bob", "knows")],
        }
        assert deleted["actionTaken"] == (
            "Deleted 1 edge: Bob -> Ada (knows). Not found: Ada -> Bob (knows)"
        )
        assert (await graph(s))["edges"] == [edge("Ada", "Acme", "works_at", 0.8)]


async def test_metadata_tools_take_the_seed_shape_and_upstream_shape(tmp_path: Path) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        seed_add = ok(
            await call(
                s,
                "add_metadata",
                {"nodeName": "Ada", "metadata": ["Status: Active", "Role: Engineer"]},
            )
        )
        # Ada has "Role: Engineer" already: only the new entry is added.
        assert seed_add["data"] == {
            "metadata": [{"nodeName": "Ada", "addedMetadata": ["Status: Active"]}]
        }
        assert seed_add["actionTaken"] == "Added 1 metadata entry to Ada"
        upstream_add = ok(
            await call(
                s,
                "add_metadata",
                {
                    "metadata": [
                        {"nodeName": "Bob", "contents": ["Status: Active"]},
                        {"nodeName": "Cy", "contents": ["Role: Spy", "Status: Missing"]},
                    ]
                },
            )
        )
        assert upstream_add["data"] == {
            "metadata": [
                {"nodeName": "Bob", "addedMetadata": ["Status: Active"]},
                {"nodeName": "Cy", "addedMetadata": ["Role: Spy", "Status: Missing"]},
            ]
        }
        assert upstream_add["actionTaken"] == "Added 3 metadata entries to Bob, Cy"

        seed_delete = ok(
            await call(s, "delete_metadata", {"nodeName": "Ada", "metadata": ["Status: Active"]})
        )
        assert seed_delete["data"] == {
            "deletions": [{"nodeName": "Ada", "deletedMetadata": ["Status: Active"]}]
        }
        upstream_delete = ok(
            await call(
                s,
                "delete_metadata",
                {"deletions": [{"nodeName": "Cy", "metadata": ["Role: Spy", "Not: There"]}]},
            )
        )
        assert upstream_delete["data"] == {
            "deletions": [{"nodeName": "Cy", "deletedMetadata": ["Role: Spy"]}]
        }
        assert upstream_delete["actionTaken"] == "Deleted 1 metadata entry from Cy"
        nodes = {n["name"]: n["metadata"] for n in (await graph(s))["nodes"]}
        assert nodes["Ada"] == ["Role: Engineer"]
        assert nodes["Bob"] == ["Role: Chess player", "Status: Active"]
        assert nodes["Cy"] == ["Status: Missing"]

        before = await graph(s)
        failed(
            await call(s, "add_metadata", {"nodeName": "Zed", "metadata": ["a: b"]}),
            "Node not found: Zed",
        )
        failed(await call(s, "add_metadata", {"metadata": ["Status: Orphan"]}), "nodeName")
        assert await graph(s) == before


async def test_search_and_open_return_matches_with_their_neighbours_and_incident_edges(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        await seed(s)
        found = ok(await call(s, "search_nodes", {"query": "ANVIL"}))
        assert found["data"] == {
            "nodes": [
                node("Acme", "company", "Industry: Anvils"),
                node("Ada", "person", "Role: Engineer"),
            ],
            "edges": [edge("Ada", "Acme", "works_at", 0.8)],
        }
        assert found["actionTaken"] == 'Searched nodes with query: "ANVIL" - found 2 nodes'
        nothing = ok(await call(s, "search_nodes", {"query": "dragon"}))
        assert nothing["data"] == {"nodes": [], "edges": []}
        assert nothing["actionTaken"] == (
            'Searched nodes with query: "dragon" - no matching nodes found'
        )

        # Ada's neighbours are Acme and Bob; the edge Bob -> ... beyond them is not listed.
        opened = ok(await call(s, "open_nodes", {"names": ["Ada"]}))
        assert [n["name"] for n in opened["data"]["nodes"]] == ["Ada", "Acme", "Bob"]
        assert opened["data"]["edges"] == [
            edge("Ada", "Acme", "works_at", 0.8),
            edge("Bob", "Ada", "knows", 1.0),
        ]
        assert opened["actionTaken"] == "Retrieved nodes: Ada"
        partly = ok(await call(s, "open_nodes", {"names": ["Cy", "Zed"]}))
        assert partly["data"] == {"nodes": [node("Cy")], "edges": []}
        assert partly["actionTaken"] == "Retrieved 1 nodes. Not found: Zed"
        none = ok(await call(s, "open_nodes", {"names": ["Zed"]}))
        assert none["actionTaken"] == "None of the requested nodes were found: Zed"


async def test_memory_and_mesh_tools_work_on_one_graph(tmp_path: Path) -> None:
    async with legacy_session(tmp_path, tools="memory,mesh") as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert set(MESH_TOOLS) <= set(names) and "create_entities" in names
        created = await call(
            s,
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["likes tea"]}]},
        )
        assert not created.is_error, text(created)
        ok(await call(s, "add_metadata", {"nodeName": "Ada", "metadata": ["Role: Engineer"]}))
        ok(await call(s, "add_nodes", {"nodes": [node("Acme", "company")]}))
        related = await call(
            s,
            "create_relations",
            {"relations": [{"from": "Ada", "to": "Acme", "relationType": "works_at"}]},
        )
        assert not related.is_error, text(related)
        # With mesh in the profile, read_graph answers in the mesh shape.
        assert await graph(s) == {
            "nodes": [
                node("Ada", "person", "likes tea", "Role: Engineer"),
                node("Acme", "company"),
            ],
            "edges": [edge("Ada", "Acme", "works_at", 1.0)],
        }


async def test_mesh_mutations_notify_subscribers_and_reads_and_errors_do_not(
    tmp_path: Path,
) -> None:
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            updates.append(str(root.params.uri))
            arrived.set()

    async with legacy_session(tmp_path, message_handler=on_message, tools="mesh") as s:
        await s.subscribe_resource(GRAPH_URI)
        failed(await call(s, "add_edges", {"edges": [key("A", "B", "t")]}), "Node not found")
        await call(s, "read_graph", {})
        assert updates == []
        ok(await call(s, "add_nodes", {"nodes": [node("Ada")]}))
        with anyio.fail_after(WAIT):
            await arrived.wait()
        assert updates == [GRAPH_URI]


async def test_the_mesh_tools_answer_in_the_2026_era_too(tmp_path: Path) -> None:
    async with modern_client(tmp_path, tools="mesh") as client:
        ok(await call(client, "add_nodes", {"nodes": [node("Ada"), node("Bob")]}))
        ok(await call(client, "add_edges", {"edges": [key("Ada", "Bob", "knows")]}))
        opened = ok(await call(client, "open_nodes", {"names": ["Bob"]}))
        assert [n["name"] for n in opened["data"]["nodes"]] == ["Bob", "Ada"]
