"""graph_decay and graph_prune through a real MCP client, both protocol eras (contract §8.9,
§8.10, §13): the graph is aged by restarting with GRAPHMEM_CLOCK_OFFSET_DAYS."""

from __future__ import annotations

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
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("era", ERAS)
async def test_decay_and_prune_are_listed_destructive_idempotent_with_described_arguments(
    era: str, tmp_path: Path
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("graph_decay", "graph_prune"):
            hints = tools[name].annotations
            assert hints is not None
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                False,
                True,
                True,
            )
            assert hints.open_world_hint is False
            for argument, schema in tools[name].input_schema["properties"].items():
                assert "description" in schema, (name, argument)


async def seed(client: GraphClient) -> None:
    """Alice (Person 0.8) knows Bob (0.8); Launch (Event 0.5) whose only edge weighs 0.04."""
    await tool_value(
        client,
        "graph_relate",
        {
            "batch": {
                "entities": [
                    {"localId": "a", "name": "Alice", "type": "Person", "confidence": 0.8},
                    {"localId": "b", "name": "Bob", "type": "Person", "confidence": 0.9},
                    {"localId": "l", "name": "Launch", "type": "Event", "confidence": 0.5},
                ],
                "relations": [
                    {"from": "a", "to": "b", "relation": "KNOWS", "weight": 0.8},
                    {"from": "b", "to": "l", "relation": "ATTENDED", "weight": 0.04},
                ],
            }
        },
    )


async def node(client: GraphClient, name: str, **extra: Any) -> dict[str, Any] | None:
    answer = await tool_value(
        client, "graph_query", {"entities": [name], "max_hops": 1, "min_weight": 0, **extra}
    )
    found = [n for n in answer["nodes"] if n["name"] == name]
    return found[0] if found else None


async def edge_weight(client: GraphClient, source: str, relation: str) -> float:
    answer = await tool_value(
        client, "graph_query", {"entities": [source], "max_hops": 1, "min_weight": 0}
    )
    weights = [e["weight"] for e in answer["edges"] if e["type"] == relation]
    assert len(weights) == 1
    return float(weights[0])


