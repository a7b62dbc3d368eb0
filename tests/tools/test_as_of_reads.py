"""As-of reads through a real MCP client (in memory): while it writes, the test records what
read_graph, search_nodes and open_nodes answered and the log position after each step; asked
later with `as_of` (that position, or the time of its event), every read answers the same, in
both tool families and both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from actors.hooks import HookEvent, Hooks
from actors.time_travel import TimeTravel
from eventstore.events import Cause
from eventstore.hlc import ms_of
from eventstore.lmdb_log import LmdbEventLog
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.limits import InputLimits
from graphmem.tools.base import ToolContext, ToolInputError
from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.mesh import MESH_TOOLS
from tests.tools.support import call, legacy_session, modern_client, text, value

pytestmark = pytest.mark.anyio

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class LogWatch:
    """The server's log, opened beside it as any other reader opens it."""

    def __init__(self, event_log: LmdbEventLog) -> None:
        self.log = event_log

    def position(self) -> int:
        return self.log.last_position()

    def time_of(self, position: int) -> tuple[str, int]:
        """The ISO time of the event at `position` (ms precision) and its wall ms."""
        envelope = next(iter(self.log.read_from(position)))
        ms = ms_of(envelope.hlc)
        moment = EPOCH + timedelta(milliseconds=ms)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"), ms

    def last_position_at(self, ms: int) -> int:
        return max((e.position for e in self.log.read_from(1) if ms_of(e.hlc) <= ms), default=0)


@contextmanager
def watching(data_dir: Path) -> Iterator[LogWatch]:
    event_log = LmdbEventLog.open(data_dir)
    try:
        yield LogWatch(event_log)
    finally:
        event_log.close()


Reads = dict[str, dict[str, Any]]


@dataclass
class Recorded:
    """What each read answered after each step, by log position."""

    reads: dict[int, Reads] = field(default_factory=dict)
    positions: list[int] = field(default_factory=list)

    def note(self, position: int, reads: Reads) -> None:
        if position in self.reads:
            assert self.reads[position] == reads  # nothing written, nothing changed
        self.reads[position] = reads
        self.positions.append(position)


# --- the memory family ------------------------------------------------------------------------

