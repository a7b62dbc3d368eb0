"""Hooks: before-hooks see a command and its events and may veto it; after-hooks see committed
events only, never a replay, and their failures change nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from actors.commands import (
    CommitTransaction,
    CreateEntities,
    CreateRelations,
    EntityInput,
    RelationInput,
)
from actors.errors import EntityNotFoundError
from actors.hooks import HookEvent, Hooks, HookVetoError, operation_of
from eventstore.events import EntityCreated, RelationCreated
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings


class Recorder:
    def __init__(self) -> None:
        self.seen: list[HookEvent] = []

    def __call__(self, event: HookEvent) -> None:
        self.seen.append(event)

    def names(self) -> list[str]:
        return [e.name for e in self.seen]


def create(*names: str) -> CreateEntities:
    return CreateEntities([EntityInput(n, "person", []) for n in names])


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def app(tmp_path: Path, recorder: Recorder) -> Iterator[App]:
    started = start_actors(
        Settings(data_dir=tmp_path), InMemoryEventLog(node_id="n1"), hooks=Hooks([recorder])
    )
    yield started
    stop_actors(started)


def test_hooks_see_the_seed_event_names_before_and_after_a_command(
    app: App, recorder: Recorder
) -> None:
    app.graph.execute_blocking(create("Alice"))

    assert recorder.names() == ["beforeAddNodes", "afterAddNodes"]
    before, after = recorder.seen
    assert before.events == (EntityCreated(name="Alice", entity_type="person"),)
    assert before.envelopes == ()
    assert [e.event for e in after.envelopes] == list(before.events)
    assert after.envelopes[0].position == 1


def test_a_before_hook_vetoes_a_command_and_nothing_is_written(app: App) -> None:
    def no_bob(event: HookEvent) -> None:
        if event.phase == "before" and any(
            isinstance(e, EntityCreated) and e.name == "Bob" for e in event.events
        ):
            raise HookVetoError("Bob is not allowed here; pick another name.")

    app.hooks.add(no_bob)

    with pytest.raises(HookVetoError, match="Bob is not allowed"):
        app.graph.execute_blocking(create("Bob"))

    assert app.event_log.last_position() == 0
    app.graph.execute_blocking(create("Carol"))
    assert app.graph.query_blocking(lambda g: g.has_entity("Carol"))


def test_a_before_hook_that_breaks_vetoes_the_command_with_a_clear_error(app: App) -> None:
    def broken(event: HookEvent) -> None:
        raise RuntimeError("boom")

    app.hooks.add(broken)

    with pytest.raises(HookVetoError, match=r"beforeAddNodes hook .*broken.* failed"):
        app.graph.execute_blocking(create("Alice"))
    assert app.event_log.last_position() == 0


def test_a_failing_after_hook_is_logged_and_the_write_stands(app: App) -> None:
    def broken(event: HookEvent) -> None:
        if event.phase == "after":
            raise RuntimeError("after boom")

    app.hooks.add(broken)

    with capture_logs() as logs:
        app.graph.execute_blocking(create("Alice"))

    assert app.graph.query_blocking(lambda g: g.has_entity("Alice"))
    assert any(entry["event"] == "after_hook_failed" for entry in logs)


def test_a_rejected_command_runs_no_hook(app: App, recorder: Recorder) -> None:
    with pytest.raises(EntityNotFoundError):
        app.graph.execute_blocking(CreateRelations([RelationInput("a", "b", "knows")]))
    assert recorder.seen == []


def test_after_hooks_never_run_on_replay(tmp_path: Path, recorder: Recorder) -> None:
    event_log = InMemoryEventLog(node_id="n1")
    first = start_actors(Settings(data_dir=tmp_path), event_log)
    first.graph.execute_blocking(create("Alice", "Bob"))
    stop_actors(first)

    second = start_actors(Settings(data_dir=tmp_path), event_log, hooks=Hooks([recorder]))
    try:
        assert second.graph.query_blocking(lambda g: g.entity_count()) == 2
    finally:
        stop_actors(second)
    assert recorder.seen == []


def test_a_transaction_runs_hooks_per_step_then_for_the_commit(
    app: App, recorder: Recorder
) -> None:
    steps = [create("A", "B"), CreateRelations([RelationInput("A", "B", "knows")])]
    app.graph.execute_blocking(CommitTransaction(steps))

    assert recorder.names() == [
        "beforeAddNodes",
        "beforeAddEdges",
        "beforeCommit",
        "afterAddNodes",
        "afterAddEdges",
        "afterCommit",
    ]
    after_edges = recorder.seen[4]
    assert [type(e.event) for e in after_edges.envelopes] == [RelationCreated]
    assert len(recorder.seen[5].envelopes) == 3


def test_commands_of_both_families_map_to_the_seed_operations() -> None:
    assert operation_of(create("A")) == "AddNodes"
    assert operation_of(CreateRelations([])) == "AddEdges"
    assert operation_of(CommitTransaction([])) == "Commit"
