"""Rebuilding read models from the log: folds, checkpoint checks, and the writer's background
rebuild (old models serve until the new ones have caught up)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest
from structlog.testing import capture_logs

from actors.catch_up import CatchUpCancelledError
from actors.commands import DeleteEntities
from actors.read_models import ReadModels
from actors.rebuild import rebuild_checkpoints
from eventstore.events import EntityCreated, SchemaRegistered, SchemaRetired
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from eventstore.memory_log import InMemoryEventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection
from tests.actors.writer_support import WAIT, GatedReads, Writer, folded, people, write_some


def schema_event(type_name: str) -> SchemaRegistered:
    document = f'{{"name": "add_{type_name}", "properties": {{}}}}'
    return SchemaRegistered(type_name=type_name, schema_json=document, digest=type_name)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


# --- folds ---------------------------------------------------------------------------------------


def test_a_fold_of_the_whole_log_equals_each_projection_folded_alone() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    for i in range(30):
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t")])
        if i % 10 == 3:
            event_log.append([schema_event(f"type{i}")])
    event_log.append([SchemaRetired(type_name="type3")])
    reported: list[int] = []

    models = ReadModels.folding(event_log)
    count = models.catch_up(each_chunk=lambda chunk: reported.append(len(chunk)))

    alone_schemas, alone_conflicts = SchemaProjection(), ConflictsProjection()
    alone_schemas.apply_all(event_log.read_from(1))
    alone_conflicts.apply_all(event_log.read_from(1))
    assert count == sum(reported) == event_log.last_position() == models.position
    assert models.graph.snapshot() == folded(event_log)
    assert models.schemas.records() == alone_schemas.records()
    assert models.schemas.revision == alone_schemas.revision
    assert models.conflicts.to_snapshot() == alone_conflicts.to_snapshot()


def test_a_fold_stops_where_asked_and_continues_from_there() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    for i in range(10):
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t")])
    models = ReadModels.folding(event_log, ["graph"])

    assert models.catch_up(upto=4) == 4
    assert models.position == 4
    assert models.graph.entity_names() == ["e0", "e1", "e2", "e3"]
    assert models.catch_up() == 6
    assert models.graph.entity_count() == 10
    assert models.catch_up() == 0


def test_a_cancelled_fold_stops_with_an_error() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    event_log.append([EntityCreated(name="e", entity_type="t")])

    with pytest.raises(CatchUpCancelledError, match="stopped at position 1"):
        ReadModels.folding(event_log).catch_up(cancelled=lambda: True)


def test_an_unknown_projection_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no projection named search"):
        ReadModels.folding(InMemoryEventLog(node_id="n1"), ["graph", "search"])


# --- rebuilding checkpoints -------------------------------------------------------------------


def test_a_rebuild_checks_the_newest_checkpoints_and_saves_fresh_ones(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        writer = Writer(event_log)
        write_some(writer, "Ann", "Bob")
        writer.ask_models(lambda m: m.conflicts.count())  # so the conflict view is saved too
        writer.stop()  # saves checkpoints at the end
        saved_at = event_log.last_position()
        writer = Writer(event_log)
        write_some(writer, "Cy", "Dee")
        incremental = writer.ask(lambda g: g.snapshot())
        writer.ref.stop(block=True, timeout=WAIT)
        event_log.checkpoints.delete("graph", event_log.last_position())
        event_log.checkpoints.save(Checkpoint("graph", GraphProjection.version - 1, 1, b"old"))
        progress: list[int] = []

        report = rebuild_checkpoints(event_log, progress=progress.append)

        end = event_log.last_position()
        assert report.names == ("graph", "schemas", "conflicts")
        assert report.events == sum(progress) == end == report.position
        assert report.mismatches == []
        assert ("graph", saved_at) in report.checked
        assert ("schemas", end) in report.checked
        assert report.events_per_second > 0 and report.saved_bytes > 0
        stored = {(e.name, e.version, e.position) for e in event_log.checkpoints.entries()}
        assert ("graph", GraphProjection.version, end) in stored
        assert ("conflicts", ConflictsProjection.version, end) in stored
        assert ("graph", GraphProjection.version - 1, 1) not in stored  # an older version's
        restored = event_log.checkpoints.load("graph", GraphProjection.version)
        assert restored is not None
        assert GraphProjection.from_snapshot(restored.payload).snapshot() == incremental


def test_a_rebuild_of_one_projection_saves_only_that_one(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.append([EntityCreated(name="e", entity_type="t")])

        report = rebuild_checkpoints(event_log, ["conflicts"])

        assert report.names == ("conflicts",)
        assert [e.name for e in event_log.checkpoints.entries()] == ["conflicts"]


def test_a_checkpoint_that_disagrees_with_the_log_is_reported_and_dropped(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        writer = Writer(event_log, checkpoint_every=None)
        write_some(writer, "Ann", "Bob")
        writer.stop()
        wrong = GraphProjection()  # the graph without its last command: a bug's checkpoint
        wrong.apply_all(e for e in event_log.read_from(1) if e.position < 6)
        wrong.position = 6
        event_log.checkpoints.save(Checkpoint("graph", wrong.version, 6, wrong.to_snapshot()))
        event_log.append([EntityCreated(name="Late", entity_type="t")])

        with capture_logs() as logs:
            report = rebuild_checkpoints(event_log)

        [mismatch] = report.mismatches
        assert (mismatch.name, mismatch.position) == ("graph", 6)
        assert '{"op":"add_observation","entity":"Bob"' in mismatch.detail
        assert [e["event"] for e in logs if e["log_level"] == "error"] == ["checkpoint_mismatch"]
        graph_checkpoints = event_log.checkpoints.entries("graph")
        assert [e.position for e in graph_checkpoints] == [event_log.last_position()]


# --- the writer's background rebuild ----------------------------------------------------------


def test_queries_and_writes_are_served_during_a_rebuild_and_the_new_model_equals_the_old(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as inner:
        gated = GatedReads(inner)
        writer = Writer(gated)  # type: ignore[arg-type]
        try:
            write_some(writer, "Ann", "Bob")
            pending = writer.rebuild()
            assert gated.reading.wait(WAIT)

            # The fold is held at the gate: the old models answer, writes go on.
            assert writer.ask(lambda g: g.entity_count()) == 2
            write_some(writer, "Cy", "Dee", "Ed")
            writer.run(DeleteEntities(["Ann"]))
            incremental = writer.ask(lambda g: g.snapshot())
            searched = writer.ask_models(lambda m: m.search.search(m.graph, "tea"))
            old_graph = writer.ask(lambda g: g)
            gated.gate.set()
            result = pending.wait(WAIT)

            assert result.position == inner.last_position()
            assert result.events == inner.last_position()
            new_graph = writer.ask(lambda g: g)
            assert new_graph is not old_graph
            assert new_graph.snapshot() == incremental == folded(inner)
            assert writer.ask_models(lambda m: m.search.search(m.graph, "tea")) == searched
            assert writer.ask_models(lambda m: m.conflicts.position) == result.position
            writer.run(people("Flo"))
            assert writer.ask(lambda g: g.has_entity("Flo"))
        finally:
            gated.gate.set()
            writer.stop()
        stored = inner.checkpoints.entries("graph")
        assert [e.position for e in stored][-1] == inner.last_position()


def test_requests_during_a_rebuild_share_its_result() -> None:
    gated = GatedReads(InMemoryEventLog(node_id="n1"))
    writer = Writer(gated, checkpoint_every=None)  # type: ignore[arg-type]
    try:
        write_some(writer, "Ann", "Bob")
        first = writer.rebuild()
        assert gated.reading.wait(WAIT)
        second = writer.rebuild()
        gated.gate.set()

        assert first.wait(WAIT) == second.wait(WAIT)
    finally:
        gated.gate.set()
        writer.stop()


def test_a_failed_rebuild_fails_its_request_and_keeps_the_old_models() -> None:
    class FailingReads(GatedReads):
        def read_from(self, position: int) -> Iterator[Any]:
            if threading.current_thread().name == "graphmem-rebuild":
                raise OSError("disk gone")
            return self.inner.read_from(position)

    event_log = FailingReads(InMemoryEventLog(node_id="n1"))
    writer = Writer(event_log, checkpoint_every=None)  # type: ignore[arg-type]
    try:
        write_some(writer, "Ann", "Bob")
        before = writer.ask(lambda g: g)

        with capture_logs() as logs, pytest.raises(OSError, match="disk gone"):
            writer.rebuild().wait(WAIT)

        assert writer.ask(lambda g: g) is before
        assert "rebuild_failed" in [e["event"] for e in logs]
    finally:
        writer.stop()


def test_stopping_the_writer_during_a_rebuild_fails_the_request_and_ends_the_fold() -> None:
    gated = GatedReads(InMemoryEventLog(node_id="n1"))
    writer = Writer(gated, checkpoint_every=None)  # type: ignore[arg-type]
    write_some(writer, "Ann", "Bob")
    pending = writer.rebuild()
    assert gated.reading.wait(WAIT)

    writer.stop()
    gated.gate.set()

    with pytest.raises(pykka.ActorDeadError):
        pending.wait(WAIT)
    [worker] = [t for t in threading.enumerate() if t.name == "graphmem-rebuild"] or [None]
    if worker is not None:
        worker.join(WAIT)
        assert not worker.is_alive()
