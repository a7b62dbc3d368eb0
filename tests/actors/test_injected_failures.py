"""Every multi-step command is all or nothing even when the log fails halfway through it.

A failure is injected inside the log transaction after part of a command's events were
appended: the command fails, nothing of it is in the log or the read model, and the next
command is decided against the graph as it really is. Both log backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from actors.commands import (
    AddEdges,
    AddNodes,
    Command,
    CommitTransaction,
    EdgeInput,
    EdgeTargets,
    EntityMerge,
    EntityUpdate,
    MergeEntities,
    NodeInput,
    PropertyEntry,
    SetNodeProperties,
    UpdateEntities,
)
from eventstore.events import AnyEvent, Cause, Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog, LogTransaction
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from projections.views import GraphSnapshot

T = TypeVar("T")


class InjectedFailure(RuntimeError):
    pass


class HalfAppendingTransaction:
    """Appends the first `keep` events of the next append, then fails."""

    def __init__(self, inner: LogTransaction, keep: int) -> None:
        self._inner = inner
        self._keep = keep

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        self._inner.append(list(events)[: self._keep], cause)
        raise InjectedFailure(f"the disk failed after {self._keep} events")


class FailingLog:
    """A log whose next transaction fails halfway through its first append, when armed."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.keep: int | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        keep, self.keep = self.keep, None
        if keep is None:
            return self.inner.transact(fn)
        return self.inner.transact(lambda txn: fn(HalfAppendingTransaction(txn, keep)))


@pytest.fixture(params=["memory", "lmdb"])
def failing(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[App, FailingLog]]:
    inner: EventLog
    if request.param == "memory":
        inner = InMemoryEventLog(node_id="n1")
    else:
        inner = LmdbEventLog.open(tmp_path / "log", node_id="n1")
    log = FailingLog(inner)
    app = start_actors(Settings(data_dir=tmp_path), log)  # type: ignore[arg-type]
    try:
        yield app, log
    finally:
        stop_actors(app)
        inner.close()


def seed(app: App) -> None:
    app.graph.execute_blocking(
        AddNodes(
            [
                NodeInput("Rivendell", "location", ["Region: Eriador"]),
                NodeInput("Mordor", "location", []),
                NodeInput("Gandalf", "npc", ["Role: Wizard"]),
                NodeInput("Mithrandir", "npc", ["Status: Active"]),
            ]
        )
    )
    app.graph.execute_blocking(AddEdges([EdgeInput("Gandalf", "Rivendell", "located_in")]))


MULTI_STEP: dict[str, Command] = {
    "schema add (node, then its edges)": CommitTransaction(
        [
            AddNodes([NodeInput("Frodo", "npc", ["Role: Hobbit"])]),
            AddEdges([EdgeInput("Frodo", "Rivendell", "located_in")]),
        ]
    ),
    "schema update (metadata and edges)": SetNodeProperties(
        "Gandalf",
        "npc",
        [PropertyEntry("role", "Role: Wanderer")],
        [EdgeTargets("located_in", ["Mordor"])],
    ),
    "rename": UpdateEntities([EntityUpdate("Gandalf", new_name="Gandalf the White")]),
    "merge": MergeEntities([EntityMerge("Mithrandir", "Gandalf")]),
}


@pytest.mark.parametrize("keep", [1, 2])
@pytest.mark.parametrize("label", list(MULTI_STEP))
def test_a_failure_halfway_through_a_multi_step_command_leaves_no_trace(
    failing: tuple[App, FailingLog], label: str, keep: int
) -> None:
    app, log = failing
    seed(app)
    before_position = app.event_log.last_position()
    before: GraphSnapshot = app.graph.query_blocking(lambda g: g.snapshot())

    log.keep = keep
    with pytest.raises(InjectedFailure):
        app.graph.execute_blocking(MULTI_STEP[label])

    assert log.inner.last_position() == before_position
    assert app.graph.query_blocking(lambda g: g.snapshot()) == before
    # The same command succeeds once the log works again: decided against the real graph.
    app.graph.execute_blocking(MULTI_STEP[label])
    assert log.inner.last_position() > before_position
