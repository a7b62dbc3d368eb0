"""The official memory server's own test suite (contract A5), replayed against graphmem with a
real MCP client (in memory). One server per test: a fresh graph each time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.tools.support import call, legacy_session, text, value

pytestmark = pytest.mark.anyio


def entity(name: str, entity_type: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(from_: str, to: str, relation_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "relationType": relation_type}


async def graph(session: ClientSession) -> dict[str, Any]:
    result: dict[str, Any] = value(await call(session, "read_graph", {}))
    return result


async def test_create_entities_returns_them_and_stores_them(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        created = value(
            await call(
                s,
                "create_entities",
                {
                    "entities": [
                        entity("Alice", "person", "works at Acme Corp"),
                        entity("Bob", "person", "likes programming"),
                    ]
                },
            )
        )
        assert created == [
            entity("Alice", "person", "works at Acme Corp"),
            entity("Bob", "person", "likes programming"),
        ]
        assert len((await graph(s))["entities"]) == 2


async def test_creating_an_existing_entity_again_returns_nothing(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("Alice", "person", "x")]})
        again = await call(s, "create_entities", {"entities": [entity("Alice", "person", "x")]})
        assert value(again) == []
        assert again.structured_content == {"entities": [], "skipped": ["Alice"]}
        assert len((await graph(s))["entities"]) == 1


async def test_an_empty_entity_list_creates_nothing(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        assert value(await call(s, "create_entities", {"entities": []})) == []


async def test_create_relations_and_dedup(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("Alice", "p"), entity("Bob", "p")]})
        knows = relation("Alice", "Bob", "knows")
        assert value(await call(s, "create_relations", {"relations": [knows]})) == [knows]
        assert value(await call(s, "create_relations", {"relations": [knows]})) == []
        assert value(await call(s, "create_relations", {"relations": []})) == []
        assert (await graph(s))["relations"] == [knows]


async def test_add_observations_adds_only_new_contents(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("Alice", "p", "likes coffee")]})
        two = value(
            await call(
                s,
                "add_observations",
                {"observations": [{"entityName": "Alice", "contents": ["a", "b"]}]},
            )
        )
        assert len(two[0]["addedObservations"]) == 2
        one = value(
            await call(
                s,
                "add_observations",
                {
                    "observations": [
                        {"entityName": "Alice", "contents": ["likes coffee", "has a dog"]}
                    ]
                },
            )
        )
        assert one == [{"entityName": "Alice", "addedObservations": ["has a dog"]}]
        assert len((await graph(s))["entities"][0]["observations"]) == 4


async def test_add_observations_to_an_unknown_entity_is_an_error(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        result = await call(
            s,
            "add_observations",
            {"observations": [{"entityName": "NonExistent", "contents": ["x"]}]},
        )
        assert result.is_error
        assert text(result) == "Entity with name NonExistent not found"


async def test_delete_entities_cascades_to_relations(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(
            s,
            "create_entities",
            {"entities": [entity("Alice", "p"), entity("Bob", "p"), entity("Charlie", "p")]},
        )
        await call(
            s,
            "create_relations",
            {"relations": [relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")]},
        )
        deleted = await call(s, "delete_entities", {"entityNames": ["Bob"]})
        assert text(deleted) == "Entities deleted successfully"
        g = await graph(s)
        assert [e["name"] for e in g["entities"]] == ["Alice", "Charlie"]
        assert g["relations"] == []


async def test_deleting_a_missing_entity_is_not_an_error(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        result = await call(s, "delete_entities", {"entityNames": ["Nobody"]})
        assert not result.is_error
        assert text(result) == "Deleted 0 of 1 entities. Not found: Nobody"


async def test_delete_observations_removes_only_the_listed_ones(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(
            s,
            "create_entities",
            {"entities": [entity("Alice", "p", "works at Acme Corp", "likes coffee")]},
        )
        result = await call(
            s,
            "delete_observations",
            {"deletions": [{"entityName": "Alice", "observations": ["likes coffee"]}]},
        )
        assert result.structured_content == {
            "success": True,
            "message": "Observations deleted successfully",
        }
        assert (await graph(s))["entities"][0]["observations"] == ["works at Acme Corp"]
        missing = await call(
            s,
            "delete_observations",
            {"deletions": [{"entityName": "Nobody", "observations": ["x"]}]},
        )
        assert not missing.is_error


async def test_delete_relations_keeps_other_types_between_the_same_entities(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("Alice", "p"), entity("Bob", "p")]})
        knows, works = relation("Alice", "Bob", "knows"), relation("Alice", "Bob", "works_with")
        await call(s, "create_relations", {"relations": [knows, works]})
        result = await call(s, "delete_relations", {"relations": [knows]})
        assert text(result) == "Relations deleted successfully"
        assert (await graph(s))["relations"] == [works]


async def test_read_graph_of_a_new_data_dir_is_empty_and_shows_self_relations(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        empty = await call(s, "read_graph", {})
        assert text(empty) == '{\n  "entities": [],\n  "relations": []\n}'
        await call(s, "create_entities", {"entities": [entity("Alice", "p")]})
        await call(s, "create_relations", {"relations": [relation("Alice", "Alice", "self")]})
        assert (await graph(s))["relations"] == [relation("Alice", "Alice", "self")]


async def _search_fixture(s: ClientSession) -> None:
    await call(
        s,
        "create_entities",
        {
            "entities": [
                entity("Alice", "person", "works at Acme Corp", "likes programming"),
                entity("Bob", "person", "works at TechCo"),
                entity("Acme Corp", "company", "tech company"),
            ]
        },
    )
    await call(
        s,
        "create_relations",
        {
            "relations": [
                relation("Alice", "Acme Corp", "works_at"),
                relation("Bob", "Acme Corp", "competitor"),
            ]
        },
    )


async def test_search_nodes_matches_names_types_and_observations(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await _search_fixture(s)

        async def names(query: str) -> list[str]:
            found = value(await call(s, "search_nodes", {"query": query}))
            return [e["name"] for e in found["entities"]]

        assert await names("Alice") == ["Alice"]
        assert await names("company") == ["Acme Corp"]
        assert await names("programming") == ["Alice"]
        assert await names("ALICE") == ["Alice"]
        assert await names("NonExistent") == []
        acme = value(await call(s, "search_nodes", {"query": "Acme"}))
        assert [e["name"] for e in acme["entities"]] == ["Alice", "Acme Corp"]
        assert len(acme["relations"]) == 2  # Bob -> Acme Corp too: either endpoint is enough
        alice = value(await call(s, "search_nodes", {"query": "Alice"}))
        assert alice["relations"] == [relation("Alice", "Acme Corp", "works_at")]
        nothing = value(await call(s, "search_nodes", {"query": "NonExistent"}))
        assert nothing == {"entities": [], "relations": []}


async def test_open_nodes_returns_entities_with_all_their_relations(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(
            s,
            "create_entities",
            {"entities": [entity("Alice", "p"), entity("Bob", "p"), entity("Charlie", "p")]},
        )
        ab, bc = relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")
        await call(s, "create_relations", {"relations": [ab, bc]})

        async def open_(*names: str) -> dict[str, Any]:
            result: dict[str, Any] = value(await call(s, "open_nodes", {"names": list(names)}))
            return result

        both = await open_("Alice", "Bob")
        assert [e["name"] for e in both["entities"]] == ["Alice", "Bob"]
        assert both["relations"] == [ab, bc]
        assert (await open_("Bob"))["relations"] == [ab, bc]
        assert (await open_("Alice"))["relations"] == [ab]
        assert (await open_("Charlie"))["relations"] == [bc]
        assert (await open_("NonExistent"))["entities"] == []
        assert await open_() == {"entities": [], "relations": []}


async def test_a_second_server_on_the_same_data_dir_sees_the_data(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", {"entities": [entity("Alice", "p", "kept")]})
    async with legacy_session(tmp_path) as s:
        assert (await graph(s))["entities"] == [entity("Alice", "p", "kept")]
