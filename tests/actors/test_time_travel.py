"""TimeTravel: `as_of` resolved to a log position, and the read models as of it, built from the
nearest checkpoint and the log beside a writer that keeps serving."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from actors.bridge import BlockingReply
from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
    RelationInput,
)
from actors.decide import decide
from actors.graph_writer import Execute, GraphWriterActor
from actors.time_travel import (
    AsOfError,
    AsOfModels,
    AsOfPoint,
    TimeTravel,
    models_at,
    parse_as_of,
)
from eventstore.events import EntityCreated, SchemaRegistered, SchemaRetired
from eventstore.hlc import HybridLogicalClock, ms_of
from eventstore.log import Checkpoint, EventLog
from projections.entity_schema import canonical_json
from projections.graph import GraphProjection, GraphSnapshot
from projections.schema_view import SchemaViewProjection
from projections.schemas import SchemaProjection
from projections.search import SearchProjection
from tests.eventstore.backends import BACKENDS, SteppingClock, open_backend
from tests.helpers import stamp

WAIT = 10.0
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms

STEPS: list[Command] = [
    CreateEntities([EntityInput("Ada", "person", ["likes tea"]), EntityInput("Bob", "person", [])]),
    CreateRelations([RelationInput("Ada", "Bob", "knows")]),
    AddObservations([ObservationInput("Bob", ["plays chess", "likes tea"])]),
    DeleteObservations([ObservationDeletion("Ada", ["likes tea"])]),
    CreateEntities([EntityInput("Cy", "robot", ["beeps"])]),
    DeleteEntities(["Bob"]),
    CreateEntities([EntityInput("Bob", "cat", ["purrs"])]),
]


def step_clock() -> HybridLogicalClock:
    """Step i (from 0) is written at T0 + 1000 * i ms."""
    return HybridLogicalClock(SteppingClock(*(T0 + 1000 * i for i in range(len(STEPS)))))


class Written:
    """A log the STEPS were decided into, with what a reader saw after each step."""

    def __init__(self, event_log: EventLog) -> None:
        self.log = event_log
        self.positions: list[int] = [0]
        self.graphs: dict[int, GraphSnapshot] = {0: GraphProjection().snapshot()}
        self.searches: dict[int, list[str]] = {0: []}
        graph, search = GraphProjection(), SearchProjection()
        for command in STEPS:
            envelopes = event_log.append(decide(graph, command).events)
            graph.apply_all(envelopes)
            search.note(envelopes)
            self.positions.append(graph.position)
            self.graphs[graph.position] = graph.snapshot()
            self.searches[graph.position] = search.search(graph, "tea")

    def prefix(self, position: int) -> GraphProjection:
        graph = GraphProjection()
        graph.apply_all(list(self.log.read_from(1))[:position])
        return graph


@pytest.fixture(params=BACKENDS)
def event_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    opened = open_backend(request.param, tmp_path / "data", clock=step_clock())
    yield opened
    opened.close()


@pytest.fixture
def written(event_log: EventLog) -> Written:
    return Written(event_log)


def snapshot_and_tea(models: AsOfModels) -> tuple[GraphSnapshot, list[str]]:
    return models.graph.snapshot(), models.search.search(models.graph, "tea")


# --- parsing as_of ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (42, 42),
        ("42", 42),
        (" 7 ", 7),
        ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T14:00:00+02:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00.250Z", datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)),
        ("2026-03-01T12:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01 12:00:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_as_of_is_a_position_or_an_iso_time_read_as_utc_when_it_has_no_zone(
    value: object, expected: int | datetime
) -> None:
    assert parse_as_of(value) == expected


@pytest.mark.parametrize(
    "value", [True, -1, "-1", 1.5, "yesterday", "", "2026-13-01", ["2026-03-01"], {"at": 3}]
)
def test_an_unreadable_as_of_is_refused_naming_the_accepted_forms(value: object) -> None:
    with pytest.raises(AsOfError) as raised:
        parse_as_of(value)

    message = str(raised.value)
    assert "log position" in message
    assert "ISO-8601 time" in message


# --- resolving a point -----------------------------------------------------------------------


def test_a_position_past_the_end_of_the_log_is_refused_naming_the_last_one(
    written: Written,
) -> None:
    last = written.positions[-1]

    with pytest.raises(AsOfError, match=f"the last position is {last}"):
        TimeTravel(written.log).resolve(last + 1)


def test_a_position_resolves_to_itself_with_the_time_of_its_event(written: Written) -> None:
    travel = TimeTravel(written.log)

    point = travel.resolve(written.positions[2])

    assert point.position == written.positions[2]
    assert point.time == "2026-01-01T00:00:01.000Z"
    assert point.value() == {"position": point.position, "time": "2026-01-01T00:00:01.000Z"}
    assert point.describe() == f"position {point.position} (2026-01-01T00:00:01.000Z)"
    assert not point.latest
    assert travel.resolve(str(written.positions[-1])).latest


def test_position_zero_is_before_the_first_event(written: Written) -> None:
    point = TimeTravel(written.log).resolve(0)

    assert point == AsOfPoint(0, None, latest=False)
    assert point.value() == {"position": 0, "time": None}
    assert point.describe() == "position 0 (before the first event)"


@pytest.mark.parametrize(
    ("as_of", "step"),
    [
        ("2025-12-31T23:59:59.999Z", 0),  # before the first event: the empty graph
        ("2026-01-01T00:00:00Z", 1),  # exactly the first step's time: it is included
        ("2026-01-01T00:00:00.999", 1),
        ("2026-01-01T00:00:02.500Z", 3),
        ("2026-01-01T01:00:03+01:00", 4),
        ("2026-01-02", 7),  # after the last event: all of it
    ],
)
def test_a_time_resolves_to_the_last_position_written_at_or_before_it(
    written: Written, as_of: str, step: int
) -> None:
    point = TimeTravel(written.log).resolve(as_of)

    assert point.position == written.positions[step]
    assert point.latest is (step == len(STEPS))


def test_a_time_on_an_empty_log_is_the_empty_graph(event_log: EventLog) -> None:
    assert TimeTravel(event_log).resolve("2026-01-01").position == 0


# --- the models as of a point ----------------------------------------------------------------


def test_the_models_as_of_each_step_are_what_a_reader_saw_then(written: Written) -> None:
    travel = TimeTravel(written.log, cache_size=0)

    for position in written.positions:
        graph, tea = travel.query(position, snapshot_and_tea)

        assert graph == written.graphs[position], position
        assert tea == written.searches[position], position


def test_the_models_as_of_a_position_inside_a_command_fold_exactly_its_prefix(
    written: Written,
) -> None:
    for position in range(written.positions[-1] + 1):
        models = models_at(written.log, position)

        assert models.graph.position == position
        assert models.graph.snapshot() == written.prefix(position).snapshot()


def _checkpoint(graph: GraphProjection) -> Checkpoint:
    return Checkpoint(graph.name, graph.version, graph.position, graph.to_snapshot())


def _marked(written: Written, position: int, marker: str) -> GraphProjection:
    """The graph at `position` plus an entity `marker` the log does not hold: reads that show
    it were restored from this graph's checkpoint."""
    graph = written.prefix(position)
    graph.apply_all(
        stamp([EntityCreated(name=marker, entity_type="m")], origin="x", start_position=position)
    )
    assert graph.position == position
    return graph


