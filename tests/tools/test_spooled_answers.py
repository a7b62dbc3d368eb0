"""read_graph and search_nodes in process, with the real actors: an answer past
graph_body.IN_MEMORY_BYTES is spooled in the data dir by the one query that reads the graph,
so it is one snapshot however late it is written out; a small one is whole at once; and when
the spool cannot be written the answer is built in memory instead."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from eventstore.events import Cause
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.limits import InputLimits
from graphmem.tools.base import ToolContext, ToolOutcome
from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.wire.fast_calls import StreamedLine

pytestmark = pytest.mark.anyio

TOOLS = {spec.tool.name: spec for spec in MEMORY_TOOLS}
WIDE = 'a "quoted" \\ line\nthen é 🚀 \t ' * 30
# glibc maps a block this large or larger on its own, at first; once one is freed, blocks up to
# its size come from the heap instead, where what an answer frees stays resident.
MMAP_THRESHOLD = 128 * 1024


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(), load_schemas=False)
    yield started
    stop_actors(started)


def context(app: App, spill_dir: Path | None) -> ToolContext:
    return ToolContext(app.graph, InputLimits(), Cause(tool="test"), spill_dir=spill_dir)


async def fill(ctx: ToolContext, count: int) -> None:
    people = [
        {"name": f"p{i:05d}", "entityType": "person", "observations": [f"{WIDE} {i}"]}
        for i in range(count)
    ]
    created = await TOOLS["create_entities"].run(ctx, {"entities": people})
    assert not created.is_error


def names(outcome: ToolOutcome) -> list[str]:
    whole = outcome.materialized()
    graph: dict[str, Any] = json.loads(whole.texts[0])
    assert graph == whole.structured
    return [e["name"] for e in graph["entities"]]


async def test_a_large_answer_is_spooled_and_is_the_graph_when_it_was_asked(
    app: App, tmp_path: Path
) -> None:
    ctx = context(app, tmp_path)
    await fill(ctx, 1000)
    read = await TOOLS["read_graph"].run(ctx, {})
    search = await TOOLS["search_nodes"].run(ctx, {"query": "quoted"})
    assert read.body is not None and read.body.on_disk and read.texts == []
    assert search.body is not None
    # Written after both were answered, before either is written out: not in them.
    late = {"name": "late", "entityType": "person", "observations": ["quoted"]}
    assert not (await TOOLS["create_entities"].run(ctx, {"entities": [late]})).is_error
    assert names(read) == names(search) == [f"p{i:05d}" for i in range(1000)]
    assert "late" in names(await TOOLS["read_graph"].run(ctx, {}))


async def test_a_small_answer_is_whole_at_once(app: App, tmp_path: Path) -> None:
    ctx = context(app, tmp_path)
    await fill(ctx, 3)
    outcome = await TOOLS["read_graph"].run(ctx, {})
    assert outcome.body is None and outcome.structured_json is not None
    assert names(outcome) == ["p00000", "p00001", "p00002"]


async def test_an_answer_that_cannot_be_spooled_is_built_in_memory(
    app: App, tmp_path: Path
) -> None:
    ctx = context(app, tmp_path / "no such dir")
    await fill(ctx, 1000)
    with capture_logs() as logs:
        outcome = await TOOLS["read_graph"].run(ctx, {})
    assert outcome.body is None and not outcome.is_error
    assert len(names(outcome)) == 1000
    assert "answer_not_spooled" in [e["event"] for e in logs]


async def test_a_spooled_answer_is_written_in_slices_each_under_glibc_s_mmap_threshold(
    app: App, tmp_path: Path
) -> None:
    # What a broad answer leaves in the heap is what its slices' copies (read back,
    # formatted, escaped) held at once: 1 MiB slices left ~14 MiB there at 50,000 entities.
    ctx = context(app, tmp_path)
    await fill(ctx, 3000)  # about 3 MB of answer, every entity escaped heavily
    outcome = await TOOLS["read_graph"].run(ctx, {})
    body = outcome.body
    assert body is not None and body.on_disk
    try:
        text, structured = list(body.text_pieces()), list(body.structured_pieces())
        written = list(StreamedLine(1, b"", b"", b"", body).pieces())
    finally:
        body.close()
    assert len(written) > 40
    assert max(map(len, text + structured + written)) < MMAP_THRESHOLD
