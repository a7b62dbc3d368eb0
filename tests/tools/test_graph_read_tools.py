"""graph_query, graph_entities, graph_stats, graph_contradictions and graph_export end to end
through a real MCP client, both protocol eras (contract §8.1, 8.5, 8.6, 8.14, 8.18, §13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eventstore.events import DecayApplied
from eventstore.lmdb_log import LmdbEventLog
from projections.graph_time import DAY_MS, parse_time
from tests.tools.graph_write_support import (
    ERAS,
    GraphClient,
    graph_client,
    tool_error,
    tool_value,
)
from tests.tools.support import call, value

pytestmark = pytest.mark.anyio

READ_TOOLS = ("graph_query", "graph_entities", "graph_stats", "graph_contradictions")
FAR_FUTURE = "2999-01-01T00:00:00Z"


async def relate(
    client: GraphClient,
    from_name: str,
    to_name: str,
    relation: str,
    *,
    from_type: str = "Person",
    to_type: str = "Person",
    **fields: Any,
) -> dict[str, Any]:
    answer: dict[str, Any] = await tool_value(
        client,
        "graph_relate",
        {
            "from_name": from_name,
            "from_type": from_type,
            "to_name": to_name,
            "to_type": to_type,
            "relation": relation,
            **fields,
        },
    )
    return answer


async def memory_tool(client: GraphClient, tool: str, arguments: dict[str, Any]) -> Any:
    """A memory-family call (its text and structured content differ in shape)."""
    return value(await call(client, tool, arguments))


def names(answer: dict[str, Any]) -> list[str]:
    return [node["name"] for node in answer["nodes"]]


@pytest.mark.parametrize("era", ERAS)
async def test_the_read_tools_and_export_are_listed_with_the_contracts_annotations(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        for name in READ_TOOLS:
            hints = tools[name].annotations
            assert hints is not None
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                True,
                False,
                True,
            )
            assert hints.open_world_hint is False
            assert "as_of" in tools[name].input_schema["properties"]
        export = tools["graph_export"].annotations
        assert export is not None
        assert (export.read_only_hint, export.destructive_hint, export.idempotent_hint) == (
            False,
            False,
            False,
        )
        assert export.open_world_hint is False
        query = tools["graph_query"].input_schema["properties"]
        assert query["max_hops"]["maximum"] == 4
        assert all("description" in schema for schema in query.values())


@pytest.mark.parametrize("era", ERAS)
async def test_an_entity_made_by_create_entities_is_found_by_graph_query(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        entities = [
            {"name": "Ada", "entityType": "person", "observations": ["wrote notes"]},
            {"name": "Engine", "entityType": "object", "observations": []},
        ]
        await memory_tool(client, "create_entities", {"entities": entities})
        await memory_tool(
            client,
            "create_relations",
            {"relations": [{"from": "Ada", "to": "Engine", "relationType": "designed"}]},
        )

        answer = await tool_value(client, "graph_query", {"entities": ["ada"]})

        assert names(answer) == ["Ada", "Engine"]
        assert answer["nodes"][0]["observations"] == ["wrote notes"]
        assert answer["nodes"][0]["confidence"] == 0.5
        edge = answer["edges"][0]
        assert (edge["from"], edge["type"], edge["to"], edge["weight"]) == (
            "ada",
            "designed",
            "engine",
            1.0,
        )


@pytest.mark.parametrize("era", ERAS)
async def test_query_min_weight_and_entity_types_restrict_the_traversal(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(client, "Hub", "Strong", "related to", weight=0.7)
        await relate(client, "Hub", "Weak", "related to", weight=0.6)
        await relate(client, "Strong", "Gadget", "uses", to_type="Object", weight=0.9)

        everything = await tool_value(client, "graph_query", {"entities": ["Hub"]})
        heavy = await tool_value(client, "graph_query", {"entities": ["Hub"], "min_weight": 0.65})
        people = await tool_value(
            client, "graph_query", {"entities": ["Gadget"], "entity_types": ["Person"]}
        )

        assert names(everything) == ["Hub", "Strong", "Weak", "Gadget"]
        assert [(e["from"], e["to"]) for e in everything["edges"]] == [
            ("strong", "gadget"),
            ("hub", "strong"),
            ("hub", "weak"),
        ]
        assert names(heavy) == ["Hub", "Strong", "Gadget"]
        assert names(people) == ["Strong", "Hub"]


@pytest.mark.parametrize("era", ERAS)
async def test_limit_counts_distinct_nodes(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        for i in range(5):
            await relate(client, "Hub", f"Leaf {i}", "knows", weight=0.5 + i / 10)

        answer = await tool_value(
            client, "graph_query", {"entities": ["Hub"], "limit": 3, "context_level": "minimal"}
        )

        assert names(answer) == ["Hub", "Leaf 4", "Leaf 3"]
        assert answer["edge_count"] == 5


@pytest.mark.parametrize("era", ERAS)
async def test_project_context_weighs_the_second_hop_by_1_15(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        entities = [
            {"localId": name, "name": name, "type": "Person"} for name in ("Ann", "Ben", "Cy", "Di")
        ]
        entities.append(
            {
                "localId": "Repo",
                "name": "Repo",
                "type": "Project",
                "properties": {"directory": "/work/repo"},
            }
        )
        chain = [("Repo", "Ann"), ("Ann", "Ben"), ("Ben", "Cy"), ("Cy", "Di")]
        relations = [{"from": a, "to": b, "relation": "knows", "weight": 0.5} for a, b in chain]
        await tool_value(
            client, "graph_relate", {"batch": {"entities": entities, "relations": relations}}
        )

        answer = await tool_value(
            client,
            "graph_query",
            {"entities": ["Di"], "max_hops": 4, "project_context": "/work/repo/src"},
        )

        effective = {(e["from"], e["to"]): e["effective_weight"] for e in answer["edges"]}
        assert effective == {
            ("repo", "ann"): 0.65,
            ("ann", "ben"): 0.65,
            ("ben", "cy"): 0.575,
            ("cy", "di"): 0.5,
        }


@pytest.mark.parametrize("era", ERAS)
async def test_superseded_edges_are_hidden_by_default_and_valid_at_round_trips(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(client, "Alice", "Acme", "works at", to_type="Project", valid_at="2024-01-01")
        await relate(
            client, "Alice", "Initech", "works at", to_type="Project", valid_at="2025-06-01"
        )

        current = await tool_value(client, "graph_query", {"entities": ["Alice"]})
        everything = await tool_value(
            client, "graph_query", {"entities": ["Alice"], "current_only": False}
        )

        assert names(current) == ["Alice", "Initech"]
        assert current["edges"][0]["valid_at"] == "2025-06-01T00:00:00.000Z"
        assert sorted(names(everything)) == ["Acme", "Alice", "Initech"]
        old = next(e for e in everything["edges"] if e["to"] == "acme")
        assert old["valid_at"] == "2024-01-01T00:00:00.000Z"
        assert old["invalid_at"] == "2025-06-01T00:00:00.000Z"


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_starts_are_unresolved_and_none_gives_found_false(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(client, "Alice", "Bob", "knows")

        some = await tool_value(client, "graph_query", {"entities": ["Alice", "Zed"]})
        none = await tool_value(
            client, "graph_query", {"entities": ["Zed"], "context_level": "relations-only"}
        )

        assert some["unresolved"] == ["Zed"]
        assert names(some) == ["Alice", "Bob"]
        assert none == {"nodes": [], "edges": [], "unresolved": ["Zed"], "found": False}


@pytest.mark.parametrize("era", ERAS)
async def test_entities_search_type_and_total(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(client, "Bob", "Bobby Tables", "knows", weight=0.9)
        await relate(client, "Bob Smith", "Widget", "uses", to_type="Object", weight=0.4)

        found = await tool_value(client, "graph_entities", {"search": "bob"})
        people = await tool_value(client, "graph_entities", {"type": "person"})
        everything = await tool_value(client, "graph_entities", {"limit": 1})
        confident = await tool_value(
            client, "graph_entities", {"search": "bob", "min_confidence": 0.8}
        )

        assert [e["name"] for e in found["entities"]] == ["Bob", "Bob Smith", "Bobby Tables"]
        assert found["total"] == 3
        assert found["entities"][0]["edge_count"] == 1
        assert found["entities"][0]["id"] == "bob"
        assert people["total"] == len(people["entities"]) == 3
        assert everything["total"] == 4
        assert len(everything["entities"]) == 1
        assert confident["total"] == 2
        blank = await tool_value(client, "graph_entities", {"search": "  "})
        assert blank["total"] == 4
        unfiltered = await tool_value(
            client, "graph_query", {"entities": ["Bob"], "entity_types": []}
        )
        assert names(unfiltered) == ["Bob", "Bobby Tables"]


@pytest.mark.parametrize("era", ERAS)
async def test_contradictions_unresolved_by_default_newest_first(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        for a, b, description, date, resolved in (
            ("Sky Blue", "Sky Green", "sky colour", "2025-01-10", None),
            ("Tea Hot", "Tea Cold", "tea temperature", "2025-03-01", None),
            ("Cat Black", "Cat White", "cat colour", "2025-02-01", True),
        ):
            properties: dict[str, Any] = {"description": description, "detected_date": date}
            if resolved is not None:
                properties["resolved"] = resolved
            await relate(
                client, a, b, "contradicts", from_type="Fact", to_type="Fact", properties=properties
            )

        open_ones = await tool_value(client, "graph_contradictions", {})
        every = await tool_value(client, "graph_contradictions", {"include_resolved": True})

        assert open_ones["count"] == 2
        assert [c["description"] for c in open_ones["contradictions"]] == [
            "tea temperature",
            "sky colour",
        ]
        first = open_ones["contradictions"][0]
        assert first["node_a"] == {
            "id": "tea-hot",
            "type": "Fact",
            "name": "Tea Hot",
            "content": "Tea Hot",
        }
        assert first["detected_date"] == "2025-03-01T00:00:00.000Z"
        assert first["resolved"] is False
        assert [c["description"] for c in every["contradictions"]] == [
            "tea temperature",
            "cat colour",
            "sky colour",
        ]


@pytest.mark.parametrize("era", ERAS)
async def test_stats_count_by_type_and_read_the_graph_homes_files(tmp_path: Path, era: str) -> None:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "dream-audit.jsonl").write_text(
        '{"event": "run_start", "timestamp": "2026-02-01T10:00:00.000Z"}\n'
        '{"event": "run_end", "timestamp": "2026-02-01T10:05:00.000Z"}\n'
        '{"event": "run_start", "timestamp": "2026-02-02T08:00:00.000Z"}\n',
        encoding="utf-8",
    )
    for folder, files in (("pending", ["a.md", "b.md"]), ("completed", ["c.md"])):
        (home / "ingest" / folder).mkdir(parents=True)
        for name in files:
            (home / "ingest" / folder / name).write_text("doc", encoding="utf-8")
            (home / "ingest" / folder / f"{name}.meta.json").write_text("{}", encoding="utf-8")
    async with graph_client(era, tmp_path, GRAPHMEM_GRAPH_HOME=str(home)) as client:
        await relate(client, "Alice", "Bob", "knows", weight=0.5)
        await relate(client, "Alice", "X", "works on", to_type="Project", weight=0.7)
        await memory_tool(
            client,
            "create_entities",
            {"entities": [{"name": "Loner", "entityType": "Fact", "observations": []}]},
        )

        answer = await tool_value(client, "graph_stats", {})

        assert answer["schema_version"] == "1"
        assert answer["nodes"] == {"total": 4, "by_type": {"Fact": 1, "Person": 2, "Project": 1}}
        assert answer["edges"] == {"total": 2, "by_type": {"KNOWS": 1, "WORKS_ON": 1}}
        assert answer["health"] == {
            "avg_weight": 0.6,
            "orphaned_nodes": 1,
            "unresolved_contradictions": 0,
            "stale_nodes": 0,
            # The newest run_start follows the newest run_end: a run is under way.
            "last_dream_run": "2026-02-02T08:00:00.000Z",
            "pending_ingest_docs": 2,
            "total_ingested_docs": 1,
        }


@pytest.mark.parametrize("era", ERAS)
async def test_every_read_tool_answers_as_of_an_earlier_point_and_says_which(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(
            client,
            "Alice",
            "Bob",
            "contradicts",
            properties={"description": "first"},
        )
        then = await tool_value(client, "graph_stats", {"as_of": FAR_FUTURE})
        point = then["as_of"]
        await relate(client, "Alice", "Carol", "knows")
        await relate(client, "Carol", "Dan", "contradicts", properties={"description": "second"})

        query = await tool_value(
            client, "graph_query", {"entities": ["Alice"], "as_of": point["position"]}
        )
        entities = await tool_value(client, "graph_entities", {"as_of": point["time"]})
        stats = await tool_value(client, "graph_stats", {"as_of": point["position"]})
        contradictions = await tool_value(
            client, "graph_contradictions", {"as_of": point["position"]}
        )
        now = await tool_value(client, "graph_entities", {})

        assert names(query) == ["Alice", "Bob"]
        assert query["as_of"] == point
        assert entities["total"] == 2
        assert entities["as_of"]["position"] == point["position"]
        assert stats["nodes"]["total"] == 2
        assert stats["as_of"] == point
        assert [c["description"] for c in contradictions["contradictions"]] == ["first"]
        assert now["total"] == 4
        assert "as_of" not in now


@pytest.mark.parametrize("era", ERAS)
async def test_unicode_names_keep_their_ids(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await relate(client, "Zoë", "東京", "visited", to_type="Object")

        answer = await tool_value(client, "graph_query", {"entities": ["東京"]})
        found = await tool_value(client, "graph_entities", {"search": "zoe"})
        accented = await tool_value(client, "graph_entities", {"search": "ZOË"})

        assert [n["id"] for n in answer["nodes"]] == ["東京", "zoë"]
        assert found["total"] == 0  # no typo or accent folding
        assert [e["id"] for e in accented["entities"]] == ["zoë"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("graph_query", {"entities": ["A"], "max_hop": 2}, "unknown argument `max_hop`"),
        ("graph_query", {"entities": ["A"], "max_hops": 5}, "between 0 and 4"),
        ("graph_query", {"entities": []}, "give 1 to 100 names"),
        ("graph_query", {"entities": ["A"], "min_weight": 1.5}, "between 0 and 1"),
        ("graph_query", {"entities": ["A"], "limit": 0}, "between 1 and 200"),
        ("graph_query", {"entities": [" "]}, "entities[0] is empty"),
        ("graph_query", {"entities": ["A"], "context_level": "some"}, "context_level"),
        ("graph_query", {"entities": ["A"], "as_of": "last tuesday"}, "as_of 'last tuesday'"),
        ("graph_entities", {"limit": 201}, "between 1 and 200"),
        ("graph_entities", {"sort_by": "weight"}, "sort_by"),
        ("graph_entities", {"min_confidence": -0.1}, "between 0 and 1"),
        ("graph_entities", {"search": "a\u0007b"}, "control character U+0007"),
        ("graph_stats", {"verbose": True}, "graph_stats accepts: as_of"),
        ("graph_stats", {"as_of": -3}, "negative"),
        ("graph_contradictions", {"include_resolved": "yes"}, "include_resolved"),
        ("graph_export", {"keep": 31}, "between 1 and 30"),
        ("graph_export", {"label": "x" * 65}, "at most 64"),
    ],
)
async def test_bad_input_is_refused_saying_what_to_fix(
    tmp_path: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with graph_client("modern", tmp_path) as client:
        message = await tool_error(client, tool, arguments)

        assert expected in message


async def test_a_misspelt_argument_lists_the_accepted_ones(tmp_path: Path) -> None:
    async with graph_client("legacy", tmp_path) as client:
        message = await tool_error(client, "graph_query", {"entities": ["A"], "max_hop": 2})

        assert message.endswith(
            "graph_query accepts: entities, entity_types, max_hops, min_weight, limit, "
            "project_context, context_level, current_only, as_of"
        )


def backup_lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("era", ERAS)
async def test_export_writes_new_backups_and_keeps_the_newest(tmp_path: Path, era: str) -> None:
    home = tmp_path / "home"
    async with graph_client(era, tmp_path, GRAPHMEM_GRAPH_HOME=str(home)) as client:
        await relate(client, "Alice", "Bob", "knows", weight=0.8, evidence="met at work")

        first = await tool_value(client, "graph_export", {"label": "Pre Prune!"})
        second = await tool_value(client, "graph_export", {"label": "Pre Prune!"})
        await relate(client, "Bob", "Carol", "knows")
        third = await tool_value(client, "graph_export", {"keep": 2})

        assert first["backup_file"] != second["backup_file"]
        assert Path(first["backup_file"]).parent == (home / "backups").resolve()
        assert Path(first["backup_file"]).name.startswith("backup-")
        assert Path(first["backup_file"]).name.endswith("-Pre-Prune.jsonl")
        assert (first["node_count"], first["edge_count"]) == (2, 1)
        assert first["size_bytes"] == Path(second["backup_file"]).stat().st_size
        assert (third["pruned"], third["retained"]) == (1, 2)
        assert sorted(p.name for p in (home / "backups").iterdir()) == sorted(
            Path(a["backup_file"]).name for a in (second, third)
        )
        rows = backup_lines(third["backup_file"])
        # The latest write is in: the export reads the graph at the writer's position.
        assert (third["node_count"], third["edge_count"]) == (3, 2)
        assert [r["record"] for r in rows] == ["meta", "node", "node", "node", "edge", "edge"]
        assert rows[4]["from_id"] == "alice"
        assert rows[4]["evidence"] == "met at work"


@pytest.mark.parametrize("era", ERAS)
async def test_reads_show_values_decayed_by_a_run_appended_to_the_log(
    tmp_path: Path, era: str
) -> None:
    data = tmp_path / "data"
    async with graph_client(era, data) as client:
        await relate(client, "Ann", "Proj", "works on", to_type="Project", weight=0.8)
        before = await tool_value(client, "graph_query", {"entities": ["Ann"]})
    [ann, proj] = before["nodes"]
    seen = max(parse_time(ann["last_seen"]), parse_time(before["edges"][0]["last_confirmed"]))
    with LmdbEventLog.open(data) as event_log:  # a run graph_decay would write
        event_log.append(
            [
                DecayApplied(
                    at=seen + 50 * DAY_MS,
                    rate=0.996,
                    rates={"person": 0.998, "project": 0.995},
                    edge_rate=0.997,
                    floor=0.01,
                )
            ]
        )

    async with graph_client(era, data) as client:
        after = await tool_value(client, "graph_query", {"entities": ["Ann"]})
        listed = await tool_value(client, "graph_entities", {"min_confidence": 0.65})
        stats = await tool_value(client, "graph_stats", {})

    assert (ann["confidence"], proj["confidence"], before["edges"][0]["weight"]) == (0.8, 0.8, 0.8)
    assert [n["confidence"] for n in after["nodes"]] == [
        round(0.8 * 0.998**50, 6),
        round(0.8 * 0.995**50, 6),
    ]
    assert after["edges"][0]["weight"] == round(0.8 * 0.997**50, 6)  # ≈ 0.6884
    assert [e["name"] for e in listed["entities"]] == ["Ann"]
    assert stats["health"]["avg_weight"] == 0.69
