"""Stopping while the graph writer saves a checkpoint: bounded, and never under the writer.

At 1,000,000 entities a checkpoint save takes ~40 s: the stop timed out after 10 s, the log
was then closed under the still-saving writer, and `checkpoint_save_failed: the log is closed`
followed. The log is the truth and a checkpoint an optimisation, so a stop now abandons the
save in progress (its transaction aborted) once its budget is spent, skips a final one that
would not fit, and closes nothing before the writer has stopped.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

import pytest
from structlog.testing import capture_logs

from actors import checkpointer as checkpoint_module
from actors.checkpointer import SAVE_PER_LOAD, Checkpointer
from actors.commands import CreateEntities, EntityInput
from actors.stopping import Stopping
from eventstore.events import EntityCreated
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, EventLog
from graphmem import app as app_module
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from projections.graph import GraphProjection

WAIT = 10.0


class HeldCheckpointLog:
    """A log whose checkpoint saves wait until the test opens the gate, and which notes
    whether the graph writer was still alive when it was closed."""

    def __init__(self, inner: LmdbEventLog) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.saving = threading.Event()
        self.checkpoints = self
        self.closed_under_writer: bool | None = None
        self.in_save = False
        self.writer_done: Any = None  # set by the test: whether the writer has stopped

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def save(self, *items: Checkpoint, retention: Any = None, abandoned: Any = None) -> int:
        self.saving.set()
        self.in_save = True
        try:
            assert self.gate.wait(WAIT), "the test never opened the gate"
            return self.inner.checkpoints.save(*items, retention=retention, abandoned=abandoned)
        finally:
            self.in_save = False

    def load(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.checkpoints.load(*args, **kwargs)

    def entries(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.checkpoints.entries(*args, **kwargs)

    def close(self) -> None:
        self.closed_under_writer = self.in_save or not self.writer_done()
        self.inner.close()


def people(*names: str) -> CreateEntities:
    return CreateEntities([EntityInput(name, "person", [f"{name} was here"]) for name in names])


def folded_graph(event_log: LmdbEventLog) -> GraphProjection:
    graph = GraphProjection()
    graph.apply_all(event_log.append([EntityCreated(name="Alice", entity_type="person")]))
    return graph


NAMES = [f"p{i}" for i in range(8)]  # two events each: past checkpoint_every=10


def test_a_stop_during_a_long_checkpoint_abandons_it_and_never_closes_the_log_under_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No budget: the save in progress is abandoned as soon as it goes on, as it would be at
    # 1M entities once the budget is spent.
    monkeypatch.setattr(app_module, "STOP_SAVE_BUDGET", 0.0)
    settings = Settings(data_dir=tmp_path, checkpoint_every=10)
    held = HeldCheckpointLog(LmdbEventLog.open(tmp_path))
    with capture_logs() as logs:
        app = start_actors(settings, cast(EventLog, held))
        held.writer_done = app.stopping.writer_stopped.is_set
        app.graph.execute_blocking(people(*NAMES))  # acknowledged, then a save is due
        assert held.saving.wait(WAIT), "no checkpoint save started"

        stopped: list[bool] = []
        stopper = threading.Thread(target=lambda: stopped.append(stop_actors(app)))
        stopper.start()
        # The writer is inside the save when the stop is asked; it goes on only then.
        assert app.stopping.asked.wait(WAIT)
        held.gate.set()
        stopper.join(WAIT)
        assert not stopper.is_alive(), "the stop did not end within its bound"
        assert stopped == [True]
        held.close()

    assert held.closed_under_writer is False
    assert [e["event"] for e in logs if e["log_level"] == "error"] == []
    assert [e for e in logs if e["event"] == "checkpoint_save_failed"] == []
    # The save in progress is abandoned, and the final one (on stop) skipped: no budget left.
    assert [e["event"] for e in logs if e["event"].startswith("checkpoint_")] == [
        "checkpoint_abandoned",
        "checkpoint_skipped",
    ]
    with LmdbEventLog.open(tmp_path) as event_log:
        assert event_log.checkpoints.entries() == []  # aborted: nothing of it stored
        restarted = start_actors(settings, event_log)
        try:
            names = restarted.graph.query_blocking(lambda g: sorted(g.entity_names()))
        finally:
            assert stop_actors(restarted)
    assert names == sorted(NAMES)


def test_a_stop_skips_a_final_checkpoint_that_would_not_end_before_its_deadline(
    tmp_path: Path,
) -> None:
    stopping = Stopping()
    stopping.last_save_seconds = 40.0  # the last save, at 1M entities
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = folded_graph(event_log)
        checkpointer = Checkpointer(event_log, every=10, stopping=stopping)
        stopping.ask(10.0)
        with capture_logs() as logs:
            checkpointer.save([graph], [], final=True)
        assert event_log.checkpoints.entries() == []
    assert [e["event"] for e in logs] == ["checkpoint_skipped"]


def test_before_a_stop_is_asked_a_save_is_never_skipped_whatever_the_last_one_took(
    tmp_path: Path,
) -> None:
    stopping = Stopping()
    stopping.last_save_seconds = 40.0
    with LmdbEventLog.open(tmp_path) as event_log:
        checkpointer = Checkpointer(event_log, every=10, stopping=stopping)
        graph = folded_graph(event_log)
        with capture_logs() as logs:
            checkpointer.save([graph], [], final=True)
        assert [e.name for e in event_log.checkpoints.entries()] == ["graph"]
    assert [e["event"] for e in logs] == ["checkpoint_saved"]


class SlowClock:
    """time.perf_counter for the checkpointer: every reading is `step` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def test_a_process_that_has_not_saved_yet_guesses_a_save_from_its_load_and_skips_a_long_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restart at 1,000,000 entities: nothing saved yet in this process, so the last save's
    # seconds read 0 and the final save (~100 s) was started at the stop and outlived it.
    with LmdbEventLog.open(tmp_path) as event_log:
        Checkpointer(event_log, every=10).save([folded_graph(event_log)], [], final=True)
    stopping = Stopping()
    with LmdbEventLog.open(tmp_path) as event_log:
        checkpointer = Checkpointer(event_log, every=10, stopping=stopping)
        monkeypatch.setattr(checkpoint_module, "time", SlowClock(step=40.0))
        restored = checkpointer.restore([GraphProjection])
        monkeypatch.undo()
        assert restored is not None
        assert stopping.last_save_seconds == pytest.approx(40.0 * SAVE_PER_LOAD)
        stopping.ask(10.0)
        with capture_logs() as logs:
            checkpointer.save([restored[0][0]], [], final=True)
    assert [e["event"] for e in logs] == ["checkpoint_skipped"]


def test_a_measured_save_replaces_the_guess(tmp_path: Path) -> None:
    stopping = Stopping()
    stopping.last_save_seconds = 60.0  # a guess from a slow load
    with LmdbEventLog.open(tmp_path) as event_log:
        checkpointer = Checkpointer(event_log, every=10, stopping=stopping)
        checkpointer.save([folded_graph(event_log)], [], final=True)
    assert stopping.save_measured
    assert stopping.last_save_seconds < 60.0  # this small graph's real save
