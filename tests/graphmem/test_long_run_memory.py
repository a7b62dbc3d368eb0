"""A server that has answered many calls holds what its graph needs, not what the calls were,
and pages the graph by name at a cost set by the page, not by what was deleted before.

The real server's tool handler over the real actors and LMDB log, driven in-process: the
structures a long run could grow are counted after M calls and after several times M."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.read_models import ReadModels
from eventstore.events import Cause
from eventstore.lmdb_log import LmdbEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.notifier import Notifier
from graphmem.server import build_server
from graphmem.tools.base import ToolOutcome

WINDOW = 20


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    event_log = LmdbEventLog.open(tmp_path)
    started = start_actors(Settings(data_dir=tmp_path), event_log, load_schemas=False)
    yield started
    stop_actors(started)
    event_log.close()


class Client:
    def __init__(self, app: App) -> None:
        server = build_server(app, Notifier())
        assert server.call_tool is not None
        self._call_tool = server.call_tool
        self.app = app

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        async def call() -> ToolOutcome:
            return await self._call_tool(tool, arguments, Cause(tool=tool, client="test"))

        outcome = asyncio.run(call())
        assert not outcome.is_error, outcome.texts
        return outcome.structured

    def cycles(self, first: int, last: int) -> None:
        """Per cycle, the calls of a long session: create, annotate, relate, search, page,
        and delete what was created WINDOW cycles before."""
        for i in range(first, last):
            name = f"e{i:05d}"
            entity = {"name": name, "entityType": "t", "observations": [f"token{i}"]}
            self.call("create_entities", {"entities": [entity]})
            self.call(
                "add_observations", {"observations": [{"entityName": name, "contents": ["x"]}]}
            )
            if i > 0:
                relation = {"from": name, "to": f"e{i - 1:05d}", "relationType": "follows"}
                self.call("create_relations", {"relations": [relation]})
            assert [
                e["name"] for e in self.call("search_nodes", {"query": f"token{i}"})["entities"]
            ] == [name]
            self.call("read_graph", {"limit": 5, "offset": i % WINDOW})
            if i >= WINDOW:
                self.call("delete_entities", {"entityNames": [f"e{i - WINDOW:05d}"]})

    def held(self) -> dict[str, int]:
        """The per-entity and per-call structures a long run could grow, counted."""

        def count(models: ReadModels) -> dict[str, int]:
            graph, search = models.graph, models.search
            assert graph._by_name is not None
            return {
                "alive": graph.entity_count(),
                "name_index": len(graph._by_name),
                "relation_bases": len({id(r.base) for r in graph.state.relations.values()}),
                "search_segments": len(search._segments),
                "schema_view_noted": len(models.schema_view._dirty),
            }

        return self.app.graph.query_models_blocking(count)


def test_the_structures_a_long_run_keeps_do_not_grow_with_its_calls(app: App) -> None:
    client = Client(app)
    client.cycles(0, 300)
    after_m = client.held()
    client.cycles(300, 1500)
    after_5m = client.held()

    assert after_m["alive"] == after_5m["alive"] == WINDOW
    for held in (after_m, after_5m):
        assert held["name_index"] == WINDOW
        assert held["relation_bases"] == 1  # every relation's base is the shared plain one
        assert held["schema_view_noted"] == 0  # nothing asked the schema view
    # Fewer alive entities than a segment holds, and new ones go last: one segment throughout
    # (the bound on emptied segments, which needs thousands of deletions at the real segment
    # size, is tested on the projection in tests/projections/test_bounded_memory.py).
    assert after_m["search_segments"] == after_5m["search_segments"] == 1


def test_read_graph_pages_are_slices_of_the_name_ordered_graph_across_deletes_and_renames(
    app: App,
) -> None:
    client = Client(app)
    names = [f"n{i:03d}" for i in range(60)]
    client.call(
        "create_entities",
        {
            "entities": [
                {"name": n, "entityType": "t", "observations": [n]} for n in reversed(names)
            ]
        },
    )
    client.call("delete_entities", {"entityNames": names[::3]})
    client.call(
        "update_entities",
        {
            "entities": [
                {"name": "n001", "newName": "a-first"},
                {"name": "n059", "newName": "z-last"},
            ]
        },
    )
    client.call(
        "create_entities", {"entities": [{"name": "n000", "entityType": "t", "observations": []}]}
    )
    whole = client.call("read_graph", {})
    by_name = sorted(whole["entities"], key=lambda e: e["name"])
    assert by_name[0]["name"] == "a-first" and by_name[-1]["name"] == "z-last"
    assert "n003" not in [e["name"] for e in by_name] and "n000" in [e["name"] for e in by_name]
    for offset, limit in [(0, 10), (7, 5), (35, 10), (41, 3), (100, 5)]:
        page = client.call("read_graph", {"offset": offset, "limit": limit})
        assert page["entities"] == by_name[offset : offset + limit]
    walked = []
    offset = 0
    while page := client.call("read_graph", {"offset": offset, "limit": 7})["entities"]:
        walked += page
        offset += 7
    assert walked == by_name