def test_models_start_from_the_nearest_checkpoint_at_or_before_the_position(
    written: Written,
) -> None:
    early, late = written.positions[2], written.positions[5]
    written.log.checkpoints.save(
        _checkpoint(_marked(written, early, "Early")), _checkpoint(_marked(written, late, "Late"))
    )

    def markers(position: int) -> set[str]:
        graph = models_at(written.log, position).graph
        return {"Early", "Late"} & set(graph.entity_names())

    assert markers(early - 1) == set()
    assert markers(early) == {"Early"}
    assert markers(late - 1) == {"Early"}
    assert markers(late) == {"Late"}
    assert markers(written.positions[-1]) == {"Late"}


def test_an_unusable_checkpoint_is_passed_over_for_an_older_one(written: Written) -> None:
    good, bad = written.positions[2], written.positions[4]
    written.log.checkpoints.save(
        _checkpoint(written.prefix(good)),
        Checkpoint(GraphProjection.name, GraphProjection.version, bad, b"not a snapshot"),
    )

    with capture_logs() as logs:
        models = models_at(written.log, written.positions[-1])

    assert models.graph.snapshot() == written.graphs[written.positions[-1]]
    assert [e["event"] for e in logs] == ["checkpoint_unusable"]


def test_paging_through_one_point_builds_its_models_once_and_the_oldest_are_dropped(
    written: Written,
) -> None:
    travel = TimeTravel(written.log, cache_size=2)
    first, second, third = written.positions[1:4]

    def builds(*positions: int) -> int:
        with capture_logs() as logs:
            for position in positions:
                travel.query(position, snapshot_and_tea)
        return sum(e["event"] == "as_of_models_built" for e in logs)

    assert builds(first, first, first) == 1
    assert builds(second, first, second) == 1
    assert builds(third) == 1  # the least recently used, `first`, makes room
    assert builds(second, third) == 0
    assert builds(first) == 1


