"""History records: envelopes as dicts with their transaction's cause, read back by position,
and the read_history tool answering from the history index and the log."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

from actors.gateway import GraphGateway
from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    Cause,
    DecayApplied,
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntitySplit,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    SchemaRegistered,
    SchemaRetired,
)
from eventstore.hlc import stamp_of
from eventstore.memory_log import InMemoryEventLog
from graphmem.history import (
    Causes,
    entity_history,
    event_fields,
    iso_time,
    read_positions,
    record,
    summary,
)
from graphmem.limits import InputLimits
from graphmem.tools.base import ToolContext, ToolInputError, ToolOutcome
from graphmem.tools.history_tools import READ_HISTORY, read_history
from projections.history import EVENT_TAGS, HistoryProjection

CREATE = Cause(tool="create_entities", client="claude-code", session="s1")
RELATE = Cause(tool="create_relations", client="claude-code")


class CountingLog:
    """An in-memory log that counts the reads made through it."""

    def __init__(self, log: InMemoryEventLog) -> None:
        self.log = log
        self.reads_from: list[int] = []
        self.reads_origin: list[tuple[str, int, int | None]] = []

    def read_from(self, position: int) -> Iterator[Envelope]:
        self.reads_from.append(position)
        return self.log.read_from(position)

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]:
        self.reads_origin.append((origin, from_seq, to_seq))
        return self.log.read_origin(origin, from_seq, to_seq)


def memory_log() -> InMemoryEventLog:
    log = InMemoryEventLog(node_id="n1")
    log.append(
        [
            EntityCreated(name="Alice", entity_type="person"),
            ObservationAdded(entity="Alice", content="likes tea"),
            EntityCreated(name="Bob", entity_type="person"),
        ],
        CREATE,
    )
    log.append(
        [RelationCreated(from_entity="Alice", to_entity="Bob", relation_type="knows")], RELATE
    )
    log.append([EntityDeleted(name="Alice")])  # no cause: written by a one-shot command
    return log


def index_of(log: InMemoryEventLog) -> HistoryProjection:
    history = HistoryProjection()
    history.apply_all(log.read_from(1))
    return history


# --- records -------------------------------------------------------------------------------------


def test_a_record_says_where_when_and_why_an_event_was_written() -> None:
    envelope = Envelope(
        position=7,
        origin="n1",
        origin_seq=12,
        hlc=stamp_of(1_735_689_600_123, 3),
        tx=11,
        event=ObservationAdded(entity="Alice", content="likes tea"),
    )

    assert record(envelope, CREATE) == {
        "position": 7,
        "time": "2025-01-01T00:00:00.123Z",
        "hlc": stamp_of(1_735_689_600_123, 3),
        "node": "n1",
        "seq": 12,
        "transaction": "n1:11",
        "cause": {"tool": "create_entities", "client": "claude-code", "session": "s1"},
        "event": "ObservationAdded",
        "fields": {"entityName": "Alice", "content": "likes tea"},
    }
    assert record(envelope, None)["cause"] is None


def test_event_fields_use_the_official_tools_names_and_leave_out_what_says_nothing() -> None:
    created = RelationCreated(from_entity="A", to_entity="B", relation_type="knows")
    updated = RelationUpdated(from_entity="A", to_entity="B", relation_type="knows", weight=0.5)

    assert event_fields(created) == {"from": "A", "to": "B", "relationType": "knows", "weight": 1.0}
    assert event_fields(updated) == {"from": "A", "to": "B", "relationType": "knows", "weight": 0.5}
    assert event_fields(EntityRenamed(old_name="A", new_name="B")) == {
        "oldName": "A",
        "newName": "B",
    }
    assert event_fields(EntityCreated(name="A", entity_type="t")) == {
        "name": "A",
        "entityType": "t",
    }


def test_times_are_utc_iso_8601_to_the_millisecond() -> None:
    assert iso_time(stamp_of(0)) == "1970-01-01T00:00:00.000Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", iso_time(stamp_of(10**12)))


def test_a_summary_is_one_line_per_event() -> None:
    assert summary(EntityCreated(name="A", entity_type="t")) == "EntityCreated A (t)"
    assert summary(ObservationAdded(entity="A", content="two\nlines")) == (
        "ObservationAdded A: 'two lines'"
    )
    assert summary(RelationCreated(from_entity="A", to_entity="B", relation_type="r")) == (
        "RelationCreated A -[r]-> B weight=1"
    )
    assert summary(EntityRenamed(old_name="A", new_name="B")) == "EntityRenamed A to B"


# --- reading back --------------------------------------------------------------------------------


def test_positions_close_together_are_read_in_one_pass_and_far_apart_separately() -> None:
    log = InMemoryEventLog(node_id="n1")
    log.append([EntityCreated(name=f"e{i}", entity_type="t") for i in range(1000)])
    counting = CountingLog(log)

    found = read_positions(counting, [900, 3, 5, 100, 5])

    assert [e.position for e in found] == [3, 5, 100, 900]
    assert counting.reads_from == [3, 900]


def test_a_cause_is_taken_from_the_first_event_of_its_transaction() -> None:
    log = memory_log()
    counting = CountingLog(log)
    envelopes = list(log.read_from(1))
    causes = Causes(counting)

    assert causes.of(envelopes[0]) == CREATE  # the first carries it
    assert causes.of(envelopes[2]) == CREATE  # read by origin, once
    assert causes.of(envelopes[1]) == CREATE
    assert counting.reads_origin == [("n1", 1, 1)]
    assert causes.of(envelopes[4]) is None


def test_a_reader_going_through_the_log_finds_causes_on_the_way() -> None:
    log = memory_log()
    counting = CountingLog(log)
    causes = Causes(counting)

    found = []
    for envelope in log.read_from(1):
        causes.note(envelope)
        found.append(causes.of(envelope))

    assert found == [CREATE, CREATE, CREATE, RELATE, None]
    assert counting.reads_origin == []


def test_an_entity_history_lists_its_events_with_causes_in_log_order() -> None:
    log = memory_log()

    page = entity_history(index_of(log), log, "Alice")

    assert page is not None
    assert page.total == 4
    assert [
        (e["position"], e["event"], e["cause"] and e["cause"]["tool"]) for e in page.events
    ] == [
        (1, "EntityCreated", "create_entities"),
        (2, "ObservationAdded", "create_entities"),
        (4, "RelationCreated", "create_relations"),
        (5, "EntityDeleted", None),
    ]


def test_a_limit_keeps_the_newest_events_and_total_counts_them_all() -> None:
    log = memory_log()
    counting = CountingLog(log)

    page = entity_history(index_of(log), counting, "Alice", limit=2, relations=False)

    assert page is not None
    assert (page.total, [e["position"] for e in page.events]) == (3, [2, 5])
    # The cause of position 2 came from its transaction's first event, read with the batch.
    assert page.events[0]["cause"]["client"] == "claude-code"
    assert counting.reads_origin == []


def test_a_name_no_event_touched_has_no_history() -> None:
    log = memory_log()

    assert entity_history(index_of(log), log, "Nobody") is None


# --- the tool, in process ------------------------------------------------------------------------


class FakeGraph:
    """Answers query_models with the given models, as the writer would."""

    timeout = 10.0

    def __init__(self, models: Any) -> None:
        self.models = models

    async def query_models(self, query: Callable[[Any], Any]) -> Any:
        return query(self.models)


def call(log: InMemoryEventLog, arguments: dict[str, Any]) -> ToolOutcome:
    models = SimpleNamespace(history=index_of(log), event_log=log)
    ctx = ToolContext(
        cast(GraphGateway, FakeGraph(models)), InputLimits(), Cause(tool="read_history")
    )
    return asyncio.run(read_history(ctx, arguments))


def test_read_history_answers_name_events_and_total() -> None:
    outcome = call(memory_log(), {"name": "Alice", "includeObservations": False, "limit": 2})

    assert not outcome.is_error
    assert outcome.structured is not None
    assert outcome.structured["name"] == "Alice"
    assert outcome.structured["total"] == 3
    assert [e["event"] for e in outcome.structured["events"]] == [
        "RelationCreated",
        "EntityDeleted",
    ]


def test_read_history_filters_by_event_type() -> None:
    outcome = call(memory_log(), {"name": "Bob", "eventTypes": ["EntityCreated"]})

    assert outcome.structured is not None
    assert [e["position"] for e in outcome.structured["events"]] == [3]


def test_read_history_of_an_unknown_name_says_what_to_do() -> None:
    outcome = call(memory_log(), {"name": "Nobody"})

    assert outcome.is_error
    assert outcome.texts == [
        "No history for Nobody: no event ever touched it. Check the name with search_nodes."
    ]


def test_read_history_refuses_an_unknown_event_type() -> None:
    with pytest.raises(ToolInputError, match="eventTypes\\[0\\] is 'Nope'"):
        call(memory_log(), {"name": "Alice", "eventTypes": ["Nope"]})


def test_read_history_is_read_only_and_lists_every_event_type() -> None:
    annotations = READ_HISTORY.annotations
    assert annotations is not None and annotations.read_only_hint
    items = READ_HISTORY.input_schema["properties"]["eventTypes"]["items"]
    assert items["enum"] == list(EVENT_TAGS)


def test_every_event_type_has_a_summary_and_fields() -> None:
    samples: list[AnyEvent] = [
        EntityCreated(name="A", entity_type="t"),
        EntityUpdated(name="A", entity_type="u"),
        EntityDeleted(name="A"),
        ObservationAdded(entity="A", content="x"),
        ObservationDeleted(entity="A", content="x"),
        RelationCreated(from_entity="A", to_entity="B", relation_type="r"),
        RelationUpdated(from_entity="A", to_entity="B", relation_type="r"),
        RelationDeleted(from_entity="A", to_entity="B", relation_type="r"),
        SchemaRegistered(type_name="t", schema_json="{}", digest="d"),
        SchemaRetired(type_name="t"),
        EntitiesMerged(sources=["A"], target="B", moved_observations=["x"]),
        EntitySplit(source="B", targets=["A"]),
        EntityRenamed(old_name="A", new_name="B"),
        DecayApplied(at=1, rate=0.5),
        AuditRecorded(action="note", detail={"entity": "A"}),
    ]

    assert sorted(type(e).__name__ for e in samples) == sorted(EVENT_TAGS)
    for event in samples:
        assert summary(event).startswith(type(event).__name__)
        assert "\n" not in summary(event)
        assert all("_" not in key for key in event_fields(event))
