"""graph_merge_suggestions and fuzzy entity resolution end to end through a real MCP client,
both protocol eras, against graphmem's server with its embedding service (the `hash`
embedder) running (contract §8.12, §8.1, §8.5, §9)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from graphmem.app import App, running
from graphmem.transports import serving
from tests.tools.graph_write_support import ERAS, GraphClient, tool_error, tool_value
from tests.tools.support import CALL_TIMEOUT, settings_for

pytestmark = pytest.mark.anyio

TOOL = "graph_merge_suggestions"
# Bounds the wait for the embedding worker to catch up with the writes of a test.
SETTLE_SECONDS = 30.0


@asynccontextmanager
async def suggest_client(era: str, data_dir: Path) -> AsyncIterator[tuple[GraphClient, App]]:
    """A client of `era` on a fresh server (memory and graph families), with its app, whose
    embedding service the test waits for."""
    settings = settings_for(data_dir, tools="memory,graph")
    with (
        running(settings, serve_stale=True, embed=True) as app,
        serving(app) as (notifier, server),
    ):
        notifier.bind_loop(asyncio.get_running_loop())
        mode: Any = "legacy" if era == "legacy" else "modern"
        if mode == "legacy":
            async with Client(server, mode="legacy", read_timeout_seconds=CALL_TIMEOUT) as c:
                yield c.session, app
        else:
            async with Client(server, read_timeout_seconds=CALL_TIMEOUT) as client:
                yield client, app


async def settled(app: App) -> None:
    service = app.embeddings
    assert service is not None
    assert await anyio.to_thread.run_sync(service.wait_idle, SETTLE_SECONDS)


async def relate(
    client: GraphClient, from_name: str, relation: str, to_name: str, to_type: str = "Person"
) -> None:
    await tool_value(
        client,
        "graph_relate",
        {
            "from_name": from_name,
            "from_type": "Person",
            "to_name": to_name,
            "to_type": to_type,
            "relation": relation,
        },
    )


async def smiths(client: GraphClient, app: App) -> None:
    """John and Jon Smith share Acme and Bob; John uses PostgreSQL, Alice uses Postgres."""
    await relate(client, "John Smith", "WORKS_AT", "Acme", "Organization")
    await relate(client, "Jon Smith", "WORKS_AT", "Acme", "Organization")
    await relate(client, "Bob", "KNOWS", "John Smith")
    await relate(client, "Bob", "KNOWS", "Jon Smith")
    await relate(client, "John Smith", "USES", "PostgreSQL", "Technology")
    await relate(client, "Alice", "USES", "Postgres", "Technology")
    await settled(app)


def audit_lines(app: App) -> list[dict[str, Any]]:
    path = app.settings.graph_home / "logs" / "dream-audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.mark.parametrize("era", ERAS)
async def test_merge_suggestions_is_listed_read_only_with_its_arguments(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, _):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        hints = tools[TOOL].annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            True,
            False,
            True,
        )
        assert hints.open_world_hint is False
        assert set(tools[TOOL].input_schema["properties"]) == {
            "entity_id",
            "entity_type",
            "min_score",
            "min_embedding_similarity",
            "limit",
            "weights",
            "log_to_audit",
            "as_of",
        }


@pytest.mark.parametrize("era", ERAS)
async def test_an_entity_scoped_run_finds_its_duplicate_and_logs_it(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)

        answer = await tool_value(client, TOOL, {"entity_id": "Jon Smith", "min_score": 0.5})

        assert answer["embedder"] == "hash"
        assert answer["scope"] == {"entity_id": "Jon Smith", "global": False}
        assert answer["threshold_used"] == 0.5
        assert answer["pending_embeddings"] == 0
        [found] = answer["suggestions"]
        assert found["entity_a"] == {
            "id": "john-smith",
            "name": "John Smith",
            "type": "Person",
            "edge_count": 3,
        }
        assert found["entity_b"]["id"] == "jon-smith"
        signals = found["signals"]
        assert signals["embedding_similarity"] >= 0.85
        assert signals["name_similarity"] == 0.3333
        assert [(s["id"], s["relation"], s["degree"]) for s in signals["shared_neighbors"]] == [
            ("acme", "WORKS_AT", 2),
            ("bob", "KNOWS", 2),
        ]
        expected = (
            0.4 * signals["embedding_similarity"]
            + 0.4 * signals["neighbor_jaccard"]
            + 0.2 * signals["name_similarity"]
        )
        assert found["score"] == pytest.approx(expected, abs=2e-4)
        [line] = audit_lines(app)
        assert line["event"] == "merge_flagged"
        assert (line["entity_a"], line["entity_b"]) == ("john-smith", "jon-smith")
        assert line["reason"].startswith(f"score={found['score']} (emb=")
        assert isinstance(line["timestamp"], str)


@pytest.mark.parametrize("era", ERAS)
async def test_type_scoped_and_global_runs_pair_only_entities_of_one_type(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)
        await relate(client, "Carol", "LIKES", "Postgres SQL", "Person")
        await settled(app)
        wide = {"min_score": 0.3, "min_embedding_similarity": 0.7, "log_to_audit": False}

        by_type = await tool_value(client, TOOL, {"entity_type": "Technology", **wide})
        every = await tool_value(client, TOOL, wide)

        assert by_type["scope"] == {"entity_type": "Technology", "global": False}
        assert [(s["entity_a"]["id"], s["entity_b"]["id"]) for s in by_type["suggestions"]] == [
            ("postgres", "postgresql")
        ]
        assert every["scope"] == {"global": True}
        pairs = {(s["entity_a"]["type"], s["entity_b"]["type"]) for s in every["suggestions"]}
        assert pairs <= {("Person", "Person"), ("Technology", "Technology")}
        assert ("postgres", "postgresql") in {
            (s["entity_a"]["id"], s["entity_b"]["id"]) for s in every["suggestions"]
        }
        assert audit_lines(app) == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_entity_is_found_false_and_nothing_is_logged(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)

        answer = await tool_value(client, TOOL, {"entity_id": "Nobody At All"})

        assert answer["found"] is False
        assert answer["suggestions"] == []
        assert audit_lines(app) == []


@pytest.mark.parametrize("era", ERAS)
async def test_bad_arguments_are_refused_naming_what_to_fix(tmp_path: Path, era: str) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)

        assert "accepts" in await tool_error(client, TOOL, {"entity": "Bob"})
        assert "min_score" in await tool_error(client, TOOL, {"min_score": 1.5})
        assert "min_embedding_similarity" in await tool_error(
            client, TOOL, {"min_embedding_similarity": -2}
        )
        assert "limit" in await tool_error(client, TOOL, {"limit": 0})
        assert "weights.name" in await tool_error(client, TOOL, {"weights": {"name": -1}})
        assert "graph" in await tool_error(client, TOOL, {"weights": {"graph": 1}})
        assert "entity_id" in await tool_error(client, TOOL, {"entity_id": "  "})
        assert audit_lines(app) == []


@pytest.mark.parametrize("era", ERAS)
async def test_weights_keep_missing_keys_and_a_large_limit_is_clamped(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)

        answer = await tool_value(
            client,
            TOOL,
            {
                "entity_id": "jon-smith",
                "min_score": 0,
                "weights": {"embedding": 0},
                "limit": 500,
                "log_to_audit": False,
            },
        )

        [found] = answer["suggestions"]
        signals = found["signals"]
        expected = 0.4 * signals["neighbor_jaccard"] + 0.2 * signals["name_similarity"]
        assert found["score"] == pytest.approx(expected, abs=2e-4)
        assert answer["warnings"] == ["limit 500 clamped to 100"]


@pytest.mark.parametrize("era", ERAS)
async def test_graph_query_and_graph_entities_find_misspelt_names(tmp_path: Path, era: str) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)

        listed = await tool_value(client, "graph_entities", {"search": "Postgress"})
        assert [e["name"] for e in listed["entities"]] == ["Postgres", "PostgreSQL"]
        assert listed["total"] == 2
        keyword_first = await tool_value(client, "graph_entities", {"search": "Postgres"})
        assert [e["name"] for e in keyword_first["entities"]] == ["Postgres", "PostgreSQL"]

        query = await tool_value(
            client,
            "graph_query",
            {"entities": ["John Smiht", "Annabel"], "max_hops": 1, "context_level": "minimal"},
        )
        assert query["nodes"][0]["name"] == "John Smith"
        assert {"Acme", "Bob", "PostgreSQL"} <= {n["name"] for n in query["nodes"]}
        assert query["unresolved"] == ["Annabel"]


@pytest.mark.parametrize("era", ERAS)
async def test_an_audit_log_that_cannot_be_written_is_an_error_naming_the_file(
    tmp_path: Path, era: str
) -> None:
    async with suggest_client(era, tmp_path) as (client, app):
        await smiths(client, app)
        app.settings.graph_home.mkdir(parents=True, exist_ok=True)
        (app.settings.graph_home / "logs").write_text("not a folder", "utf-8")

        refused = await tool_error(client, TOOL, {"entity_id": "Jon Smith", "min_score": 0.5})
        answered = await tool_value(
            client, TOOL, {"entity_id": "Jon Smith", "min_score": 0.5, "log_to_audit": False}
        )

        assert "dream-audit.jsonl" in refused
        assert "log_to_audit false" in refused
        assert len(answered["suggestions"]) == 1