def test_a_one_off_query_answers_from_models_it_does_not_keep(written: Written) -> None:
    # graph_export reads a whole graph once: caching it would hold a second graph in memory.
    travel = TimeTravel(written.log)
    position = written.positions[2]

    with capture_logs() as logs:
        once = travel.query(position, snapshot_and_tea, keep=False)
        again = travel.query(position, snapshot_and_tea, keep=False)
        kept = travel.query(position, snapshot_and_tea)
        reused = travel.query(position, snapshot_and_tea, keep=False)

    assert once == again == kept == reused
    assert once[0] == written.graphs[position]
    assert [e["kept"] for e in logs if e["event"] == "as_of_models_built"] == [False, False, True]


def test_models_that_together_hold_too_many_events_are_not_kept_together(
    written: Written,
) -> None:
    first, second = written.positions[1:3]
    travel = TimeTravel(written.log, cache_events=first + second - 1)

    with capture_logs() as logs:
        for position in (first, second, second, first):
            travel.query(position, snapshot_and_tea)

    assert [e["position"] for e in logs if e["event"] == "as_of_models_built"] == [
        first,
        second,
        first,
    ]


# --- beside a writer -------------------------------------------------------------------------


def _write(writer: Any, command: Command) -> Any:
    reply: BlockingReply[Any] = BlockingReply()
    writer.tell(Execute(command, None, reply))
    return reply.wait(WAIT)


@pytest.mark.parametrize("backend", ["memory", "lmdb-everysec"])
def test_the_writer_keeps_serving_writes_while_an_as_of_query_runs(
    backend: str, tmp_path: Path
) -> None:
    event_log = open_backend(backend, tmp_path / "data")
    try:
        writer = GraphWriterActor.start(event_log)
        _write(writer, STEPS[0])
        travel = TimeTravel(event_log)
        entered, release = threading.Event(), threading.Event()
        answers: list[list[str]] = []

        def slow_query(models: AsOfModels) -> list[str]:
            entered.set()
            assert release.wait(WAIT)
            return sorted(models.graph.entity_names())

        reader = threading.Thread(target=lambda: answers.append(travel.query(1, slow_query)))
        reader.start()
        assert entered.wait(WAIT)
        _write(writer, STEPS[4])  # answered while the as-of query holds its models
        release.set()
        reader.join(WAIT)

        assert not reader.is_alive()
        assert answers == [["Ada"]]
        assert travel.query(event_log.last_position(), lambda m: m.graph.entity_count()) == 3
        writer.stop(block=True, timeout=WAIT)
    finally:
        event_log.close()


