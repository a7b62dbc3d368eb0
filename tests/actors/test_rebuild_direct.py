"""A rebuild reads the log's plain prefix directly (projections.plain_prefix) and folds only the
rest: on real LMDB logs, the checkpoints `graphmem rebuild` saves and the models a background
rebuild swaps in are, byte for byte, what folding the whole log gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.catch_up import CatchUpCancelledError
from actors.rebuild import fold_fresh, rebuild_checkpoints
from bench.log_data import build_log
from eventstore.events import EntityDeleted, ObservationAdded, RelationUpdated
from eventstore.lmdb_log import LmdbEventLog
from eventstore.lmdb_txn import READ_CHUNK
from eventstore.log import Checkpoint, EventLog
from eventstore.memory_log import InMemoryEventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection

MODELS = (GraphProjection, SchemaProjection, ConflictsProjection)


def folded(event_log: EventLog) -> dict[str, bytes]:
    """Each model's snapshot after folding the whole log, event by event."""
    snapshots = {}
    for model in MODELS:
        projection = model()
        projection.apply_all(list(event_log.read_from(1)))
        snapshots[model.name] = projection.to_snapshot()
    return snapshots


def saved(event_log: EventLog) -> dict[str, bytes]:
    found = {}
    for model in MODELS:
        checkpoint = event_log.checkpoints.load(model.name, model.version)
        assert checkpoint is not None and checkpoint.position == event_log.last_position()
        found[model.name] = bytes(checkpoint.payload)
    return found


def test_rebuilding_a_plain_lmdb_log_saves_the_fold_s_checkpoints_built_directly(
    tmp_path: Path,
) -> None:
    # bench.log_data's mix: relations created twice, names written to before any creation.
    event_log = build_log(tmp_path / "log", 6000, txn_events=1000)
    try:
        end = event_log.last_position()
        progress: list[int] = []
        report = rebuild_checkpoints(event_log, progress=progress.append)
        assert report.direct_events == end  # the whole log, none of it folded
        assert report.events == sum(progress) == end and report.position == end
        assert saved(event_log) == folded(event_log)
    finally:
        event_log.close()


def test_a_rebuild_folds_on_from_the_first_event_that_is_not_plain_and_checks_what_is_stored(
    tmp_path: Path,
) -> None:
    event_log = build_log(tmp_path / "log", 3000, txn_events=1000)
    try:
        middle = event_log.last_position()
        first = next(event_log.read_from(1)).event
        name = getattr(first, "name", "")
        event_log.append([EntityDeleted(name=name)])
        event_log.append([ObservationAdded(entity=name, content="after")])
        event_log.append(
            [RelationUpdated(from_entity=name, to_entity=name, relation_type="knows", weight=0.5)]
        )
        # A stored checkpoint past the prefix's end is compared with the fresh fold there.
        model = GraphProjection()
        model.apply_all(list(event_log.read_from(1)))
        event_log.checkpoints.save(
            Checkpoint(model.name, model.version, model.position, model.to_snapshot())
        )
        report = rebuild_checkpoints(event_log)
        assert report.direct_events == middle
        assert report.mismatches == [] and report.checked == [("graph", model.position)]
        assert saved(event_log) == folded(event_log)
    finally:
        event_log.close()


def test_a_log_that_starts_with_an_event_that_is_not_plain_is_folded_from_the_start() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    event_log.append([EntityDeleted(name="a")])
    event_log.append([ObservationAdded(entity="a", content="x")])
    models, events, direct = fold_fresh(event_log)
    assert direct == 0
    assert events == event_log.last_position() == models.position
    assert {name: p.to_snapshot() for name, p in models.items()} == folded(event_log)


def test_a_fresh_fold_of_a_memory_log_builds_its_plain_prefix_too() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    for i in range(50):
        event_log.append([ObservationAdded(entity=f"e{i % 7}", content=f"c{i % 3}")])
    models, events, direct = fold_fresh(event_log)
    assert direct == events == 50
    assert {name: p.to_snapshot() for name, p in models.items()} == folded(event_log)


def test_a_cancelled_fresh_fold_stops_in_the_plain_prefix(tmp_path: Path) -> None:
    event_log: LmdbEventLog = build_log(tmp_path / "log", 9000, txn_events=3000)
    try:
        with pytest.raises(CatchUpCancelledError):
            fold_fresh(event_log, cancelled=lambda: True)
    finally:
        event_log.close()


def folded_upto(event_log: EventLog, position: int) -> list[Checkpoint]:
    """Each model's checkpoint at `position`, as folding the log up to there saves it."""
    events = [e for e in event_log.read_from(1) if e.position <= position]
    found = []
    for model in MODELS:
        projection = model()
        projection.apply_all(events)
        found.append(Checkpoint(model.name, model.version, position, projection.to_snapshot()))
    return found


# Inside a chunk of stored records, at a chunk's end (READ_CHUNK), at the first record.
@pytest.mark.parametrize("stop", [2500, READ_CHUNK, 1])
def test_stored_checkpoints_inside_a_plain_log_are_checked_by_their_bytes_as_it_is_read(
    tmp_path: Path, stop: int
) -> None:
    # A served store has checkpoints every so often: the rebuild no longer stops there to
    # restore and fold on, it compares what it built at that position and reads on.
    event_log = build_log(tmp_path / "log", 6000, txn_events=1000)
    try:
        end = event_log.last_position()
        event_log.checkpoints.save(*folded_upto(event_log, stop))
        progress: list[int] = []
        report = rebuild_checkpoints(event_log, progress=progress.append)
        assert report.direct_events == end == sum(progress)
        assert report.mismatches == []
        assert sorted(report.checked) == [("conflicts", stop), ("graph", stop), ("schemas", stop)]
        assert saved(event_log) == folded(event_log)
        again = rebuild_checkpoints(event_log)  # now against the checkpoints at the end
        assert again.direct_events == end and again.mismatches == []
        assert sorted(again.checked) == [("conflicts", end), ("graph", end), ("schemas", end)]
    finally:
        event_log.close()


def test_a_stored_checkpoint_that_disagrees_with_the_log_is_found_and_deleted_on_the_direct_path(
    tmp_path: Path,
) -> None:
    event_log = build_log(tmp_path / "log", 4000, txn_events=1000)
    try:
        # The graph at 3000 as the log had it at 2000: a valid checkpoint, of the wrong model.
        early = GraphProjection()
        early.apply_all([e for e in event_log.read_from(1) if e.position <= 2000])
        early.position = 3000
        event_log.checkpoints.save(Checkpoint(early.name, early.version, 3000, early.to_snapshot()))
        report = rebuild_checkpoints(event_log)
        assert report.direct_events == event_log.last_position()
        assert [(m.name, m.position) for m in report.mismatches] == [("graph", 3000)]
        assert "entities" in report.mismatches[0].detail or "changes" in report.mismatches[0].detail
        assert event_log.checkpoints.load(early.name, early.version, at_or_before=3000) is None
        assert saved(event_log) == folded(event_log)
    finally:
        event_log.close()