MEMORY_STEPS: list[tuple[str, dict[str, Any]]] = [
    (
        "create_entities",
        {
            "entities": [
                {"name": "Ada", "entityType": "person", "observations": ["likes tea"]},
                {"name": "Bob", "entityType": "person", "observations": []},
            ]
        },
    ),
    ("create_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]}),
    (
        "add_observations",
        {"observations": [{"entityName": "Bob", "contents": ["plays chess", "likes tea"]}]},
    ),
    ("delete_observations", {"deletions": [{"entityName": "Ada", "observations": ["likes tea"]}]}),
    ("create_entities", {"entities": [{"name": "Cy", "entityType": "robot", "observations": []}]}),
    ("delete_entities", {"entityNames": ["Nobody"]}),  # writes nothing
    ("delete_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]}),
    ("delete_entities", {"entityNames": ["Bob"]}),
    (
        "create_entities",
        {"entities": [{"name": "Bob", "entityType": "cat", "observations": ["likes tea"]}]},
    ),
]
MEMORY_READS: dict[str, tuple[str, dict[str, Any]]] = {
    "graph": ("read_graph", {}),
    "page": ("read_graph", {"limit": 1, "offset": 1}),
    "search": ("search_nodes", {"query": "tea"}),
    "typed": ("search_nodes", {"query": "e", "entityType": "person"}),
    "open": ("open_nodes", {"names": ["Bob", "Ada"]}),
}


async def memory_reads(s: ClientSession, as_of: Any = None) -> Reads:
    """Each read's text and structured content (without `asOf`, checked apart)."""
    answers: Reads = {}
    for label, (tool, arguments) in MEMORY_READS.items():
        extra = {} if as_of is None else {"as_of": as_of}
        result = await call(s, tool, {**arguments, **extra})
        assert not result.is_error, text(result)
        structured = dict(result.structured_content or {})
        structured.pop("asOf", None)
        answers[label] = {"text": text(result), "structured": structured}
    return answers


async def test_memory_reads_as_of_a_position_or_a_time_answer_what_was_read_then(
    tmp_path: Path,
) -> None:
    recorded = Recorded()
    async with legacy_session(tmp_path) as s:
        with watching(tmp_path) as watch:
            recorded.note(0, await memory_reads(s))
            for tool, arguments in MEMORY_STEPS:
                result = await call(s, tool, arguments)
                assert not result.is_error, text(result)
                recorded.note(watch.position(), await memory_reads(s))
            last = watch.position()

            for position in recorded.positions:
                assert await memory_reads(s, position) == recorded.reads[position], position
            for position in recorded.positions[1:]:
                iso, ms = watch.time_of(position)
                expected = watch.last_position_at(ms)
                assert await memory_reads(s, iso) == recorded.reads[expected], iso
            assert (
                await memory_reads(s, str(recorded.positions[3]))
                == (recorded.reads[recorded.positions[3]])
            )
            assert await memory_reads(s, "2000-01-01") == recorded.reads[0]

            asked = await call(s, "read_graph", {"as_of": recorded.positions[2]})
            iso, _ = watch.time_of(recorded.positions[2])
            assert asked.structured_content is not None
            assert asked.structured_content["asOf"] == {
                "position": recorded.positions[2],
                "time": iso,
            }
            now = await call(s, "read_graph", {})
            assert now.structured_content is not None
            assert "asOf" not in now.structured_content

    async with modern_client(tmp_path) as client:
        middle = recorded.positions[4]
        result = await call(client, "search_nodes", {"query": "tea", "as_of": middle})
        assert value(result) == recorded.reads[middle]["search"]["structured"]
        result = await call(client, "open_nodes", {"names": ["Bob", "Ada"], "as_of": last})
        assert value(result) == recorded.reads[last]["open"]["structured"]


async def test_an_unusable_as_of_is_an_error_that_says_what_to_send(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, *MEMORY_STEPS[0])
        with watching(tmp_path) as watch:
            last = watch.position()

        for as_of in ("last tuesday", -1, True, 1.5):
            result = await call(s, "read_graph", {"as_of": as_of})
            assert result.is_error
            assert "log position" in text(result) and "ISO-8601 time" in text(result)
        result = await call(s, "open_nodes", {"names": ["Ada"], "as_of": last + 5})
        assert result.is_error
        assert f"the last position is {last}" in text(result)


# --- the mesh family --------------------------------------------------------------------------

MESH_STEPS: list[tuple[str, dict[str, Any]]] = [
    (
        "add_nodes",
        {
            "nodes": [
                {"name": "Ada", "nodeType": "person", "metadata": ["Role: Engineer"]},
                {"name": "Acme", "nodeType": "company", "metadata": []},
                {"name": "Bob", "nodeType": "person", "metadata": []},
            ]
        },
    ),
    (
        "add_edges",
        {"edges": [{"from": "Ada", "to": "Acme", "edgeType": "works_at", "weight": 0.5}]},
    ),
    ("add_edges", {"edges": [{"from": "Bob", "to": "Ada", "edgeType": "knows"}]}),
    (
        "update_edges",
        {"edges": [{"from": "Ada", "to": "Acme", "edgeType": "works_at", "weight": 0.9}]},
    ),
    ("add_metadata", {"nodeName": "Bob", "metadata": ["Role: Engineer", "Hobby: chess"]}),
    ("delete_metadata", {"nodeName": "Ada", "metadata": ["Role: Engineer"]}),
    ("delete_nodes", {"nodeNames": ["Ada"]}),
    ("add_nodes", {"nodes": [{"name": "Ada", "nodeType": "robot", "metadata": ["Beeps: yes"]}]}),
]
MESH_READS: dict[str, tuple[str, dict[str, Any]]] = {
    "graph": ("read_graph", {}),
    "search": ("search_nodes", {"query": "engineer"}),
    "open": ("open_nodes", {"names": ["Ada", "Nobody"]}),
}


async def mesh_reads(s: ClientSession, as_of: Any = None) -> Reads:
    """Each read's data and actionTaken (with the as-of part taken out, checked here)."""
    answers: Reads = {}
    for label, (tool, arguments) in MESH_READS.items():
        extra = {} if as_of is None else {"as_of": as_of}
        result = await call(s, tool, {**arguments, **extra})
        assert not result.is_error, text(result)
        body = json.loads(text(result))
        assert set(body) == {"data", "actionTaken", "timestamp"}
        action: str = body["actionTaken"]
        if as_of is not None:
            assert " as of position " in action, action
            head, _, tail = action.partition(" as of position ")
            action = head + tail.partition(")")[2]
        answers[label] = {"data": body["data"], "action": action}
    return answers


async def test_mesh_reads_as_of_a_position_or_a_time_answer_what_was_read_then(
    tmp_path: Path,
) -> None:
    recorded = Recorded()
    async with legacy_session(tmp_path, tools="mesh") as s:
        with watching(tmp_path) as watch:
            recorded.note(0, await mesh_reads(s))
            for tool, arguments in MESH_STEPS:
                result = await call(s, tool, arguments)
                assert not result.is_error, text(result)
                recorded.note(watch.position(), await mesh_reads(s))

            for position in recorded.positions:
                assert await mesh_reads(s, position) == recorded.reads[position], position
            for position in recorded.positions[1:]:
                iso, ms = watch.time_of(position)
                assert await mesh_reads(s, iso) == recorded.reads[watch.last_position_at(ms)]

            middle = recorded.positions[3]
            iso, _ = watch.time_of(middle)
            body = json.loads(text(await call(s, "read_graph", {"as_of": middle})))
            assert body["actionTaken"].endswith(f" as of position {middle} ({iso})")
            body = json.loads(text(await call(s, "read_graph", {"as_of": 0})))
            assert body["actionTaken"].endswith(" as of position 0 (before the first event)")
            assert body["data"] == {"nodes": [], "edges": []}


async def test_a_mesh_read_with_an_unusable_as_of_answers_with_suggestions(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path, tools="mesh") as s:
        result = await call(s, "search_nodes", {"query": "a", "as_of": "soon"})

        assert result.is_error
        body: dict[str, Any] = json.loads(text(result))
        assert "ISO-8601 time" in body["error"]
        assert any("as_of" in suggestion for suggestion in body["suggestions"])


# --- in process, through the tool functions (a context built here carries the TimeTravel) -----


@dataclass(frozen=True)
class TravellingContext(ToolContext):
    time_travel: TimeTravel | None = None


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(), load_schemas=False)
    yield started
    stop_actors(started)


def tool_context(app: App, hooks: Hooks | None = None, *, travel: bool = True) -> ToolContext:
    return TravellingContext(
        app.graph,
        InputLimits(),
        Cause(tool="test"),
        app.transactions,
        hooks or app.hooks,
        TimeTravel(app.event_log) if travel else None,
    )


TOOLS = {spec.tool.name: spec for spec in MEMORY_TOOLS}
MESH = {spec.tool.name: spec for spec in MESH_TOOLS}


async def test_read_tools_in_process_answer_as_of_a_position_and_tell_after_hooks(
    app: App,
) -> None:
    seen: list[HookEvent] = []
    ctx = tool_context(app, Hooks([seen.append]))
    await TOOLS["create_entities"].run(ctx, MEMORY_STEPS[0][1])
    first = app.event_log.last_position()
    await TOOLS["create_entities"].run(ctx, MEMORY_STEPS[4][1])

    then = await TOOLS["read_graph"].run(ctx, {"as_of": first})
    now = await TOOLS["read_graph"].run(ctx, {})

    assert [e["name"] for e in json.loads(then.texts[0])["entities"]] == ["Ada", "Bob"]
    assert [e["name"] for e in json.loads(now.texts[0])["entities"]] == ["Ada", "Bob", "Cy"]
    assert then.structured is not None and then.structured["asOf"]["position"] == first
    opened = await MESH["open_nodes"].run(ctx, {"names": ["Cy"], "as_of": first})
    assert json.loads(opened.texts[0])["data"] == {"nodes": [], "edges": []}
    assert seen[-1].name == "afterOpenNodes"
    assert seen[-1].data["asOf"]["position"] == first


async def test_without_time_travel_an_as_of_read_is_refused_and_a_plain_one_answers(
    app: App,
) -> None:
    ctx = tool_context(app, travel=False)

    with pytest.raises(ToolInputError, match="as_of is not available"):
        await TOOLS["search_nodes"].run(ctx, {"query": "a", "as_of": 0})
    assert (await TOOLS["search_nodes"].run(ctx, {"query": "a"})).structured == {
        "entities": [],
        "relations": [],
    }