@pytest.mark.parametrize("era", ERAS)
async def test_decay_after_a_restart_30_days_later_follows_the_contract(
    era: str, tmp_path: Path
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
    async with graph_client(era, tmp_path, GRAPHMEM_CLOCK_OFFSET_DAYS="30") as client:
        dry = await tool_value(client, "graph_decay", {"dry_run": True})
        alice = await node(client, "Alice")
        assert alice is not None and alice["confidence"] == 0.8  # a dry run changes nothing
        run = await tool_value(client, "graph_decay", {})
        assert {k: v for k, v in run.items() if k not in ("dry_run", "at")} == {
            k: v for k, v in dry.items() if k not in ("dry_run", "at")
        }
        assert (dry["dry_run"], run["dry_run"]) == (True, False)
        assert (run["nodes_decayed"], run["edges_decayed"]) == (3, 2)
        alice = await node(client, "Alice")
        assert alice is not None and alice["confidence"] == round(0.8 * 0.998**30, 6)
        assert await edge_weight(client, "Alice", "KNOWS") == round(0.8 * 0.997**30, 6)
        detail = next(d for d in run["details"] if d["name"] == "Alice")
        assert detail == {
            "id": "alice",
            "type": "Person",
            "name": "Alice",
            "old_confidence": 0.8,
            "new_confidence": round(0.8 * 0.998**30, 6),
        }
        assert run["edge_details"][0]["from"] == "alice"  # the largest drop: 0.8 at 0.997/day
        again = await tool_value(client, "graph_decay", {})  # the same day: nothing more
        assert (again["nodes_decayed"], again["edges_decayed"]) == (0, 0)
        history_events = [e["event"] for e in await history(client, "Alice")]
        assert "DecayApplied" not in history_events  # one event per run, never per element


@pytest.mark.parametrize("era", ERAS)
async def test_a_dry_run_at_a_future_time_previews_and_at_is_checked(
    era: str, tmp_path: Path
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        preview = await tool_value(client, "graph_decay", {"dry_run": True, "at": "2999-01-01"})
        assert preview["at"] == "2999-01-01T00:00:00.000Z"
        assert preview["nodes_flagged_for_pruning"] == 3
        assert preview["edges_below_threshold"] == 2
        assert "dry_run: true" in await tool_error(client, "graph_decay", {"at": "2999-01-01"})
        assert "before now" in await tool_error(
            client, "graph_decay", {"dry_run": True, "at": "2020-01-01"}
        )
        assert "not an ISO 8601 time" in await tool_error(
            client, "graph_decay", {"dry_run": True, "at": "soon"}
        )
        assert "graph_decay accepts: dry_run, at" in await tool_error(
            client, "graph_decay", {"dryrun": True}
        )
        alice = await node(client, "Alice")
        assert alice is not None and alice["confidence"] == 0.8


@pytest.mark.parametrize("era", ERAS)
async def test_prune_executes_its_preview_as_tombstones_that_history_and_as_of_still_show(
    era: str, tmp_path: Path
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
    async with graph_client(era, tmp_path, GRAPHMEM_CLOCK_OFFSET_DAYS="500") as client:
        run = await tool_value(client, "graph_decay", {})
        assert (run["nodes_flagged_for_pruning"], run["edges_below_threshold"]) == (1, 1)
        preview = await tool_value(client, "graph_prune", {})
        assert preview["mode"] == "preview"
        assert [(n["id"], n["reason"], n["edge_count"]) for n in preview["nodes_to_prune"]] == [
            ("launch", "low_confidence", 1)
        ]
        assert preview["edges_to_prune"] == [
            {
                "from": "bob",
                "to": "launch",
                "type": "ATTENDED",
                "weight": preview["edges_to_prune"][0]["weight"],
            }
        ]
        assert (preview["node_count"], preview["edge_count"]) == (1, 1)
        executed = await tool_value(client, "graph_prune", {"mode": "execute"})
        assert executed == {
            "mode": "executed",
            "nodes_pruned": 1,
            "edges_pruned": 1,
            "details": [
                {"action": "deleted_edge", "from": "bob", "to": "launch", "type": "ATTENDED"},
                {"action": "deleted_node", "id": "launch", "type": "Event"},
            ],
        }
        assert await node(client, "Launch") is None
        # Hidden, not lost: as it was before the prune, and in the history.
        before = await node(client, "Launch", as_of=run["at"])
        assert before is not None and before["type"] == "Event"
        events = await history(client, "Launch")
        assert events[-1]["event"] == "EntityDeleted"
        assert events[-1]["cause"]["tool"] == "graph_prune"
        again = await tool_value(client, "graph_prune", {"mode": "execute"})
        assert (again["nodes_pruned"], again["edges_pruned"], again["details"]) == (0, 0, [])
        # Re-creating brings it back.
        await tool_value(
            client,
            "graph_relate",
            {
                "from_name": "Bob",
                "from_type": "Person",
                "to_name": "Launch",
                "to_type": "Event",
                "relation": "ATTENDED",
                "weight": 0.6,
            },
        )
        back = await node(client, "Launch")
        assert back is not None and back["confidence"] == 0.6


@pytest.mark.parametrize("era", ERAS)
async def test_weaken_flags_pruned_exactly_when_prune_removes_the_edge(
    era: str, tmp_path: Path
) -> None:
    async with graph_client(era, tmp_path) as client:
        for target in ("Atlas", "Borealis"):
            await tool_value(
                client,
                "graph_relate",
                {
                    "from_name": "Bob",
                    "from_type": "Person",
                    "to_name": target,
                    "to_type": "Project",
                    "relation": "WORKS_ON",
                    "weight": 0.5,
                },
            )
        at_threshold = await tool_value(
            client,
            "graph_weaken",
            {"from_name": "Bob", "to_name": "Atlas", "relation": "WORKS_ON", "amount": 0.45},
        )
        below = await tool_value(
            client,
            "graph_weaken",
            {"from_name": "Bob", "to_name": "Borealis", "relation": "WORKS_ON", "amount": 0.450001},
        )
        assert (at_threshold["new_weight"], at_threshold["pruned"]) == (0.05, False)
        assert below["pruned"] is True
        preview = await tool_value(client, "graph_prune", {"include_orphans": False})
        assert [(e["to"], e["weight"]) for e in preview["edges_to_prune"]] == [
            ("borealis", below["new_weight"])
        ]


@pytest.mark.parametrize("era", ERAS)
async def test_prune_arguments_are_checked_and_nothing_is_written(era: str, tmp_path: Path) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        assert "between 0 and 1" in await tool_error(client, "graph_prune", {"node_threshold": 2})
        assert "max_age_days" in await tool_error(client, "graph_prune", {"max_age_days": -1})
        assert "graph_prune accepts" in await tool_error(client, "graph_prune", {"max_age": 3})
        await tool_error(client, "graph_prune", {"mode": "delete"})
        custom = await tool_value(
            client,
            "graph_prune",
            {"edge_threshold": 0.9, "node_threshold": 0.95, "include_orphans": False},
        )
        assert custom["edge_count"] == 2
        assert {n["id"] for n in custom["nodes_to_prune"]} == {"alice", "bob", "launch"}
        alice = await node(client, "Alice")
        assert alice is not None