def test_as_of_reads_from_other_threads_agree_with_the_log_while_it_grows(
    tmp_path: Path,
) -> None:
    event_log = open_backend("lmdb-everysec", tmp_path / "data")
    try:
        seen = Written(event_log)
        failures: list[BaseException] = []

        def read_every_step() -> None:
            try:
                for position in seen.positions:
                    graph = models_at(event_log, position).graph.snapshot()
                    assert graph == seen.graphs[position], position
            except BaseException as error:
                failures.append(error)

        readers = [threading.Thread(target=read_every_step) for _ in range(3)]
        for reader in readers:
            reader.start()
        graph = models_at(event_log, event_log.last_position()).graph
        for i in range(50):  # appends racing the readers
            event_log.append(
                decide(graph, CreateEntities([EntityInput(f"extra{i}", "t", [])])).events
            )
        for reader in readers:
            reader.join(WAIT)

        assert not any(reader.is_alive() for reader in readers)
        assert failures == []
    finally:
        event_log.close()


def test_the_time_of_a_point_is_its_events_wall_clock(written: Written) -> None:
    last = written.positions[-1]
    point = TimeTravel(written.log).resolve(last)

    assert point.hlc is not None
    assert ms_of(point.hlc) == T0 + 1000 * (len(STEPS) - 1)


# --- the schema view as of a point -----------------------------------------------------------


def npc_schema(*roles: str, type_name: str = "npc") -> SchemaRegistered:
    document = {
        "name": f"add_{type_name}",
        "description": "A character",
        "properties": {
            "name": {"type": "string", "description": "Its name", "required": True},
            "role": {
                "type": "string",
                "description": "What it does",
                "required": True,
                "enum": list(roles),
            },
        },
        "additionalProperties": False,
    }
    text, digest = canonical_json(document)
    return SchemaRegistered(type_name=type_name, schema_json=text, digest=digest)


class SchemaHistory:
    """A log where an npc schema is registered, entities written against it, the schema
    tightened (Thief no longer allowed) and, later, retired; with the position before the
    tightening and the one just after it."""

    def __init__(self, event_log: EventLog) -> None:
        self.log = event_log
        graph = GraphProjection()

        def run(command: Command) -> None:
            graph.apply_all(event_log.append(decide(graph, command).events))

        def register(event: SchemaRegistered | SchemaRetired) -> None:
            graph.apply_all(event_log.append([event]))

        register(npc_schema("Wizard", "Thief", "Warrior"))
        run(
            CreateEntities(
                [
                    EntityInput("Gandalf", "npc", ["Role: Wizard", "wears grey"]),
                    EntityInput("Bilbo", "npc", ["Role: Thief"]),
                    EntityInput("Frodo", "hobbit", ["Role: Thief"]),  # no schema for its type
                ]
            )
        )
        run(AddObservations([ObservationInput("Gandalf", ["Colour: grey"])]))
        self.before_tightening = event_log.last_position()
        register(npc_schema("Wizard", "Warrior"))
        self.after_tightening = event_log.last_position()
        run(CreateEntities([EntityInput("Boromir", "npc", ["Horn: yes"])]))
        run(DeleteObservations([ObservationDeletion("Gandalf", ["Colour: grey"])]))
        register(SchemaRetired(type_name="npc"))
        self.after_retiring = event_log.last_position()
        run(CreateEntities([EntityInput("Sam", "npc", [])]))

    def from_scratch(self, position: int) -> SchemaViewProjection:
        """The schema view over the log's first `position` events, graph and schemas folded
        from nothing."""
        prefix = list(self.log.read_from(1))[:position]
        graph, schemas = GraphProjection(), SchemaProjection()
        graph.apply_all(prefix)
        schemas.apply_all(prefix)
        return SchemaViewProjection(graph, schemas)


