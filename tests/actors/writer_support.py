"""Driving a GraphWriterActor in tests: a blocking client, sample writes, a gated log and the
graph a log folds to."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from structlog.testing import capture_logs

from actors.bridge import BlockingReply
from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    EntityInput,
    ObservationInput,
    RelationInput,
)
from actors.graph_writer import Ask, AskModels, Execute, GraphWriterActor, Rebuild
from actors.read_models import ReadModels
from actors.rebuild import RebuildResult
from eventstore.log import EventLog
from projections.graph import GraphProjection, GraphSnapshot

T = TypeVar("T")
WAIT = 10.0


class Writer:
    """One GraphWriterActor on a log, driven the way the gateway drives it."""

    def __init__(self, event_log: EventLog, **options: Any) -> None:
        self.ref = GraphWriterActor.start(event_log, **options)

    def run(self, command: Command) -> Any:
        reply: BlockingReply[Any] = BlockingReply()
        self.ref.tell(Execute(command, None, reply))
        return reply.wait(WAIT)

    def ask(self, query: Callable[[GraphProjection], T]) -> T:
        reply: BlockingReply[Any] = BlockingReply()
        self.ref.tell(Ask(query, reply))
        result: T = reply.wait(WAIT)
        return result

    def ask_models(self, query: Callable[[ReadModels], T]) -> T:
        reply: BlockingReply[Any] = BlockingReply()
        self.ref.tell(AskModels(query, reply))
        result: T = reply.wait(WAIT)
        return result

    def rebuild(self) -> BlockingReply[RebuildResult]:
        reply: BlockingReply[RebuildResult] = BlockingReply()
        self.ref.tell(Rebuild(reply))
        return reply

    def stop(self) -> None:
        self.ref.stop(block=True, timeout=WAIT)


def people(*names: str) -> CreateEntities:
    return CreateEntities([EntityInput(name, "person", [f"{name} was here"]) for name in names])


def write_some(writer: Writer, *names: str) -> None:
    """`names` as people, a relation from the first to the last, and the last likes tea."""
    writer.run(people(*names))
    writer.run(CreateRelations([RelationInput(names[0], names[-1], "knows")]))
    writer.run(AddObservations([ObservationInput(names[-1], ["likes tea", "likes tea"])]))


def first_answer(event_log: EventLog, **options: Any) -> tuple[GraphSnapshot, list[Any]]:
    """The graph a writer just started answers with, and what it logged until it stopped."""
    with capture_logs() as logs:
        writer = Writer(event_log, **options)
        try:
            answered = writer.ask(lambda g: g.snapshot())
        finally:
            writer.stop()
    return answered, logs


def folded(event_log: EventLog) -> GraphSnapshot:
    """The graph the whole log folds to, without a writer."""
    graph = GraphProjection()
    graph.apply_all(event_log.read_from(1))
    return graph.snapshot()


def events_of(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


class GatedReads:
    """Wraps a log so that reads from the rebuild's worker thread wait for the test's gate."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.reading = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_from(self, position: int) -> Iterator[Any]:
        if threading.current_thread().name == "graphmem-rebuild":
            self.reading.set()
            assert self.gate.wait(WAIT), "the test never opened the gate"
        return self.inner.read_from(position)
