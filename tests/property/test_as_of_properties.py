"""As-of reads are the fold of the log's prefix: for any commands decided into a log, with
checkpoints saved at any positions, the models as of every position equal folding the events up
to it, and every time resolves to the last position written at or before it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate

from hypothesis import given
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
    RelationInput,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from actors.time_travel import GraphModels, TimeTravel, models_at, position_at_time
from eventstore.hlc import HybridLogicalClock, ms_of
from eventstore.log import Checkpoint
from eventstore.memory_log import InMemoryEventLog
from projections.graph import GraphProjection, GraphSnapshot
from projections.search import SearchProjection
from tests.eventstore.backends import SteppingClock

NAMES = st.sampled_from(["A", "B", "C"])
CONTENTS = st.sampled_from(["x", "y", "xy", "\u0130y"])
TYPES = st.sampled_from(["t1", "t2"])
QUERIES = ("x", "y", "t1", "a", "b", "", "\u0130")

COMMANDS: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        CreateEntities,
        st.lists(st.builds(EntityInput, NAMES, TYPES, st.lists(CONTENTS, max_size=2)), max_size=2),
    ),
    st.builds(
        CreateRelations,
        st.lists(st.builds(RelationInput, NAMES, NAMES, st.sampled_from(["r", "s"])), max_size=2),
    ),
    st.builds(
        AddObservations,
        st.lists(st.builds(ObservationInput, NAMES, st.lists(CONTENTS, max_size=2)), max_size=2),
    ),
    st.builds(
        DeleteObservations,
        st.lists(st.builds(ObservationDeletion, NAMES, st.lists(CONTENTS, max_size=2)), max_size=2),
    ),
    st.builds(
        DeleteRelations,
        st.lists(st.builds(RelationInput, NAMES, NAMES, st.sampled_from(["r", "s"])), max_size=2),
    ),
    st.builds(DeleteEntities, st.lists(NAMES, max_size=2)),
)


Seen = dict[int, tuple[GraphSnapshot, dict[str, list[str]]]]
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass
class WriterModels:
    """The writer's kind of models: a search index kept up to date event by event."""

    graph: GraphProjection
    search: SearchProjection


def answers(models: GraphModels) -> tuple[GraphSnapshot, dict[str, list[str]]]:
    return models.graph.snapshot(), {q: models.search.search(models.graph, q) for q in QUERIES}


def written(commands: list[Command], steps_ms: list[int]) -> tuple[InMemoryEventLog, Seen]:
    """The commands decided into a log (each at the next of the clock's readings), and what a
    reader with the writer's incremental models saw after each: position -> (graph, searches)."""
    readings = list(accumulate(steps_ms, initial=START_MS))
    event_log = InMemoryEventLog(clock=HybridLogicalClock(SteppingClock(*readings)))
    graph, search = GraphProjection(), SearchProjection()
    seen: Seen = {0: answers(WriterModels(graph, search))}
    for command in commands:
        try:
            events = decide(graph, command).events
        except CommandRejectedError:
            continue
        envelopes = event_log.append(events)
        graph.apply_all(envelopes)
        search.note(envelopes)
        seen[graph.position] = answers(WriterModels(graph, search))
    return event_log, seen


@given(
    st.lists(COMMANDS, max_size=12),
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.data(),
)
def test_the_models_as_of_any_position_are_the_fold_of_its_prefix(
    commands: list[Command], steps_ms: list[int], data: st.DataObject
) -> None:
    event_log, seen = written(commands, steps_ms)
    envelopes = list(event_log.read_from(1))
    last = len(envelopes)
    saved = data.draw(st.sets(st.integers(1, last), max_size=3)) if last else set()
    for position in saved:
        prefix = GraphProjection()
        prefix.apply_all(envelopes[:position])
        event_log.checkpoints.save(
            Checkpoint(prefix.name, prefix.version, position, prefix.to_snapshot())
        )
    travel = TimeTravel(event_log, cache_size=1)

    for position in range(last + 1):
        prefix = GraphProjection()
        prefix.apply_all(envelopes[:position])
        models = models_at(event_log, position)
        assert models.graph.position == position
        assert models.graph.snapshot() == prefix.snapshot()
        if position in seen:
            assert travel.query(position, answers) == seen[position]


@given(
    st.lists(COMMANDS, min_size=1, max_size=12),
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.integers(-3, 40),
)
def test_a_time_resolves_to_the_last_position_at_or_before_it(
    commands: list[Command], steps_ms: list[int], offset_ms: int
) -> None:
    event_log, _ = written(commands, steps_ms)
    envelopes = list(event_log.read_from(1))
    moment_ms = START_MS + offset_ms
    moment = datetime.fromtimestamp(0, UTC) + timedelta(milliseconds=moment_ms)
    expected = max((e.position for e in envelopes if ms_of(e.hlc) <= moment_ms), default=0)

    assert position_at_time(event_log, moment, len(envelopes)) == expected
    assert TimeTravel(event_log).resolve(moment.isoformat()).position == expected