@pytest.fixture
def schema_history(event_log: EventLog) -> SchemaHistory:
    return SchemaHistory(event_log)


def view_answers(view: SchemaViewProjection, names: list[str]) -> dict[str, Any]:
    return {
        "problems": view.problems(),
        "count": view.nonconforming_count(),
        "npc": view.problems("npc"),
        "by_entity": {name: (view.problems_of(name), view.fields(name)) for name in names},
    }


NAMES = ["Gandalf", "Bilbo", "Frodo", "Boromir", "Sam", "Nobody"]


def test_the_schema_view_as_of_each_position_is_the_view_of_the_log_prefix_folded_from_scratch(
    schema_history: SchemaHistory,
) -> None:
    counts = set()
    for position in range(schema_history.log.last_position() + 1):
        models = models_at(schema_history.log, position)

        assert models.schemas.position == position
        expected = view_answers(schema_history.from_scratch(position), NAMES)
        assert view_answers(models.schema_view, NAMES) == expected, position
        counts.add(expected["count"])
    assert len(counts) > 2  # the schemas did change what conforms along the way


def test_an_entity_conforms_as_of_before_a_schema_tightening_and_not_after_it(
    schema_history: SchemaHistory,
) -> None:
    travel = TimeTravel(schema_history.log)

    def bilbo(models: AsOfModels) -> list[str]:
        return [problem.kind for problem in models.schema_view.problems_of("Bilbo")]

    def unknown_keys(models: AsOfModels) -> list[str]:
        view = models.schema_view
        return [p.key for p in view.problems("npc") if p.kind == "unknown_key"]

    assert travel.query(schema_history.before_tightening, bilbo) == []
    assert travel.query(schema_history.after_tightening, bilbo) == ["not_in_enum"]
    assert travel.query(schema_history.before_tightening, unknown_keys) == ["Colour"]
    assert travel.query(schema_history.after_retiring, bilbo) == []
    assert (
        travel.query(schema_history.after_retiring, lambda m: m.schema_view.fields("Bilbo")) is None
    )


def test_the_schemas_as_of_a_point_are_built_only_when_a_query_reads_them_and_then_kept(
    schema_history: SchemaHistory,
) -> None:
    travel = TimeTravel(schema_history.log)
    position = schema_history.after_tightening

    def built(query: Any) -> list[str]:
        with capture_logs() as logs:
            travel.query(position, query)
        return [e["event"] for e in logs]

    assert built(snapshot_and_tea) == ["as_of_models_built"]
    assert built(lambda m: m.schema_view.nonconforming_count()) == ["as_of_schemas_built"]
    assert built(lambda m: m.schema_view.problems()) == []


def _schemas_checkpoint(schemas: SchemaProjection) -> Checkpoint:
    return Checkpoint(schemas.name, schemas.version, schemas.position, schemas.to_snapshot())


def test_the_schemas_as_of_a_point_start_from_the_nearest_schemas_checkpoint_at_or_before_it(
    schema_history: SchemaHistory,
) -> None:
    at = schema_history.after_tightening
    marked = SchemaProjection()
    marked.apply_all(list(schema_history.log.read_from(1))[:at])
    # A schema the log does not hold: reads that show it were restored from this checkpoint.
    marked.apply_all(
        stamp(
            [npc_schema("Wizard", type_name="marker")],
            origin="x",
            start_position=at,
        )
    )
    assert marked.position == at
    schema_history.log.checkpoints.save(_schemas_checkpoint(marked))

    def schema_types(position: int) -> set[str]:
        return {s.type_name for s in models_at(schema_history.log, position).schemas.schemas()}

    assert schema_types(at - 1) == {"npc"}
    assert schema_types(at) == {"npc", "marker"}
    assert schema_types(schema_history.after_retiring) == {"marker"}
