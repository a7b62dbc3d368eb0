"""graph_validate, graph_communities, graph_build_context and the one conflict view
(read_conflicts view "all", graph_contradictions include_conflicts) end to end through a real
MCP client, both protocol eras (contract §8.19-8.21, §9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import ERAS, GraphClient, graph_client, tool_error, tool_value
from tests.tools.support import call, legacy_session, value, write_schema

pytestmark = pytest.mark.anyio

INSIGHT_TOOLS = ("graph_validate", "graph_communities", "graph_build_context")


async def relate(
    client: GraphClient, from_name: str, to_name: str, relation: str, **fields: Any
) -> dict[str, Any]:
    answer: dict[str, Any] = await tool_value(
        client,
        "graph_relate",
        {
            "from_name": from_name,
            "from_type": fields.pop("from_type", "Person"),
            "to_name": to_name,
            "to_type": fields.pop("to_type", "Person"),
            "relation": relation,
            **fields,
        },
    )
    return answer


async def create(client: Any, *names: str, entity_type: str = "Fact") -> None:
    entities = [{"name": n, "entityType": entity_type, "observations": []} for n in names]
    value(await call(client, "create_entities", {"entities": entities}))


@pytest.mark.parametrize("era", ERAS)
async def test_the_insight_tools_are_listed_read_only_and_take_as_of(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in INSIGHT_TOOLS:
            hints = tools[name].annotations
            assert hints is not None
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                True,
                False,
                True,
            )
            assert hints.open_world_hint is False
            assert "as_of" in tools[name].input_schema["properties"]
        assert "include_conflicts" in tools["graph_contradictions"].input_schema["properties"]


@pytest.mark.parametrize("era", ERAS)
async def test_validate_ranks_issues_and_caps_once(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await create(client, "it", "The plan", "Data Lake", "data lake", "Go", "AI")
        await relate(client, "Go", "AI", "related to", weight=0.9)
        batch = {
            "entities": [{"localId": "l", "name": "Lonely", "type": "Fact", "confidence": 0.3}]
        }
        await tool_value(client, "graph_relate", {"batch": batch})

        answer = await tool_value(client, "graph_validate", {})

        assert [(i["severity"], i["type"], i["entity_name"]) for i in answer["issues"]] == [
            ("high", "generic_name", "it"),
            ("high", "reference_language", "The plan"),
            ("medium", "near_duplicate", "Data Lake"),
            ("low", "orphan", "Lonely"),  # the others are at confidence 0.5
        ]
        assert answer["issues"][2]["entity_id"] == "Data Lake"  # two share the slug
        assert answer["by_severity"] == {"high": 2, "medium": 1, "low": 1}
        assert answer["scope"] == "full graph" and answer["total_found"] == 4
        capped = await tool_value(client, "graph_validate", {"max_issues": 1})
        assert capped["issue_count"] == 1 and capped["total_found"] == 4
        scoped = await tool_value(client, "graph_validate", {"source_session": "nope"})
        assert scoped == {
            "issues": [],
            "issue_count": 0,
            "total_found": 0,
            "by_severity": {"high": 0, "medium": 0, "low": 0},
            "scope": "session:nope",
        }
        refused = await tool_error(client, "graph_validate", {"max_issues": 201})
        assert "max_issues" in refused and "200" in refused
        assert "accepts" in await tool_error(client, "graph_validate", {"max_issue": 3})


async def test_validate_reports_typed_entities_that_break_their_schema(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    write_schema(
        schemas,
        "gadget",
        {
            "name": "add_gadget",
            "description": "A gadget",
            "properties": {
                "name": {"type": "string", "description": "Its name", "required": True},
                "colour": {
                    "type": "string",
                    "description": "Its colour",
                    "required": True,
                    "enum": ["red", "blue"],
                },
            },
        },
    )
    async with legacy_session(
        tmp_path, tools="memory,schema,graph", GRAPHMEM_SCHEMAS_DIR=str(schemas)
    ) as client:
        entities = [
            {"name": "Widget Nine", "entityType": "gadget", "observations": ["Colour: green"]},
            {"name": "Widget Ten", "entityType": "gadget", "observations": ["Colour: red"]},
        ]
        value(await call(client, "create_entities", {"entities": entities}))
        answer = await tool_value(client, "graph_validate", {})
        violations = [i for i in answer["issues"] if i["type"] == "schema_violation"]
        assert [(i["severity"], i["entity_name"]) for i in violations] == [
            ("medium", "Widget Nine")
        ]
        assert "green" in violations[0]["description"]


@pytest.mark.parametrize("era", ERAS)
async def test_communities_cluster_strong_edges_and_clamp_hops(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        for other in ("a", "b", "c"):
            await relate(client, "Hub", other, "knows", weight=0.9)
        await relate(client, "Weak", "Hub", "knows", weight=0.4)
        answer = await tool_value(client, "graph_communities", {})
        assert answer["communities"] == [
            {
                "id": 1,
                "seed_id": "hub",
                "seed_name": "Hub",
                "member_count": 4,
                "dominant_type": "Person",
                "members": [
                    {"id": "hub", "name": "Hub", "type": "Person"},
                    {"id": "a", "name": "a", "type": "Person"},
                    {"id": "b", "name": "b", "type": "Person"},
                    {"id": "c", "name": "c", "type": "Person"},
                ],
            }
        ]
        assert answer["total_members"] == 4 and answer["coverage_pct"] == 80.0
        assert answer["coverage"] == {"total_entities": 5, "assigned": 4, "unassigned": 1}
        clamped = await tool_value(client, "graph_communities", {"max_hops": 9})
        assert clamped["warnings"] == ["max_hops 9 clamped to 4"]
        assert clamped["communities"] == answer["communities"]
        lower = await tool_value(client, "graph_communities", {"weight_threshold": 0.3})
        assert lower["communities"][0]["member_count"] == 5
        assert "min_size" in await tool_error(client, "graph_communities", {"min_size": 1})
        assert "max_hops" in await tool_error(client, "graph_communities", {"max_hops": 0})


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    lines = [
        {"event": "run_start", "timestamp": "2026-02-01T10:00:00.000Z", "source": "old"},
        {"event": "run_end", "timestamp": "2026-02-01T10:05:00.000Z"},
        {"event": "run_start", "timestamp": "2026-02-02T08:00:00.000Z", "source": "cron"},
        {"event": "edge_created", "timestamp": "2026-02-02T08:00:01.000Z"},
        {
            "event": "run_end",
            "timestamp": "2026-02-02T08:01:00.000Z",
            "duration_ms": 60000,
            "transcripts_processed": 2,
            "ingest_processed": 1,
            "entities_created": 5,
            "edges_created": 7,
            "errors": 0,
        },
        {"event": "run_end", "timestamp": "2026-02-02T09:00:00.000Z", "duration_ms": 1},
    ]
    (home / "logs" / "dream-audit.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    (home / "processed").mkdir()
    (home / "processed" / "manifest.json").write_text(
        json.dumps({"processed": {"done": {}}, "last_dream_run": "2026-01-01T00:00:00Z"}),
        encoding="utf-8",
    )
    (home / "ingest" / "pending").mkdir(parents=True)
    (home / "ingest" / "pending" / "a.md").write_text("doc", encoding="utf-8")
    transcripts = tmp_path / "transcripts"
    (transcripts / "proj").mkdir(parents=True)
    for name in ("done.jsonl", "new.jsonl", "agent-x.jsonl", "notes.txt"):
        (transcripts / "proj" / name).write_text("{}", encoding="utf-8")
    (transcripts / "top.jsonl").write_text("{}", encoding="utf-8")  # not one level down
    return home, transcripts


@pytest.mark.parametrize("era", ERAS)
async def test_build_context_gathers_health_work_recent_hubs_contradictions_and_topic(
    tmp_path: Path, era: str
) -> None:
    home, transcripts = _home(tmp_path)
    env = {"GRAPHMEM_GRAPH_HOME": str(home), "GRAPHMEM_TRANSCRIPTS_DIR": str(transcripts)}
    async with graph_client(era, tmp_path, **env) as client:
        for other in ("a", "b", "c"):
            await relate(client, "Hub", other, "knows", weight=0.9)
        await relate(
            client, "a", "b", "contradicts", properties={"description": "x", "resolved": False}
        )
        answer = await tool_value(
            client, "graph_build_context", {"topic": "hub", "max_recent": 2, "hub_count": 1}
        )

        assert answer["graph_health"] == {
            "nodes": 4,
            "edges": 4,
            "by_node_type": {"Person": 4},
            "avg_weight": 0.8,
            "orphaned": 0,
            "stale": 0,
            "unresolved_contradictions": 1,
        }
        work = answer["pending_work"]
        assert work["unprocessed_transcripts"] == 1 and work["pending_ingests"] == 1
        assert work["last_dream_run"] == "2026-02-02T09:00:00.000Z"
        assert isinstance(work["hours_since_last_dream"], float)
        assert answer["last_dream"] == {
            "started_at": "2026-02-02T08:00:00.000Z",
            "ended_at": "2026-02-02T08:01:00.000Z",  # the first run_end after the start
            "duration_ms": 60000,
            "source": "cron",
            "transcripts_processed": 2,
            "ingest_processed": 1,
            "entities_created": 5,
            "edges_created": 7,
            "errors": 0,
        }
        recent = answer["recent_additions"]
        assert recent["entity_count"] == 4 and len(recent["entities"]) == 2
        assert recent["edge_count"] == 4 and recent["days"] == 7
        assert [(h["name"], h["degree"]) for h in answer["top_hubs"]] == [("Hub", 3)]
        assert [c["description"] for c in answer["contradictions"]] == ["x"]
        topic = answer["topic_neighbourhood"]
        assert topic["topic"] == "hub" and topic["node_count"] == 4
        assert topic["nodes"][0]["name"] == "Hub" and "found" not in topic
        assert answer["generated_at"].endswith("Z")

        bare = await tool_value(
            client, "graph_build_context", {"include_contradictions": False, "topic": "zzz"}
        )
        assert bare["contradictions"] is None
        assert bare["topic_neighbourhood"] == {
            "topic": "zzz",
            "node_count": 0,
            "edge_count": 0,
            "nodes": [],
            "edges": [],
            "found": False,
        }
        assert (await tool_value(client, "graph_build_context", {}))["topic_neighbourhood"] is None
        assert "recent_days" in await tool_error(client, "graph_build_context", {"recent_days": 91})


@pytest.mark.parametrize("era", ERAS)
async def test_build_context_without_files_or_runs(tmp_path: Path, era: str) -> None:
    async with graph_client(
        era, tmp_path, GRAPHMEM_TRANSCRIPTS_DIR=str(tmp_path / "missing")
    ) as client:
        answer = await tool_value(client, "graph_build_context", {})
        assert answer["last_dream"] is None
        assert answer["pending_work"] == {
            "unprocessed_transcripts": 0,
            "pending_ingests": 0,
            "last_dream_run": None,
            "hours_since_last_dream": None,
        }
        assert answer["top_hubs"] == [] and answer["recent_additions"]["entity_count"] == 0


@pytest.mark.parametrize("era", ERAS)
async def test_every_insight_tool_answers_as_of_an_earlier_point(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await create(client, "it")
        point = (await tool_value(client, "graph_stats", {"as_of": "2999-01-01"}))["as_of"]
        await create(client, "thing")
        for tool in INSIGHT_TOOLS:
            then = await tool_value(client, tool, {"as_of": point["position"]})
            assert then["as_of"] == point, tool
        then = await tool_value(client, "graph_validate", {"as_of": point["position"]})
        assert [i["entity_name"] for i in then["issues"] if i["type"] == "generic_name"] == ["it"]
        now = await tool_value(client, "graph_build_context", {"as_of": point["position"]})
        assert now["graph_health"]["nodes"] == 1


# --- the one conflict view --------------------------------------------------------------------


async def _three_kinds(tmp_path: Path) -> None:
    """A replica conflict (two node ids writing one data dir), a superseded edge and a
    contradiction."""
    async with legacy_session(tmp_path, tools="memory,graph", GRAPHMEM_NODE_ID="desktop") as s:
        await create(s, "A", entity_type="t")
        await relate(s, "Ann", "Acme", "works at", to_type="Project", valid_at="2025-01-01")
        await relate(s, "Ann", "Initech", "works at", to_type="Project", valid_at="2026-01-01")
        await relate(s, "P", "Q", "contradicts", properties={"description": "disagree"})
    async with legacy_session(tmp_path, tools="memory,graph", GRAPHMEM_NODE_ID="laptop") as s:
        value(await call(s, "update_entities", {"entities": [{"name": "A", "newEntityType": "u"}]}))


async def test_read_conflicts_shows_the_three_kinds_side_by_side(tmp_path: Path) -> None:
    await _three_kinds(tmp_path)
    async with legacy_session(tmp_path, tools="memory,graph") as s:
        replicas = await call(s, "read_conflicts", {})
        (conflict,) = value(replicas)  # the default answer keeps its shape
        assert conflict["entityName"] == "A" and conflict["current"] == conflict["kept"]
        assert conflict["kept"]["node"] == "laptop" and "last-writer-wins" in conflict["why"]
        assert replicas.structured_content == {"conflicts": [conflict]}

        result = await call(s, "read_conflicts", {"view": "all"})
        everything = value(result)
        assert result.structured_content == everything
        assert everything["conflicts"] == [conflict]
        (superseded,) = everything["superseded"]
        assert superseded["edge"]["to"] == "acme" and superseded["edge"]["type"] == "WORKS_AT"
        assert superseded["superseded_by"]["to"] == "initech"
        assert superseded["current"]["to"] == "initech"
        assert superseded["superseded_by"]["valid_at"] == superseded["edge"]["invalid_at"]
        (contradiction,) = everything["contradictions"]
        assert contradiction["description"] == "disagree" and contradiction["current"] is None
        assert everything["counts"] == {"replica_writes": 1, "superseded": 1, "contradictions": 1}

        only_ann = value(await call(s, "read_conflicts", {"view": "all", "entityName": "Ann"}))
        assert only_ann["counts"] == {"replica_writes": 0, "superseded": 1, "contradictions": 0}
        before = value(await call(s, "read_conflicts", {"view": "all", "as_of": 1}))
        assert before["counts"] == {"replica_writes": 0, "superseded": 0, "contradictions": 0}
        assert before["asOf"]["position"] == 1
        bad = await call(s, "read_conflicts", {"view": "some"})
        assert bad.is_error


async def test_graph_contradictions_adds_the_conflict_view_when_asked(tmp_path: Path) -> None:
    await _three_kinds(tmp_path)
    async with legacy_session(tmp_path, tools="memory,graph") as s:
        plain = await tool_value(s, "graph_contradictions", {})
        assert "conflicts" not in plain and plain["count"] == 1
        answer = await tool_value(s, "graph_contradictions", {"include_conflicts": True})
        assert answer["contradictions"] == plain["contradictions"]
        view = answer["conflicts"]
        assert [c["kept"]["node"] for c in view["replica_writes"]] == ["laptop"]
        assert [c["superseded_by"]["to"] for c in view["superseded"]] == ["initech"]
        assert [c["kind"] for c in view["contradictions"]] == ["contradiction"]
        then = await tool_value(s, "graph_contradictions", {"include_conflicts": True, "as_of": 1})
        assert then["conflicts"]["counts"] == {
            "replica_writes": 0,
            "superseded": 0,
            "contradictions": 0,
        }


@pytest.mark.parametrize("era", ERAS)
async def test_the_topic_neighbourhood_shows_15_nodes_and_25_edges_with_counts_before_the_cut(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        names = [f"Node {k:02}" for k in range(16)]
        entities = [{"localId": f"n{k}", "name": n, "type": "Concept"} for k, n in enumerate(names)]
        relations = [
            {"from": f"n{a}", "to": f"n{b}", "relation": "RELATED_TO", "weight": 0.8}
            for a in range(16)
            for b in range(a + 1, 16)
        ]
        batch = {"entities": entities, "relations": relations}
        await tool_value(client, "graph_relate", {"batch": batch})
        answer = await tool_value(client, "graph_build_context", {"topic": "Node 00"})
        topic = answer["topic_neighbourhood"]
        assert topic["node_count"] == 15  # graph_query's limit
        assert topic["edge_count"] > 25 and len(topic["edges"]) == 25
        assert len(topic["nodes"]) == 15 and topic["nodes"][0]["name"] == "Node 00"
