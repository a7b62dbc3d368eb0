"""The Cypher projection's rows: the one-pass whole-graph read (`snapshot`, what a build
loads) gives exactly the rows that the per-element reads over `Reading` give (what a change
writes), on a graph with decayed values, a rule entity, slug twins, properties and a
superseded edge. Pure reads of a served graph; no engine needed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from graphmem.app import App, running
from graphmem.cypher.rows import Columns, entity_columns, relation_columns, snapshot
from graphmem.transports import serving
from projections.graph import GraphProjection
from projections.graph_family import Reading
from tests.tools.graph_write_support import create_slug_twins, tool_value
from tests.tools.support import settings_for

pytestmark = pytest.mark.anyio


def rows(columns: Columns) -> set[tuple[Any, ...]]:
    frozen = [
        [
            tuple(map(tuple, v))
            if isinstance(v, tuple)
            else (tuple(v) if isinstance(v, list) else v)
            for v in column
        ]
        for column in columns.values()
    ]
    return set(zip(*frozen, strict=True))


def both_ways(graph: GraphProjection) -> tuple[tuple[Columns, Columns], tuple[Columns, Columns]]:
    reading = Reading(graph)
    entities = entity_columns(reading, graph.entity_names())
    relations = relation_columns(reading, graph.relation_keys(), set(entities["name"]))
    return snapshot(graph), (entities, relations)


async def write(app: App) -> None:
    with serving(app) as (notifier, server):
        notifier.bind_loop(asyncio.get_running_loop())
        async with Client(server) as client:
            await create_slug_twins(client)
            await tool_value(
                client,
                "graph_relate",
                {
                    "batch": {
                        "entities": [
                            {"localId": "a", "name": "Alice", "type": "Person",
                             "properties": {"role": "dev", "level": 3, "tags": ["x"]}},
                            {"localId": "r", "name": "No Tabs", "type": "Preference",
                             "properties": {"subtype": "rule"}},
                            {"localId": "p", "name": "Postgres", "type": "Technology"},
                            {"localId": "m", "name": "MySQL", "type": "Technology"},
                        ],
                        "relations": [
                            {"from": "a", "to": "r", "relation": "PREFERS", "weight": 0.8},
                            {"from": "a", "to": "m", "relation": "USES", "weight": 0.6,
                             "valid_at": "2026-01-01"},
                            {"from": "a", "to": "p", "relation": "USES", "weight": 0.7,
                             "valid_at": "2026-02-01", "evidence": "said so"},
                        ],
                    }
                },
            )  # fmt: skip
            await tool_value(
                client,
                "add_observations",
                {"observations": [{"entityName": "Alice", "contents": ["likes tea"]}]},
            )


async def decay(app: App) -> None:
    with serving(app) as (notifier, server):
        notifier.bind_loop(asyncio.get_running_loop())
        async with Client(server) as client:
            await tool_value(client, "graph_decay", {})


async def test_the_whole_graph_read_gives_the_rows_the_per_element_reads_give(
    tmp_path: Path,
) -> None:
    with running(settings_for(tmp_path, tools="memory,graph"), serve_stale=True) as app:
        await write(app)
    aged = settings_for(tmp_path, tools="memory,graph", GRAPHMEM_CLOCK_OFFSET_DAYS="40")
    with running(aged, serve_stale=True) as app:
        await decay(app)
        fast, slow = app.graph.query_models_blocking(lambda models: both_ways(models.graph))
    assert rows(fast[0]) == rows(slow[0])
    assert rows(fast[1]) == rows(slow[1])
    entities = dict(
        zip(fast[0]["name"], zip(fast[0]["id"], fast[0]["confidence"], strict=True), strict=True)
    )
    assert entities["Data Lake"][0] == "Data Lake"  # slug twins: ids are the names
    assert entities["No Tabs"][1] == 0.5  # a rule never decays
    assert entities["Alice"][1] < 0.5  # the others decayed from 0.5
    assert len(fast[1]["from"]) == 3
    assert set(fast[1]["invalid_at"]) != {None}  # the superseded edge is there, closed
