"""GraphWriterActor checkpoints: start from the newest valid one, save them as the log grows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from structlog.testing import capture_logs

from actors.bridge import BlockingReply
from actors.commands import (
    AddObservations,
    CreateRelations,
    ObservationInput,
    RelationInput,
)
from eventstore.checkpoints import encode_record
from eventstore.events import EntityCreated, ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, EventLog, LogError, LogTransaction
from projections import search as search_module
from projections.graph import GraphProjection, GraphSnapshot
from tests.actors.writer_support import WAIT, Writer, events_of, first_answer, folded, people
from tests.checkpoint_records import put_raw_record, raw_record

T = TypeVar("T")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


WRITTEN = 8  # events write_some appends


def write_some(writer: Writer) -> None:
    writer.run(people("Alice", "Bob", "Carol"))
    writer.run(CreateRelations([RelationInput("Alice", "Bob", "knows")]))
    writer.run(AddObservations([ObservationInput("Bob", ["likes tea"])]))


def write_and_stop(event_log: EventLog, **options: Any) -> None:
    """write_some by a writer that then stops, saving its checkpoints."""
    writer = Writer(event_log, **options)
    write_some(writer)
    writer.stop()


def answers(writer: Writer) -> tuple[GraphSnapshot, list[str], int]:
    return (
        writer.ask(lambda g: g.snapshot()),
        writer.ask_models(lambda m: m.search.search(m.graph, "tea")),
        writer.ask_models(lambda m: m.conflicts.count()),
    )


def test_a_restart_loads_the_checkpoint_saved_on_stop_and_answers_the_same(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        first = Writer(event_log)
        write_some(first)
        before = answers(first)
        with capture_logs() as saved:
            first.stop()

        with capture_logs() as loaded:
            second = Writer(event_log)
            after = answers(second)
        second.stop()

    [save] = events_of(saved, "checkpoint_saved")
    assert save["position"] == WRITTEN and save["bytes"] > 0
    assert [(e["checkpoint"], e["position"]) for e in events_of(loaded, "checkpoint_loaded")] == [
        ("graph", WRITTEN),
        ("schemas", WRITTEN),
        ("conflicts", WRITTEN),  # read by answers(), so saved on stop too
    ]
    assert after == before


def test_events_appended_after_the_checkpoint_are_caught_up_from_the_log(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)
        event_log.append(
            [
                EntityCreated(name="Dave", entity_type="person"),
                ObservationAdded(entity="Bob", content="joined later"),
            ]
        )

        second = Writer(event_log)
        observations = second.ask(lambda g: g.observations("Bob"))
        found = second.ask_models(lambda m: m.search.search(m.graph, "later"))
        snapshot = second.ask(lambda g: g.snapshot())
        second.stop()

        assert observations == ["Bob was here", "likes tea", "joined later"]
        assert found == ["Bob"]
        assert snapshot == folded(event_log)


def test_checkpoints_are_saved_as_the_log_grows_and_kept_bounded(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        writer = Writer(event_log, checkpoint_every=4, checkpoints_kept=3)
        with capture_logs() as logs:
            for i in range(12):
                writer.run(people(f"p{i}"))  # two events each
            writer.stop()

        saves = events_of(logs, "checkpoint_saved")
        graph_positions = [e.position for e in event_log.checkpoints.entries("graph")]

    # Every interval when idle, every other one at worst (a command already queued).
    assert len(saves) >= 3
    assert all(save["position"] % 2 == 0 for save in saves)
    assert len(graph_positions) == 3
    assert graph_positions[-1] == 24


def test_a_conflict_view_that_was_used_is_checkpointed_and_restored(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        first = Writer(event_log)
        write_some(first)
        assert first.ask_models(lambda m: m.conflicts.position) == WRITTEN
        first.stop()

        with capture_logs() as logs:
            second = Writer(event_log)
            count = second.ask_models(lambda m: m.conflicts.count())
        second.stop()

    assert count == 0
    loaded = [e["checkpoint"] for e in events_of(logs, "checkpoint_loaded")]
    assert loaded == ["graph", "schemas", "conflicts"]


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "foreign version", "past end"])
def test_a_bad_checkpoint_is_ignored_and_the_model_rebuilt_from_the_log(
    data_dir: Path, damage: str
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)
        store = event_log.checkpoints
        record = raw_record(event_log, "graph", WRITTEN) or b""
        store.delete("graph")
        if damage == "flipped byte":
            flipped = bytearray(record)
            flipped[len(flipped) // 2] ^= 0x40
            put_raw_record(event_log, "graph", WRITTEN, bytes(flipped))
        elif damage == "truncated":
            put_raw_record(event_log, "graph", WRITTEN, record[: len(record) - 5])
        elif damage == "foreign version":
            store.save(Checkpoint("graph", GraphProjection.version + 1, WRITTEN, b"\x90"))
        else:
            log_id = event_log._require_open().stored_node_id
            fake = encode_record(Checkpoint("graph", 1, 99, b"\x90"), log_id=log_id, tip=0)
            put_raw_record(event_log, "graph", 99, fake)

        snapshot, logs = first_answer(event_log)

        assert snapshot == folded(event_log)
        assert events_of(logs, "checkpoint_loaded") == []


def test_a_snapshot_that_does_not_restore_is_passed_over_for_an_older_one(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)
        event_log.checkpoints.save(
            Checkpoint("graph", GraphProjection.version, WRITTEN, b"\x01\x02")
        )

        snapshot, logs = first_answer(event_log)

        assert snapshot == folded(event_log)
        assert [e["checkpoint"] for e in events_of(logs, "checkpoint_unusable")] == ["graph"]


class BrokenCheckpoints:
    def save(self, *items: Checkpoint, retention: object = None, abandoned: object = None) -> int:
        raise LogError("disk full")

    def load(self, name: str, version: int, *, at_or_before: int | None = None) -> None:
        raise LogError("unreadable")


class LogWithBrokenCheckpoints:
    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.checkpoints = BrokenCheckpoints()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_failing_checkpoints_are_logged_and_never_affect_writes(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        broken = LogWithBrokenCheckpoints(event_log)
        with capture_logs() as logs:
            writer = Writer(broken, checkpoint_every=2)  # type: ignore[arg-type]
            write_some(writer)
            writer.run(people("Dave"))
            snapshot = writer.ask(lambda g: g.snapshot())
            writer.stop()

        assert snapshot == folded(event_log)
    assert events_of(logs, "checkpoint_unusable")
    failures = events_of(logs, "checkpoint_save_failed")
    assert 1 <= len(failures) <= 3  # retried once per interval, not after every message


class FailingCommitLog:
    """Runs the transaction function, then fails the commit: the model saw what never was."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.fail = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        if not self.fail:
            return self.inner.transact(fn)

        def doomed(txn: LogTransaction) -> T:
            fn(txn)
            raise LogError("commit failed")

        return self.inner.transact(doomed)


