"""The bulk import into an empty store (graphmem.plain_import) against the fold.

For random memory files (duplicate entities and observations, unicode names, self-relations,
relations to entities the file lacks, repeated relations, a malformed line), imported by the
bulk path into an empty LMDB log: the checkpoint it builds directly is, byte for byte, the
snapshot of folding that log; and the import reports, and leaves the graph, exactly as the
folding path (the graph writer's commands) does.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventstore.lmdb_log import LmdbEventLog
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from graphmem.migration import ImportReport, export_jsonl, import_memory, parse_memory
from graphmem.plain_import import import_into_empty
from projections.graph import GraphProjection
from projections.graph._plain import PlainGraph, plain_snapshot
from projections.graph_image import IMAGE_FILE, encode_image
from projections.schemas import SchemaProjection

NAMES = st.sampled_from(["a", "a", "a", "b", "b", "Zoë", "名前", "a b", "c\t"])
# Relation endpoints: mostly names the file may hold, some it never does.
ENDPOINTS = NAMES | st.sampled_from(["missing", "ghost"])
OBSERVATIONS = st.lists(st.sampled_from(["x", "x", "y", "é\nz", ""]), max_size=4)


@st.composite
def memory_files(draw: st.DrawFn) -> bytes:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["entity", "entity", "relation", "bad"]))
        if kind == "entity":
            item = {
                "type": "entity",
                "name": draw(NAMES),
                "entityType": draw(st.sampled_from(["person", "thing"])),
                "observations": draw(OBSERVATIONS),
            }
        elif kind == "relation":
            item = {
                "type": "relation",
                "from": draw(ENDPOINTS),
                "to": draw(ENDPOINTS),
                "relationType": draw(st.sampled_from(["knows", "knows", "is"])),
            }
        else:
            lines.append('{"type":"entity","name":')
            continue
        lines.append(json.dumps(item, ensure_ascii=draw(st.booleans())))
    return "\n".join(lines).encode()


def folding_import(data: bytes, batch_size: int) -> tuple[ImportReport, bytes]:
    """The import through the graph writer's commands, and the graph it leaves, exported."""
    app = start_actors(Settings(data_dir=Path("/nonexistent")), InMemoryEventLog(node_id="n1"))
    try:
        report = import_memory(app.graph, parse_memory(data), batch_size=batch_size)
        return report, app.graph.query_blocking(export_jsonl)
    finally:
        stop_actors(app)


# Every case at once, so that no run depends on drawing them: a self-relation (in its entity's
# adjacency once), an entity listed twice (merged), repeated observations, a relation to a
# missing entity and one repeated, unicode names, an entity without observations.
EVERY_CASE = "\n".join(
    json.dumps(item, ensure_ascii=False)
    for item in [
        {"type": "entity", "name": "a", "entityType": "person", "observations": ["x", "x"]},
        {"type": "entity", "name": "Zoë", "entityType": "thing", "observations": []},
        {"type": "entity", "name": "a", "entityType": "thing", "observations": ["y", "x"]},
        {"type": "entity", "name": "名前", "entityType": "person", "observations": ["é\nz"]},
        {"type": "relation", "from": "a", "to": "a", "relationType": "is"},
        {"type": "relation", "from": "a", "to": "Zoë", "relationType": "knows"},
        {"type": "relation", "from": "ghost", "to": "a", "relationType": "knows"},
        {"type": "relation", "from": "a", "to": "Zoë", "relationType": "knows"},
        {"type": "relation", "from": "名前", "to": "a", "relationType": "knows"},
    ]
).encode()


@settings(max_examples=60, deadline=None)
@given(data=memory_files(), batch_size=st.integers(1, 4))
@example(data=EVERY_CASE, batch_size=2)
def test_the_bulk_paths_checkpoint_is_the_fold_of_its_log_and_its_import_the_folding_ones(
    data: bytes, batch_size: int
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        log = LmdbEventLog.open(Path(scratch), node_id="n1")
        try:
            seen: list[tuple[int, int]] = []
            report = import_into_empty(
                log,
                parse_memory(data),
                batch_size=batch_size,
                progress=lambda done, total: seen.append((done, total)),
                checkpoint=True,
            )
            assert report is not None
            folded = GraphProjection()
            folded.apply_all(log.read_from(1))
            graph = log.checkpoints.load(GraphProjection.name, GraphProjection.version)
            schemas = log.checkpoints.load(SchemaProjection.name, SchemaProjection.version)
            end = log.last_position()
            log_id, _, tip = log.checkpoints.anchor()
            image = Path(scratch, IMAGE_FILE)
            # The graph's read image, written from the creations: the fold's, byte for byte.
            if end == 0:
                assert not image.exists()
            else:
                assert tip is not None
                assert image.read_bytes() == encode_image(folded, log_id=log_id, tip=tip)
            # Encoded by a child beside the appends: nothing of its work left behind.
            assert not list(Path(scratch).glob(f".{IMAGE_FILE}.*"))
        finally:
            log.close()

    if end == 0:
        assert graph is None  # nothing written, nothing to restore
    else:
        assert graph is not None
        assert schemas is not None
        assert graph.position == schemas.position == end
        assert bytes(graph.payload) == folded.to_snapshot()
        assert SchemaProjection.from_snapshot(schemas.payload).position == end
    expected_report, expected_graph = folding_import(data, batch_size)
    assert report == expected_report
    assert export_jsonl(folded) == expected_graph
    assert seen == sorted(seen)
    assert not seen or seen[-1][0] == seen[-1][1]


try:
    from projections import _prefix_write
except ImportError:  # not built: the Python packing is the only one
    _prefix_write = None  # type: ignore[assignment]

# Every msgpack int width's edges a stamp can take (clock readings and sequence numbers are
# never negative), then any int64 that is not.
STAMP_INTS = st.sampled_from([0, 1, 127, 128, 255, 256, 65_535, 65_536, 2**32 - 1, 2**32])
STAMP_INTS |= st.integers(0, 2**63 - 1)


@st.composite
def plain_graphs(draw: st.DrawFn) -> PlainGraph:
    n = draw(st.integers(1, 8))
    names = [f"e{i}" for i in range(n)]
    observations = [
        # Any text (st.text leaves lone surrogates out: neither packing encodes one), long
        # ones across the str8/str16 widths, and entities without any.
        draw(st.lists(st.text(max_size=3) | st.sampled_from(["é\nz", "x" * 40, "y" * 300])))
        for _ in range(n)
    ]
    m = draw(st.integers(0, 6))
    return PlainGraph(
        position=draw(st.integers(1, 2**40)),
        origin=draw(st.sampled_from(["n1", "", "zz"])),
        names=names,
        types=[draw(st.sampled_from(["person", "thing"])) for _ in range(n)],
        observations=observations,
        entity_hlc=array("q", [draw(STAMP_INTS) for _ in range(n)]),
        entity_seq=array("q", [draw(st.integers(0, 2**40)) for _ in range(n)]),
        relations=[
            (draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)), "knows") for _ in range(m)
        ],
        relation_hlc=array("q", [draw(STAMP_INTS) for _ in range(m)]),
        relation_seq=array("q", [draw(st.integers(0, 2**40)) for _ in range(m)]),
    )


@pytest.mark.skipif(_prefix_write is None, reason="the C writers are not built")
@settings(max_examples=200, deadline=None)
@given(graph=plain_graphs())
def test_the_compiled_and_python_packings_of_a_plain_graph_write_the_same_snapshot(
    graph: PlainGraph,
) -> None:
    assert plain_snapshot(graph, compiled=True) == plain_snapshot(graph, compiled=False)
