"""The writer's `before_append` side output (graph_merge's audit line): written with the decided
result after the decision and before the events are appended; refusing it refuses the command
and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actors.bridge import BlockingReply
from actors.commands import (
    AddObservations,
    CommandResult,
    CreateEntities,
    EntityInput,
    ObservationInput,
)
from actors.errors import CommandRejectedError, EntityNotFoundError
from actors.graph_writer import Execute
from eventstore.memory_log import InMemoryEventLog
from tests.actors.writer_support import WAIT, Writer


def send(
    writer: Writer, command: Any, before_append: Callable[[CommandResult], None] | None
) -> BlockingReply[Any]:
    reply: BlockingReply[Any] = BlockingReply()
    writer.ref.tell(Execute(command, None, reply, before_append))
    return reply


def person(name: str) -> CreateEntities:
    return CreateEntities([EntityInput(name, "person", [])])


def test_it_sees_the_decided_result_before_the_events_are_in_the_log() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    writer = Writer(event_log)
    seen: list[tuple[Any, int]] = []
    try:
        reply = send(writer, person("Ann"), lambda r: seen.append((r, event_log.last_position())))
        result = reply.wait(WAIT)
        assert seen == [(result, 0)]
        assert event_log.last_position() == 1
    finally:
        writer.stop()


def test_refusing_it_refuses_only_its_command_and_appends_nothing_of_it() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    writer = Writer(event_log)

    def refuse(_: CommandResult) -> None:
        raise CommandRejectedError("cannot write the side output; nothing was written")

    try:
        refused = send(writer, person("Ann"), refuse)
        accepted = send(writer, person("Bob"), None)
        with pytest.raises(CommandRejectedError, match="side output"):
            refused.wait(WAIT)
        accepted.wait(WAIT)
        assert writer.ask(lambda g: (g.has_entity("Ann"), g.has_entity("Bob"))) == (False, True)
    finally:
        writer.stop()


def test_it_is_not_called_for_a_refused_decision_or_one_without_events() -> None:
    writer = Writer(InMemoryEventLog(node_id="n1"))
    calls: list[Any] = []
    try:
        writer.run(person("Ann"))
        missing = AddObservations([ObservationInput("Nobody", ["x"])])
        with pytest.raises(EntityNotFoundError):
            send(writer, missing, calls.append).wait(WAIT)
        send(writer, person("Ann"), calls.append).wait(WAIT)  # already there: no events
        assert calls == []
    finally:
        writer.stop()
