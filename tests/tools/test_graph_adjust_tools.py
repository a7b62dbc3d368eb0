"""graph_boost, graph_weaken, graph_delete and graph_audit end to end through a real MCP
client, both protocol eras (contract §8.3-8.4, 8.15, 8.17 and the §13 weight checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools.graph_write_support import (
    ERAS,
    GraphClient,
    create_slug_twins,
    graph_client,
    history,
    tool_error,
    tool_value,
    whole_graph,
)

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ERAS)]

EDGE = {"from_name": "Bob", "to_name": "project-x", "relation": "WORKS_ON"}


async def bob_works_on_x(client: GraphClient, weight: float = 0.5) -> None:
    await tool_value(
        client,
        "graph_relate",
        {
            "from_name": "Bob",
            "from_type": "Person",
            "to_name": "Project X",
            "to_type": "Project",
            "relation": "WORKS_ON",
            "weight": weight,
        },
    )


async def test_boost_adds_its_amount_and_repeated_boosts_stop_at_one(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        answer = await tool_value(client, "graph_boost", EDGE)
        assert answer == {
            "previous_weight": 0.5,
            "new_weight": 0.65,
            "edge": {"from": "bob", "to": "project-x", "type": "WORKS_ON"},
        }
        for _ in range(3):
            answer = await tool_value(client, "graph_boost", {**EDGE, "amount": 0.2})
        assert answer["new_weight"] == 1.0


async def test_weaken_subtracts_floors_at_zero_and_flags_pruning_like_prune(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        answer = await tool_value(client, "graph_weaken", {**EDGE, "amount": 0.2})
        assert (answer["previous_weight"], answer["new_weight"], answer["pruned"]) == (
            0.5,
            0.3,
            False,
        )
        at_threshold = await tool_value(client, "graph_weaken", {**EDGE, "amount": 0.25})
        assert (at_threshold["new_weight"], at_threshold["pruned"]) == (0.05, False)
        floor = await tool_value(client, "graph_weaken", EDGE)  # default amount 0.3
        assert (floor["new_weight"], floor["pruned"]) == (0.0, True)


async def test_a_missing_edge_or_entity_is_an_error_pointing_to_graph_relate(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        before = await whole_graph(client)
        missing = await tool_error(client, "graph_boost", {**EDGE, "relation": "LEADS"})
        assert "Edge not found: Bob -[LEADS]-> Project X; create it with graph_relate" in missing
        nobody = await tool_error(client, "graph_weaken", {**EDGE, "from_name": "Nobody"})
        assert "Nobody" in nobody and "graph_relate" in nobody
        assert await whole_graph(client) == before


async def test_boost_refuses_an_amount_out_of_range_and_unknown_arguments(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        out_of_range = await tool_error(client, "graph_boost", {**EDGE, "amount": 1.5})
        assert "between 0 and 1" in out_of_range
        unknown = await tool_error(client, "graph_weaken", {**EDGE, "ammount": 0.1})
        assert "unknown argument `ammount`" in unknown and "amount, reason" in unknown


async def test_the_reason_of_a_weaken_or_boost_shows_in_read_history_with_its_tool(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        await tool_value(client, "graph_weaken", {**EDGE, "reason": "user corrected it"})
        events = await history(client, "Bob")
        last_two = events[-2:]
        assert [e["event"] for e in last_two] == ["RelationUpdated", "AuditRecorded"]
        assert {e["cause"]["tool"] for e in last_two} == {"graph_weaken"}
        assert last_two[0]["transaction"] == last_two[1]["transaction"]
        assert last_two[1]["fields"]["detail"]["reason"] == "user corrected it"
        assert events[0]["cause"]["tool"] == "graph_relate"
        await tool_value(client, "graph_boost", {**EDGE, "reason": "confirmed in chat"})
        boosted = (await history(client, "Project X"))[-1]
        assert (boosted["cause"]["tool"], boosted["fields"]["action"]) == (
            "graph_boost",
            "graph_boost",
        )
        assert boosted["fields"]["detail"]["reason"] == "confirmed in chat"


async def test_delete_removes_an_entity_and_its_edges_by_id_or_its_synonym(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        answer = await tool_value(client, "graph_delete", {"id": "project-x", "reason": "gone"})
        assert answer == {
            "deleted": True,
            "entity": {"id": "project-x", "name": "Project X", "type": "Project"},
            "edges_removed": 1,
        }
        graph = await whole_graph(client)
        assert [e["name"] for e in graph["entities"]] == ["Bob"] and graph["relations"] == []
        again = await tool_value(client, "graph_delete", {"entity_id": "project-x"})
        assert again == {"deleted": False, "found": False, "entity_id": "project-x"}


async def test_delete_refuses_an_ambiguous_reference_listing_the_candidates(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await create_slug_twins(client)
        message = await tool_error(client, "graph_delete", {"entity_id": "data-lake"})
        assert "'Data Lake'" in message and "'data lake'" in message
        assert len((await whole_graph(client))["entities"]) == 2
        missing = await tool_error(client, "graph_delete", {"reason": "x"})
        assert "entity_id" in missing


async def test_audit_appends_one_line_whose_event_and_timestamp_the_server_owns(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await tool_value(
            client,
            "graph_audit",
            {
                "event": "entity_resolved",
                "data": {"timestamp": "1999", "event": "error", "entity": "Bob", "n": 1},
            },
        )
        assert answer["logged"] is True and answer["event"] == "entity_resolved"
        lines = (tmp_path / "graph-memory" / "logs" / "dream-audit.jsonl").read_text().splitlines()
        assert len(lines) == 1
        line = json.loads(lines[0])
        assert list(line) == ["entity", "n", "event", "timestamp"]
        assert (line["event"], line["timestamp"]) == ("entity_resolved", answer["timestamp"])
        # Recorded in graphmem's own log too (the data names an entity, so its history shows it).
        recorded = (await history(client, "Bob"))[-1]
        assert recorded["event"] == "AuditRecorded"
        assert recorded["fields"]["detail"]["event"] == "entity_resolved"
        await tool_value(client, "graph_audit", {"event": "run_end"})
        lines = (tmp_path / "graph-memory" / "logs" / "dream-audit.jsonl").read_text().splitlines()
        assert json.loads(lines[1])["event"] == "run_end"


async def test_audit_refuses_unknown_events_and_oversized_data(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        unknown = await tool_error(client, "graph_audit", {"event": "lunch"})
        assert "run_start" in unknown
        huge = await tool_error(
            client, "graph_audit", {"event": "error", "data": {"message": "x" * 70_000}}
        )
        assert "65,536" in huge
        assert not (tmp_path / "graph-memory" / "logs" / "dream-audit.jsonl").exists()


async def test_an_audit_line_that_cannot_be_written_is_an_error_and_records_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await bob_works_on_x(client)
        blocker = tmp_path / "graph-memory" / "logs"
        blocker.parent.mkdir(parents=True, exist_ok=True)
        blocker.write_text("a file where the logs folder should be")
        before = await history(client, "Bob")
        message = await tool_error(
            client, "graph_audit", {"event": "error", "data": {"entity": "Bob"}}
        )
        assert "cannot append" in message and "dream-audit.jsonl" in message
        assert await history(client, "Bob") == before