def test_a_model_holding_uncommitted_events_is_never_saved(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        failing = FailingCommitLog(event_log)
        first = Writer(failing)  # type: ignore[arg-type]
        write_some(first)
        failing.fail = True
        with pytest.raises(LogError):
            first.run(people("Ghost"))
        first.stop()

        second = Writer(event_log)
        has_ghost = second.ask(lambda g: g.has_entity("Ghost"))
        second.stop()

        assert not has_ghost
        assert [e.position for e in event_log.checkpoints.entries("graph")] == [WRITTEN]


def test_a_model_dropped_inside_a_write_goes_back_to_the_newest_checkpoint(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        failing = FailingCommitLog(event_log)
        writer = Writer(failing, checkpoint_every=2)  # type: ignore[arg-type]
        write_some(writer)
        failing.fail = True
        with pytest.raises(LogError):
            writer.run(people("Ghost"))
        failing.fail = False

        with capture_logs() as logs:  # decided in a write transaction that first resets
            writer.run(people("Dave"))
        snapshot = writer.ask(lambda g: g.snapshot())
        writer.stop()

        assert snapshot == folded(event_log)
        assert not any(e.name == "Ghost" for e in snapshot.entities)
    # Graph and schemas, from whichever checkpoint the writer had saved by then.
    loaded = [(e["checkpoint"], e["position"]) for e in events_of(logs, "checkpoint_loaded")]
    assert [name for name, _ in loaded] == ["graph", "schemas"]
    assert 0 < loaded[0][1] == loaded[1][1] <= WRITTEN


def test_checkpoints_can_be_turned_off(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log, checkpoint_every=None)

        assert event_log.checkpoints.entries() == []


def test_a_long_start_up_fold_is_checkpointed_right_after_start(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t") for i in range(30)])
        with capture_logs() as logs:
            writer = Writer(event_log, checkpoint_every=10)
            # Overdue (three intervals): saved after the first message, before the second.
            writer.ask(lambda g: g.entity_count())
            writer.ask(lambda g: g.entity_count())
        saves = events_of(logs, "checkpoint_saved")
        writer.stop()

    assert [save["position"] for save in saves] == [30]


class HeldCheckpoints:
    """The log's checkpoint store, with saves held until the test opens the gate."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.saving = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner.checkpoints, name)

    def save(self, *items: Checkpoint, retention: Any = None, abandoned: Any = None) -> int:
        self.saving.set()
        assert self.gate.wait(WAIT), "the test never opened the gate"
        return self.inner.checkpoints.save(*items, retention=retention, abandoned=abandoned)


class HeldCheckpointLog:
    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.checkpoints = HeldCheckpoints(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_start_up_checkpoint_is_saved_before_the_writer_reports_loaded(
    data_dir: Path,
) -> None:
    # At 1,000,000 entities the save after the start-up fold took 39 s (more under load):
    # queued behind `ready`, it held the start-up's next requests past their 60 s bound and
    # the server exited before its handshake. Inside the load, the load's bound covers it.
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t") for i in range(30)])
        held = HeldCheckpointLog(event_log)
        ready: BlockingReply[None] = BlockingReply()
        writer = Writer(cast(EventLog, held), checkpoint_every=10, ready=ready)
        try:
            try:
                assert held.checkpoints.saving.wait(WAIT)
                assert not ready.future.done(), "loaded was reported with the checkpoint unsaved"
            finally:
                held.checkpoints.gate.set()
            ready.wait(WAIT)
            assert event_log.checkpoints.entries("graph")[-1].position == 30
        finally:
            writer.stop()


def test_stopping_an_unchanged_writer_saves_nothing_new(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)
        _, logs = first_answer(event_log)

    assert events_of(logs, "checkpoint_saved") == []


# --- the search index, warmed while idle ------------------------------------------------------


def test_a_restored_search_index_is_built_while_idle_a_step_at_a_time(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_module, "WARM_BUDGET", 1)  # a step per entity
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)  # with a checkpoint, which the next start restores
        warm_steps = 0
        original = search_module.SearchProjection.warm

        def counted(self: search_module.SearchProjection, *args: Any) -> bool:
            nonlocal warm_steps
            warm_steps += 1
            return original(self, *args)

        monkeypatch.setattr(search_module.SearchProjection, "warm", counted)
        writer = Writer(event_log)
        try:
            # Each request queues behind the step then pending, which queues the next behind
            # it: the index gets built between requests, and none of them searched.
            polls = 0
            while not writer.ask_models(lambda m: m.search.warmed):
                polls += 1
                assert polls < 50, "the index was never built while idle"
            assert warm_steps > 3  # three entities, a step each, then the filter
            found = writer.ask_models(lambda m: m.search.search(m.graph, "tea"))
            assert found == ["Bob"]
        finally:
            writer.stop()


def test_a_command_sent_as_the_writer_starts_is_committed_whatever_it_queues_behind(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        write_and_stop(event_log)
        for _ in range(5):  # the start's own messages (a warm-up step) may come first or not
            writer = Writer(event_log)
            try:
                writer.run(people(f"Dan{_}"))  # answered, not held until another message
            finally:
                writer.stop()
