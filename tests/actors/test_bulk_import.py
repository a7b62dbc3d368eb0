"""actors.bulk_import: plain creations into an empty log, and what it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors import graph_images
from actors.bulk_import import bulk_import
from eventstore.events import EntityCreated, ObservationAdded, RelationCreated
from eventstore.lmdb_log import LmdbEventLog
from projections.graph import GraphProjection
from projections.graph_image import IMAGE_FILE, encode_image

ENTITIES = [("a", "person", ["x"]), ("b", "person", []), ("c", "thing", ["y", "y"])]


@pytest.fixture
def event_log(tmp_path: Path) -> Iterator[LmdbEventLog]:
    opened = LmdbEventLog.open(tmp_path, node_id="n1")
    yield opened
    opened.close()


def test_a_bulk_import_appends_a_batch_per_transaction_and_checkpoints_at_the_end(
    event_log: LmdbEventLog,
) -> None:
    progress: list[int] = []

    done = bulk_import(
        event_log, ENTITIES, [(0, 2, "knows")], batch_size=2, progress=progress.append
    )

    assert done.complete
    assert done.checkpointed
    assert progress == [2, 3, 4]
    envelopes = list(event_log.read_from(1))
    assert [e.tx for e in envelopes] == [1, 1, 1, 4, 4, 4, 7]
    found = event_log.checkpoints.load(GraphProjection.name, GraphProjection.version)
    assert found is not None
    assert found.position == len(envelopes) == 7


def test_a_bulk_import_into_a_log_that_is_not_empty_appends_nothing(
    event_log: LmdbEventLog,
) -> None:
    event_log.append([EntityCreated(name="z", entity_type="t")])

    done = bulk_import(event_log, ENTITIES, [], batch_size=2)

    assert (done.entities, done.relations, done.complete, done.checkpointed) == (0, 0, False, False)
    assert event_log.last_position() == 1


def test_a_bulk_import_stops_without_a_checkpoint_when_another_writer_appends_meanwhile(
    event_log: LmdbEventLog,
) -> None:
    def interleave(records: int) -> None:
        if records == 2:
            event_log.append([ObservationAdded(entity="a", content="from elsewhere")])

    done = bulk_import(event_log, ENTITIES, [], batch_size=2, progress=interleave)

    assert (done.entities, done.complete, done.checkpointed) == (2, False, False)
    assert event_log.last_position() == 4  # the first batch, then the other writer's event
    assert event_log.checkpoints.load(GraphProjection.name, GraphProjection.version) is None


@pytest.mark.parametrize(
    ("entities", "relations", "reason"),
    [
        ([*ENTITIES, ("a", "t", [])], [], "each entity once"),
        (ENTITIES, [(0, 3, "knows")], "by their index"),
        (ENTITIES, [(-1, 0, "knows")], "by their index"),
        (ENTITIES, [(0, 1, "r"), (0, 1, "r")], "each relation once"),
    ],
)
def test_a_bulk_import_refuses_what_is_not_plain_creations_before_appending(
    event_log: LmdbEventLog,
    entities: list[tuple[str, str, list[str]]],
    relations: list[tuple[int, int, str]],
    reason: str,
) -> None:
    with pytest.raises(ValueError, match=reason):
        bulk_import(event_log, entities, relations, batch_size=2)

    assert event_log.last_position() == 0


def test_relations_given_by_name_too_append_the_events_and_checkpoint_they_do_by_index(
    tmp_path: Path,
) -> None:
    relations = [(0, 2, "knows"), (2, 2, "is"), (1, 0, "knows")]
    named = [
        RelationCreated(from_entity=names[0], to_entity=names[1], relation_type=kind)
        for *names, kind in [("a", "c", "knows"), ("c", "c", "is"), ("b", "a", "knows")]
    ]
    stored = []
    for how, by_name in (("index", None), ("name", named)):
        log = LmdbEventLog.open(tmp_path / how, node_id="n1")
        try:
            done = bulk_import(log, ENTITIES, relations, batch_size=2, named=by_name)
            assert done.checkpointed
            found = log.checkpoints.load(GraphProjection.name, GraphProjection.version)
            assert found is not None
            folded = GraphProjection()
            folded.apply_all(log.read_from(1))
            assert bytes(found.payload) == folded.to_snapshot()
            stored.append([envelope.event for envelope in log.read_from(1)])
        finally:
            log.close()

    assert stored[0] == stored[1]
    assert stored[0][-3:] == named


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_a_bulk_import_writes_the_graphs_image_forked_or_not(
    event_log: LmdbEventLog, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    """On Linux a child encodes it beside the appends; elsewhere the import encodes it after
    its checkpoint: the same image either way, the fold's."""
    monkeypatch.setattr(graph_images.sys, "platform", platform)
    bulk_import(event_log, ENTITIES, [(0, 2, "knows"), (2, 2, "is")], batch_size=2)
    folded = GraphProjection()
    folded.apply_all(event_log.read_from(1))
    log_id, _, tip = event_log.checkpoints.anchor()
    assert tip is not None
    written = (Path(event_log.path) / IMAGE_FILE).read_bytes()
    assert written == encode_image(folded, log_id=log_id, tip=tip)
