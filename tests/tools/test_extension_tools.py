"""The extension tools and paging through a real MCP client (in memory), one server per test
(a fresh graph each time), errors included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.tools.support import call, legacy_session, text, value

pytestmark = pytest.mark.anyio


def entity(name: str, entity_type: str = "person", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(from_: str, to: str, relation_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "relationType": relation_type}


async def graph(session: ClientSession, **paging: Any) -> dict[str, Any]:
    result: dict[str, Any] = value(await call(session, "read_graph", paging))
    return result


async def seed(session: ClientSession) -> None:
    await call(
        session,
        "create_entities",
        {
            "entities": [
                entity("Alice", "person", "likes tea"),
                entity("Bob", "person", "plays chess"),
                entity("Acme", "company", "makes anvils"),
            ]
        },
    )
    await call(
        session,
        "create_relations",
        {"relations": [relation("Alice", "Acme", "works_at"), relation("Bob", "Alice", "knows")]},
    )


async def test_the_extension_tools_are_listed_after_the_nine_and_named_in_the_instructions(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        tools = (await s.list_tools()).tools
        names = [t.name for t in tools]
        extensions = [
            "update_entities",
            "update_observations",
            "update_relations",
            "merge_entities",
            "read_conflicts",
        ]
        # The default profile lists the schema tools after them.
        assert names[9:14] == extensions
        for tool in tools[9:14]:
            assert tool.title and tool.annotations and tool.output_schema
            assert tool.output_schema.get("additionalProperties") is False
        init = s.initialize_result
        assert init is not None and init.instructions is not None
        assert all(name in init.instructions for name in extensions)


async def test_update_entities_renames_and_moves_observations_and_relations(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        await seed(s)
        result = await call(
            s, "update_entities", {"entities": [{"name": "Alice", "newName": "Alicia"}]}
        )
        assert result.structured_content == {
            "results": [
                {
                    "name": "Alice",
                    "newName": "Alicia",
                    "entityType": "person",
                    "renamed": True,
                    "retyped": False,
                    "movedObservations": 1,
                    "movedRelations": [
                        relation("Alicia", "Acme", "works_at"),
                        relation("Bob", "Alicia", "knows"),
                    ],
                }
            ]
        }
        assert json.loads(text(result)) == result.structured_content["results"]
        opened = value(await call(s, "open_nodes", {"names": ["Alicia", "Alice"]}))
        assert opened["entities"] == [entity("Alicia", "person", "likes tea")]
        assert sorted(map(json.dumps, opened["relations"])) == sorted(
            map(
                json.dumps,
                [relation("Alicia", "Acme", "works_at"), relation("Bob", "Alicia", "knows")],
            )
        )
        retyped = value(
            await call(
                s, "update_entities", {"entities": [{"name": "Acme", "newEntityType": "firm"}]}
            )
        )
        assert retyped[0]["retyped"] is True and retyped[0]["renamed"] is False


async def test_update_entities_refuses_an_existing_name_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        await seed(s)
        before = await graph(s)
        result = await call(
            s,
            "update_entities",
            {
                "entities": [
                    {"name": "Acme", "newName": "Acme Inc"},
                    {"name": "Alice", "newName": "Bob"},
                ]
            },
        )
        assert result.is_error
        assert "already exists" in text(result) and "merge_entities" in text(result)
        missing = await call(
            s, "update_entities", {"entities": [{"name": "Nobody", "newName": "X"}]}
        )
        assert missing.is_error and text(missing) == "Entity with name Nobody not found"
        assert await graph(s) == before


async def test_update_observations_replaces_every_occurrence(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("A", "t", "old", "x", "old")]})
        result = await call(
            s,
            "update_observations",
            {"updates": [{"entityName": "A", "oldContent": "old", "newContent": "new"}]},
        )
        assert result.structured_content == {
            "results": [
                {
                    "entityName": "A",
                    "oldContent": "old",
                    "newContent": "new",
                    "removed": 2,
                    "added": True,
                }
            ]
        }
        assert (await graph(s))["entities"] == [entity("A", "t", "x", "new")]
        missing = await call(
            s,
            "update_observations",
            {"updates": [{"entityName": "A", "oldContent": "gone", "newContent": "y"}]},
        )
        assert missing.is_error and "has no observation 'gone'" in text(missing)
        assert (await graph(s))["entities"] == [entity("A", "t", "x", "new")]


async def test_update_relations_repoints_and_refuses_missing_endpoints(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await seed(s)
        result = await call(
            s,
            "update_relations",
            {
                "relations": [
                    {"from": "Bob", "to": "Alice", "relationType": "knows", "newTo": "Acme"},
                ]
            },
        )
        assert value(result) == [
            {
                "before": relation("Bob", "Alice", "knows"),
                "after": relation("Bob", "Acme", "knows"),
                "changed": True,
            }
        ]
        before = await graph(s)
        assert relation("Bob", "Acme", "knows") in before["relations"]
        missing = await call(
            s,
            "update_relations",
            {
                "relations": [
                    {"from": "Bob", "to": "Acme", "relationType": "knows", "newFrom": "Nobody"}
                ]
            },
        )
        assert missing.is_error and text(missing) == "Entity with name Nobody not found"
        unknown = await call(
            s,
            "update_relations",
            {"relations": [{"from": "Bob", "to": "Acme", "relationType": "x", "newTo": "Alice"}]},
        )
        assert unknown.is_error and "not found" in text(unknown)
        assert await graph(s) == before


async def test_merge_entities_combines_a_duplicate(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await seed(s)
        await call(s, "create_entities", {"entities": [entity("Alice B", "person", "runs")]})
        await call(
            s,
            "create_relations",
            {
                "relations": [
                    relation("Alice B", "Acme", "works_at"),
                    relation("Alice B", "Alice", "same_as"),
                    relation("Alice B", "Bob", "knows"),
                ]
            },
        )
        result = await call(s, "merge_entities", {"merges": [{"from": "Alice B", "into": "Alice"}]})
        assert value(result) == [
            {
                "from": "Alice B",
                "into": "Alice",
                "movedObservations": ["runs"],
                "movedRelations": [relation("Alice", "Bob", "knows")],
                "droppedRelations": [
                    relation("Alice B", "Acme", "works_at"),
                    relation("Alice B", "Alice", "same_as"),
                ],
            }
        ]
        after = await graph(s)
        assert [e["name"] for e in after["entities"]] == ["Alice", "Bob", "Acme"]
        assert after["entities"][0]["observations"] == ["likes tea", "runs"]
        assert relation("Alice", "Alice", "same_as") not in after["relations"]
        itself = await call(s, "merge_entities", {"merges": [{"from": "Bob", "into": "Bob"}]})
        assert itself.is_error and "into itself" in text(itself)
        missing = await call(s, "merge_entities", {"merges": [{"from": "Bob", "into": "Nobody"}]})
        assert missing.is_error and text(missing) == "Entity with name Nobody not found"
        assert await graph(s) == after


async def test_bad_arguments_are_refused_with_what_to_fix(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        result = await call(s, "merge_entities", {"merges": [{"from": "A"}]})
        assert result.is_error and "merge_entities" in text(result) and "into" in text(result)
        nothing = await call(s, "update_entities", {"entities": [{"name": "A"}]})
        assert nothing.is_error
        bad_page = await call(s, "read_graph", {"limit": 0})
        assert bad_page.is_error and "limit" in text(bad_page)


async def test_read_graph_and_search_nodes_page_in_name_order(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await seed(s)
        whole = await call(s, "read_graph", {})
        assert text(await call(s, "read_graph", {})) == text(whole)
        first = await graph(s, limit=2)
        assert [e["name"] for e in first["entities"]] == ["Acme", "Alice"]
        assert first["relations"] == [
            relation("Alice", "Acme", "works_at"),
            relation("Bob", "Alice", "knows"),
        ]
        rest = await graph(s, offset=2)
        assert [e["name"] for e in rest["entities"]] == ["Bob"]
        assert rest["relations"] == [relation("Bob", "Alice", "knows")]
        everything = (await graph(s, offset=0))["entities"]
        assert everything == sorted(value(whole)["entities"], key=lambda e: e["name"])

        firms = value(await call(s, "search_nodes", {"query": "e", "entityType": "company"}))
        assert firms == {
            "entities": [entity("Acme", "company", "makes anvils")],
            "relations": [relation("Alice", "Acme", "works_at")],
        }
        page = value(await call(s, "search_nodes", {"query": "", "limit": 1, "offset": 1}))
        assert [e["name"] for e in page["entities"]] == ["Alice"]
        assert page["relations"] == [
            relation("Alice", "Acme", "works_at"),
            relation("Bob", "Alice", "knows"),
        ]


async def test_read_conflicts_shows_writes_from_two_nodes(tmp_path: Path) -> None:
    # Replication comes later: two node ids writing into one data dir stand in for it.
    async with legacy_session(tmp_path, GRAPHMEM_NODE_ID="desktop") as s:
        await call(s, "create_entities", {"entities": [entity("A", "t"), entity("B", "t")]})
        assert value(await call(s, "read_conflicts", {})) == []
    async with legacy_session(tmp_path, GRAPHMEM_NODE_ID="laptop") as s:
        await call(s, "update_entities", {"entities": [{"name": "A", "newEntityType": "u"}]})
        result = await call(s, "read_conflicts", {"entityName": "A"})
        (conflict,) = value(result)
        assert result.structured_content == {"conflicts": [conflict]}
        assert conflict["element"] == "entity" and conflict["entityName"] == "A"
        writes = conflict["writes"]
        assert [(w["node"], w["event"]) for w in writes] == [
            ("desktop", "EntityCreated"),
            ("laptop", "EntityUpdated"),
        ]
        assert conflict["kept"] == writes[1]
        assert writes[0]["hlc"] < writes[1]["hlc"]
        assert writes[1]["time"].endswith("Z") and writes[1]["time"][:2] == "20"
        assert value(await call(s, "read_conflicts", {"entityName": "B"})) == []
        assert value(await call(s, "read_conflicts", {"limit": 1})) == [conflict]
