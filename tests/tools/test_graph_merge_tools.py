"""graph_merge and graph_unmerge end to end through a real MCP client, both protocol eras
(contract §8.11, §8.13, §9 and §13's Merge and Unmerge checks): the merge audit file, the
history (read_history shows the merge and the split), as_of before a merge, and the restart
with a clock offset that shows consolidation refreshing last_confirmed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import (
    ERAS,
    GraphClient,
    graph_client,
    history,
    tool_error,
    tool_value,
    whole_graph,
)
from tests.tools.test_graph_write_family import described

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ERAS)]

DAY_MS = 86_400_000


def audit_lines(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "graph-memory" / "logs" / "merge-audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def relate(
    client: GraphClient,
    from_name: str,
    to_name: str,
    relation: str,
    weight: float,
    *,
    from_type: str = "Person",
    to_type: str = "Person",
    **fields: Any,
) -> None:
    await tool_value(
        client,
        "graph_relate",
        {
            "from_name": from_name,
            "from_type": from_type,
            "to_name": to_name,
            "to_type": to_type,
            "relation": relation,
            "weight": weight,
            **fields,
        },
    )


async def duplicates(client: GraphClient) -> None:
    """Bob, a duplicate of Robert: a shared edge (0.4 vs 0.7), a unique one (0.6), an incoming
    one, the ALIAS_OF edge between them; a property only Bob has, one both have."""
    await relate(client, "Bob", "Acme", "WORKS_ON", 0.4, to_type="Project")
    await relate(client, "Robert", "Acme", "WORKS_ON", 0.7, to_type="Project")
    await relate(
        client,
        "Bob",
        "Vim",
        "USES",
        0.6,
        to_type="Object",
        evidence="said so",
        valid_at="2025-01-01",
    )
    await relate(client, "Carol", "Bob", "MENTORS", 0.5)
    await relate(client, "Bob", "Robert", "ALIAS_OF", 0.9)
    await tool_value(
        client,
        "graph_relate",
        {
            "batch": {
                "entities": [
                    {
                        "localId": "b",
                        "name": "Bob",
                        "type": "Person",
                        "properties": {"nickname": "Bobby", "role": "manager"},
                    },
                    {
                        "localId": "r",
                        "name": "Robert",
                        "type": "Person",
                        "properties": {"role": "engineer"},
                    },
                ]
            }
        },
    )


def edges_of(answer: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(e["from"], e["type"], e["to"]): e for e in answer["edges"]}


async def around(client: GraphClient, entity: str, **arguments: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await tool_value(
        client,
        "graph_query",
        {"entities": [entity], "max_hops": 1, "min_weight": 0, "current_only": False, **arguments},
    )
    return answer


MERGE = {"source_id": "bob", "target_id": "Robert", "reason": "the same person"}


async def test_a_dry_run_counts_exactly_the_self_loop_included_and_changes_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        before, bob = await whole_graph(client), await history(client, "Bob")
        answer = await tool_value(client, "graph_merge", {**MERGE, "dry_run": True})
        assert answer == {
            "source": {"id": "bob", "name": "Bob", "deleted": False},
            "target": {"id": "robert", "name": "Robert"},
            "edges_added": 2,
            "edges_consolidated": 1,
            "self_loops_dropped": 1,
            "properties_adopted": ["nickname"],
            "dry_run": True,
            "audit_logged": False,
        }
        assert await whole_graph(client) == before
        assert await history(client, "Bob") == bob
        assert audit_lines(tmp_path) == []
        # The dry run's counts are what the merge then does.
        done = await tool_value(client, "graph_merge", MERGE)
        counts = ("edges_added", "edges_consolidated", "self_loops_dropped", "properties_adopted")
        assert [done[k] for k in counts] == [answer[k] for k in counts]


async def test_a_merge_keeps_the_larger_shared_weight_moves_the_rest_and_deletes_the_source(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        answer = await tool_value(client, "graph_merge", MERGE)
        assert answer["source"] == {"id": "bob", "name": "Bob", "deleted": True}
        assert (answer["dry_run"], answer["audit_logged"]) == (False, True)

        robert = await around(client, "Robert")
        edges = edges_of(robert)
        assert set(edges) == {
            ("robert", "WORKS_ON", "acme"),
            ("robert", "USES", "vim"),
            ("carol", "MENTORS", "robert"),
        }  # the ALIAS_OF edge between the two is gone, not turned into a self-loop
        assert edges["robert", "WORKS_ON", "acme"]["weight"] == 0.7
        moved = edges["robert", "USES", "vim"]
        assert (moved["weight"], moved["evidence"], moved["valid_at"]) == (
            0.6,
            "said so",
            "2025-01-01T00:00:00.000Z",
        )
        node = next(n for n in robert["nodes"] if n["name"] == "Robert")
        assert node["properties"] == {"role": "engineer", "nickname": "Bobby"}
        assert node["aliases"] == ["Bob"]
        assert node["confidence"] == 0.9  # the larger of the two (Bob's ALIAS_OF mention)
        assert node["times_mentioned"] == 5 + 3  # Bob's mentions plus Robert's

        gone = await tool_value(client, "graph_query", {"entities": ["Bob"], "max_hops": 0})
        assert [n["name"] for n in gone["nodes"]] == ["Robert"]  # "Bob" is Robert's alias now
        assert "Bob" not in {e["name"] for e in (await whole_graph(client))["entities"]}


async def test_the_merge_is_recorded_in_the_audit_file_and_the_history_of_both(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        await tool_value(client, "graph_merge", MERGE)
        (line,) = audit_lines(tmp_path)
        assert line == {
            "action": "merge",
            "timestamp": line["timestamp"],
            "source": {"id": "bob", "name": "Bob"},
            "target": {"id": "robert", "name": "Robert"},
            "counts": {
                "edges_added": 2,
                "edges_consolidated": 1,
                "self_loops_dropped": 1,
                "properties_adopted": 1,
            },
            "reason": "the same person",
        }
        for name in ("Bob", "Robert"):
            events = await history(client, name)
            merged = [e for e in events if e["event"] == "EntitiesMerged"]
            assert len(merged) == 1 and merged[0]["cause"]["tool"] == "graph_merge"
            assert line["timestamp"] <= merged[0]["time"]  # decided, then stamped
            (audit,) = [e for e in events if e["event"] == "AuditRecorded"]
            assert audit["fields"]["detail"]["reason"] == "the same person"


async def test_as_of_before_the_merge_shows_both_entities(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        point = (await tool_value(client, "graph_stats", {"as_of": "2999-01-01"}))["as_of"]
        await tool_value(client, "graph_merge", MERGE)
        then = await tool_value(client, "graph_entities", {"as_of": point["position"]})
        now = await tool_value(client, "graph_entities", {})
        assert {"Bob", "Robert"} <= {n["name"] for n in then["entities"]}
        assert "Bob" not in {n["name"] for n in now["entities"]}
        assert then["total"] == now["total"] + 1


async def test_self_a_missing_source_and_a_missing_target_are_refused_writing_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        before = await whole_graph(client)
        itself = await tool_error(
            client, "graph_merge", {**MERGE, "source_id": "Robert", "target_id": "robert"}
        )
        assert "with itself" in itself
        source = await tool_error(client, "graph_merge", {**MERGE, "source_id": "Zed"})
        assert "source_id" in source and "'Zed'" in source
        target = await tool_error(client, "graph_merge", {**MERGE, "target_id": "Zed"})
        assert "target_id" in target and "'Zed'" in target
        both = await tool_error(
            client, "graph_merge", {**MERGE, "source_id": "X", "target_id": "Y"}
        )
        assert "'X'" in both and "'Y'" in both
        unknown = await tool_error(client, "graph_merge", {**MERGE, "dryrun": True})
        assert "dry_run" in unknown  # the accepted arguments are listed
        assert "reason" in await tool_error(client, "graph_merge", {**MERGE, "reason": " "})
        assert await whole_graph(client) == before
        assert audit_lines(tmp_path) == []


async def test_a_merge_audit_line_that_cannot_be_written_is_an_error_and_records_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        blocker = tmp_path / "graph-memory" / "logs"
        blocker.parent.mkdir(parents=True, exist_ok=True)
        blocker.write_text("a file where the logs folder should be")
        before, bob = await whole_graph(client), await history(client, "Bob")
        message = await tool_error(client, "graph_merge", MERGE)
        assert "cannot append" in message and "merge-audit.jsonl" in message
        assert await whole_graph(client) == before
        assert await history(client, "Bob") == bob
        split = await tool_error(
            client,
            "graph_unmerge",
            {
                "entity_id": "Bob",
                "new_entity_name": "Bobby",
                "new_entity_type": "Person",
                "edges_to_move": [],
                "reason": "x",
            },
        )
        assert "cannot append" in split
        assert await whole_graph(client) == before


async def test_consolidation_refreshes_last_confirmed_and_a_moved_edge_keeps_its_own(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        before = edges_of(await around(client, "Robert"))
        bob = edges_of(await around(client, "Bob"))
    async with graph_client(era, tmp_path, GRAPHMEM_CLOCK_OFFSET_DAYS="1") as client:
        answer = await tool_value(client, "graph_merge", MERGE)
        assert answer["edges_consolidated"] == 1
        after = edges_of(await around(client, "Robert"))
    shared = after["robert", "WORKS_ON", "acme"]
    old = before["robert", "WORKS_ON", "acme"]
    assert shared["last_confirmed"] > old["last_confirmed"]
    assert shared["ingested_at"] == min(
        old["ingested_at"], bob["bob", "WORKS_ON", "acme"]["ingested_at"]
    )
    moved, was = after["robert", "USES", "vim"], bob["bob", "USES", "vim"]
    for attribute in ("last_confirmed", "ingested_at", "valid_at", "evidence", "weight"):
        assert moved[attribute] == was[attribute], attribute


async def graph_with_ann(client: GraphClient) -> None:
    await relate(client, "Ann", "Acme", "WORKS_ON", 0.8, to_type="Project")
    await relate(client, "Ann", "Bob", "KNOWS", 0.6, source_session="s1", evidence="met")


async def test_unmerge_moves_the_listed_edge_and_the_original_keeps_the_rest(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await graph_with_ann(client)
        before = edges_of(await around(client, "Ann"))
        answer = await tool_value(
            client,
            "graph_unmerge",
            {
                "entity_id": "ann",
                "new_entity_name": "Anne",
                "new_entity_type": "person",
                "edges_to_move": [
                    {"other_entity_id": "bob", "relation_type": "knows", "direction": "out"}
                ],
                "reason": "two people",
                "properties": {"role": "designer"},
            },
        )
        assert answer == {
            "original": {"id": "ann", "name": "Ann", "remaining_edges": 1},
            "new_entity": {"id": "anne", "name": "Anne", "type": "Person", "moved_edges": 1},
            "audit_logged": True,
        }
        anne = await around(client, "Anne")
        moved = edges_of(anne)["anne", "KNOWS", "bob"]
        was = before["ann", "KNOWS", "bob"]
        for attribute in ("weight", "evidence", "source_session", "ingested_at", "last_confirmed"):
            assert moved[attribute] == was[attribute], attribute
        node = next(n for n in anne["nodes"] if n["name"] == "Anne")
        assert (node["type"], node["confidence"], node["times_mentioned"]) == ("Person", 0.5, 1)
        assert node["properties"] == {"role": "designer"}
        assert set(edges_of(await around(client, "Ann"))) == {("ann", "WORKS_ON", "acme")}
        (line,) = audit_lines(tmp_path)
        assert line == {
            "action": "unmerge",
            "timestamp": line["timestamp"],
            "original": {"id": "ann", "name": "Ann"},
            "new_entity": {"id": "anne", "name": "Anne", "type": "Person"},
            "moved": [{"from": "anne", "to": "bob", "type": "KNOWS"}],
            "reason": "two people",
        }
        split = [e for e in await history(client, "Ann") if e["event"] == "EntitySplit"]
        assert len(split) == 1 and split[0]["cause"]["tool"] == "graph_unmerge"
        assert [e["event"] for e in await history(client, "Anne")].count("EntitySplit") == 1


async def test_an_item_matching_no_edge_refuses_the_whole_call_naming_it(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await graph_with_ann(client)
        before = await whole_graph(client)
        message = await tool_error(
            client,
            "graph_unmerge",
            {
                "entity_id": "ann",
                "new_entity_name": "Anne",
                "new_entity_type": "Person",
                "edges_to_move": [
                    {"other_entity_id": "bob", "relation_type": "KNOWS", "direction": "out"},
                    {"other_entity_id": "acme", "relation_type": "WORKS_ON", "direction": "in"},
                    {"other_entity_id": "nobody", "relation_type": "KNOWS", "direction": "in"},
                ],
                "reason": "two people",
            },
        )
        assert "edges_to_move[1]" in message and "acme -[WORKS_ON]-> Ann".lower() in message.lower()
        assert "edges_to_move[2]" in message and "edges_to_move[0]" not in message
        taken = await tool_error(
            client,
            "graph_unmerge",
            {
                "entity_id": "ann",
                "new_entity_name": "bob",
                "new_entity_type": "Person",
                "edges_to_move": [],
                "reason": "x",
            },
        )
        assert "already names an entity ('Bob')" in taken
        bad = await tool_error(
            client,
            "graph_unmerge",
            {
                "entity_id": "ann",
                "new_entity_name": "Anne",
                "new_entity_type": "Person",
                "edges_to_move": [{"other_entity_id": "bob", "relation_type": "KNOWS"}],
                "reason": "x",
            },
        )
        assert "direction" in bad
        assert await whole_graph(client) == before
        assert audit_lines(tmp_path) == []


async def test_a_merge_then_an_unmerge_gives_the_source_back_under_its_own_name(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await duplicates(client)
        bob_before = edges_of(await around(client, "Bob"))
        await tool_value(client, "graph_merge", MERGE)
        answer = await tool_value(
            client,
            "graph_unmerge",
            {
                "entity_id": "Robert",
                "new_entity_name": "Bob",  # Robert's alias since the merge: taken back
                "new_entity_type": "Person",
                "edges_to_move": [
                    {"other_entity_id": "vim", "relation_type": "USES", "direction": "out"},
                    {"other_entity_id": "carol", "relation_type": "MENTORS", "direction": "in"},
                ],
                "reason": "not the same person after all",
            },
        )
        assert answer["new_entity"]["id"] == "bob"
        assert answer["original"]["remaining_edges"] == 1
        bob_after = edges_of(await around(client, "Bob"))
        for key in (("bob", "USES", "vim"), ("carol", "MENTORS", "bob")):
            assert bob_after[key] == bob_before[key]
        robert = await around(client, "Robert")
        assert next(n for n in robert["nodes"] if n["name"] == "Robert")["aliases"] == []
        events = [e["event"] for e in await history(client, "Bob")]
        assert events.index("EntitiesMerged") < events.index("EntitySplit")
        assert [line["action"] for line in audit_lines(tmp_path)] == ["merge", "unmerge"]


async def test_merge_and_unmerge_are_listed_destructive_and_not_idempotent(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("graph_merge", "graph_unmerge"):
            hints = tools[name].annotations
            assert hints is not None
            assert (
                hints.read_only_hint,
                hints.destructive_hint,
                hints.idempotent_hint,
                hints.open_world_hint,
            ) == (False, True, False, False)
            assert tools[name].output_schema is not None
            described(tools[name].input_schema, name)
