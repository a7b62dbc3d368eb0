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
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventstore.lmdb_log import LmdbEventLog
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from graphmem.migration import ImportReport, export_jsonl, import_memory, parse_memory
from graphmem.plain_import import import_into_empty
from projections.graph import GraphProjection
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
