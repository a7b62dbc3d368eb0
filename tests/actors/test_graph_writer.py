"""GraphWriterActor: decides, group-commits, applies and publishes; survives failures."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pykka
import pytest

from actors.bridge import BlockingReply
from actors.commands import (
    AddObservations,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    EntityInput,
    ObservationInput,
    RelationInput,
)
from actors.errors import EntityNotFoundError
from actors.graph_writer import Execute
from actors.subscribers import Published
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog, LogTransaction
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings

T = TypeVar("T")
WAIT = 10.0


def alice(*observations: str) -> CreateEntities:
    return CreateEntities(entities=[EntityInput("Alice", "person", list(observations))])


class GatedLog:
    """Wraps a log so the first transaction waits until the test opens the gate."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        self.transactions += 1
        self.entered.set()
        assert self.gate.wait(WAIT), "the test never opened the gate"
        return self.inner.transact(fn)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    event_log = InMemoryEventLog(node_id="n1")
    started = start_actors(Settings(data_dir=tmp_path), event_log)
    yield started
    stop_actors(started)


def test_a_command_is_decided_appended_and_answered(app: App) -> None:
    result = app.graph.execute_blocking(alice("likes tea"))

    assert isinstance(result, CreateEntitiesResult)
    assert [e.name for e in result.created] == ["Alice"]
    assert app.graph.query_blocking(lambda g: g.observations("Alice")) == ["likes tea"]
    assert app.event_log.last_position() == 2


def test_a_rejected_command_writes_nothing_and_says_why(app: App) -> None:
    app.graph.execute_blocking(alice())
    before = app.event_log.last_position()
    command = AddObservations(
        observations=[
            ObservationInput("Alice", ["fine"]),
            ObservationInput("Nobody", ["lost"]),
        ]
    )

    with pytest.raises(EntityNotFoundError, match="Entity with name Nobody not found"):
        app.graph.execute_blocking(command)

    assert app.event_log.last_position() == before
    assert app.graph.query_blocking(lambda g: g.observations("Alice")) == []


def test_commands_queued_during_a_commit_share_the_next_transaction(tmp_path: Path) -> None:
    gated = GatedLog(InMemoryEventLog(node_id="n1"))
    app = start_actors(Settings(data_dir=tmp_path), gated)  # type: ignore[arg-type]
    try:
        writer = app.supervisor.proxy().child("graph_writer").get(timeout=WAIT)
        first: BlockingReply[Any] = BlockingReply()
        writer.tell(Execute(CreateEntities(entities=[EntityInput("e0", "t", [])]), None, first))
        assert gated.entered.wait(WAIT)
        replies: list[BlockingReply[Any]] = []
        for i in range(1, 40):
            reply: BlockingReply[Any] = BlockingReply()
            command = CreateEntities(entities=[EntityInput(f"e{i}", "t", [])])
            writer.tell(Execute(command, None, reply))
            replies.append(reply)
        gated.gate.set()

        results = [r.wait(WAIT) for r in [first, *replies]]

        assert all(len(r.created) == 1 for r in results)
        assert gated.transactions == 2  # the first commit, then all 39 queued behind it
        assert app.graph.query_blocking(lambda g: g.entity_count()) == 40
    finally:
        gated.gate.set()
        stop_actors(app)


def test_subscribers_see_committed_events_and_a_failing_one_changes_nothing(app: App) -> None:
    seen: list[Published] = []

    def broken(_: Published) -> None:
        raise RuntimeError("hook bug")

    app.graph.subscribe(broken)
    app.graph.subscribe(seen.append)

    app.graph.execute_blocking(alice("a", "b"))

    assert [len(p.envelopes) for p in seen] == [3]
    assert seen[0].local
    assert app.graph.query_blocking(lambda g: g.observations("Alice")) == ["a", "b"]


def test_a_rejected_command_publishes_nothing(app: App) -> None:
    seen: list[Published] = []
    app.graph.subscribe(seen.append)
    with pytest.raises(EntityNotFoundError):
        app.graph.execute_blocking(
            CreateRelations(relations=[RelationInput("Alice", "Bob", "knows")])
        )
    assert seen == []


def test_a_failed_writer_is_restarted_and_keeps_serving(app: App) -> None:
    app.graph.execute_blocking(alice("kept"))
    writer = app.supervisor.proxy().child("graph_writer").get(timeout=WAIT)
    # A reply object that cannot be answered makes the actor's handler raise: a crash.
    writer.tell(Execute(CreateEntities(entities=[]), None, None))  # type: ignore[arg-type]
    assert writer.actor_stopped.wait(WAIT)

    result = app.graph.query_blocking(lambda g: g.observations("Alice"))

    assert result == ["kept"]
    assert app.supervisor.proxy().restarts("graph_writer").get(timeout=WAIT) == 1


def test_the_async_bridge_answers_without_blocking_the_loop(app: App) -> None:
    async def scenario() -> tuple[list[str], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.gather(
            *(
                app.graph.execute(CreateEntities(entities=[EntityInput(f"x{i}", "t", [])]))
                for i in range(20)
            )
        )
        names = await app.graph.query(lambda g: [e.name for e in g.entities()])
        task.cancel()
        return names, ticks

    names, ticks = asyncio.run(scenario())

    assert names == [f"x{i}" for i in range(20)]
    assert ticks > 0


def test_a_writer_sees_what_another_writer_on_the_same_dir_appended(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    log_a = LmdbEventLog.open(tmp_path, node_id="aaaa")
    log_b = LmdbEventLog.open(tmp_path, node_id="bbbb")
    app_a = start_actors(settings, log_a)
    app_b = start_actors(settings, log_b)
    try:
        seen: list[Published] = []
        app_b.graph.subscribe(seen.append)
        app_a.graph.execute_blocking(alice("from a"))

        again = app_b.graph.execute_blocking(alice("from b"))

        assert again.skipped == ["Alice"]  # decided against a's write, not a stale view
        assert app_b.graph.query_blocking(lambda g: g.observations("Alice")) == ["from a"]
        assert any(not p.local for p in seen)
    finally:
        stop_actors(app_a)
        stop_actors(app_b)
        log_a.close()
        log_b.close()


def test_a_transaction_retried_after_map_growth_keeps_the_model_exact(tmp_path: Path) -> None:
    event_log = LmdbEventLog.open(tmp_path, map_size=64 * 1024)
    app = start_actors(Settings(data_dir=tmp_path), event_log)
    try:
        for i in range(200):
            app.graph.execute_blocking(
                CreateEntities(entities=[EntityInput(f"e{i}", "t", ["x" * 500, f"obs {i}"])])
            )

        count = app.graph.query_blocking(lambda g: g.entity_count())
        observations = app.graph.query_blocking(lambda g: g.observations("e199"))

        assert count == 200
        assert observations == ["x" * 500, "obs 199"]
        assert event_log.last_position() == 600
    finally:
        stop_actors(app)
        event_log.close()


def test_stopping_leaves_no_actor_thread_behind(tmp_path: Path) -> None:
    app = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog())
    app.graph.execute_blocking(alice())

    stop_actors(app)

    assert pykka.ActorRegistry.get_all() == []
    alive = [t.name for t in threading.enumerate() if not t.daemon and t.is_alive()]
    assert alive == [threading.main_thread().name]
