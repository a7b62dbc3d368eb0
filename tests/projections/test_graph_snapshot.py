"""Snapshots: a projection restored from one is the projection it was taken of."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
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
from projections.conflicts import ConflictsProjection
from projections.entity_schema import canonical_json
from projections.graph import GraphProjection, SnapshotError
from projections.schemas import SchemaProjection
from projections.search import SearchProjection

_positions = itertools.count(1)


def at(hlc: int, event: AnyEvent, origin: str = "a") -> Envelope:
    return Envelope(
        position=next(_positions), origin=origin, origin_seq=hlc, hlc=hlc, tx=hlc, event=event
    )


def created(name: str, entity_type: str = "person") -> EntityCreated:
    return EntityCreated(name=name, entity_type=entity_type)


def rel(from_entity: str, to_entity: str, relation_type: str = "knows") -> RelationCreated:
    return RelationCreated(
        from_entity=from_entity, to_entity=to_entity, relation_type=relation_type
    )


def restored(graph: GraphProjection) -> GraphProjection:
    return GraphProjection.from_snapshot(graph.to_snapshot())


def busy_graph() -> GraphProjection:
    """Tombstones, out-of-order stamps, hidden relations with update registers, a hub."""
    graph = GraphProjection()
    graph.apply_all(
        [
            at(10, created("Alice")),
            at(11, created("Bob", "robot")),
            at(12, ObservationAdded(entity="Alice", content="likes tea")),
            at(13, ObservationAdded(entity="Alice", content="likes tea")),
            # Older than Alice's latest occurrence, from another node: stored out of order.
            at(11, ObservationAdded(entity="Alice", content="hums"), origin="b"),
            at(14, rel("Alice", "Bob")),
            at(
                15,
                RelationUpdated(
                    from_entity="Alice",
                    to_entity="Bob",
                    relation_type="knows",
                    weight=0.5,
                    properties={"since": 2020},
                ),
            ),
            at(16, created("Carol")),
            at(17, rel("Carol", "Alice", "mentors")),
            at(18, EntityDeleted(name="Carol")),  # mentors is now hidden, its record kept
            at(19, ObservationDeleted(entity="Alice", content="gone")),
            at(5, created("Dave")),  # out of order: listings need re-sorting
            at(6, ObservationAdded(entity="Alice", content="too old")),  # rejected
            at(20, EntityUpdated(name="Bob", entity_type="android")),
            at(21, RelationDeleted(from_entity="Bob", to_entity="Alice", relation_type="x")),
            at(
                22,
                RelationCreated(
                    from_entity="Bob",
                    to_entity="Dave",
                    relation_type="owes",
                    weight=0.25,
                    properties={"amount": 3},
                    source_type="chat",
                ),
            ),
            *(at(30 + i, rel("Hub", f"n{i}")) for i in range(12)),  # a stub endpoint
            at(29, created("Hub")),
            *(at(50 + i, created(f"n{i}")) for i in range(12)),  # newer: hub relations hidden
            at(70, ObservationAdded(entity="Ghost", content="before its creation")),
        ]
    )
    return graph


def test_a_restored_graph_answers_every_read_as_the_original() -> None:
    graph = busy_graph()

    copy = restored(graph)

    assert copy.snapshot() == graph.snapshot()
    assert copy.position == graph.position
    assert copy.entity_count() == graph.entity_count()
    assert copy.relation_count() == graph.relation_count()
    names = ["Alice", "Bob", "Carol", "Dave", "Hub", "n3", "Ghost", "nobody"]
    for name in names:
        assert copy.entity(name) == graph.entity(name)
        assert copy.creation_key(name) == graph.creation_key(name)
        assert copy.relations_of(name) == graph.relations_of(name)
    assert copy.relation_keys() == graph.relation_keys()
    assert copy.relation("Alice", "Bob", "knows") == graph.relation("Alice", "Bob", "knows")
    assert copy.entities_named(names, listing_order=True) == graph.entities_named(
        names, listing_order=True
    )
    assert sorted(copy.entity_names()) == sorted(graph.entity_names())


def test_a_restored_graph_captures_the_complete_fold_state() -> None:
    graph = busy_graph()

    assert restored(graph).to_snapshot() == graph.to_snapshot()


def test_further_events_fold_into_a_restored_graph_as_into_the_original() -> None:
    graph = busy_graph()
    copy = restored(graph)
    later = [
        at(80, created("Carol")),  # re-created: mentors stays hidden (older than creation)
        at(81, rel("Carol", "Alice", "mentors")),
        at(82, EntityDeleted(name="Hub")),  # the hub's many edges are all refreshed
        at(17, ObservationAdded(entity="Bob", content="late but valid")),
        at(13, created("Bob")),  # older than Bob's creation: loses
        at(9, ObservationAdded(entity="Alice", content="older than the creation")),
        at(
            83,
            RelationUpdated(
                from_entity="Alice", to_entity="Bob", relation_type="knows", weight=0.9
            ),
        ),
        at(84, created("Eve")),
    ]

    graph.apply_all(later)
    copy.apply_all(later)

    assert copy.snapshot() == graph.snapshot()
    assert copy.to_snapshot() == graph.to_snapshot()
    assert copy.relations_of("Hub") == graph.relations_of("Hub") == []


def test_a_restored_graph_folds_every_kind_of_event_on_restored_elements() -> None:
    graph = GraphProjection()
    graph.apply_all(
        [
            at(1, created("Hub")),
            at(2, created("Pair")),
            *(at(3 + i, created(f"n{i}")) for i in range(10)),
            *(at(20 + i, ObservationAdded(entity="Pair", content=f"fact {i}")) for i in range(4)),
            at(30, ObservationAdded(entity="Hub", content="big")),
            at(31, ObservationAdded(entity="n6", content="small")),
            *(at(40 + i, rel("Hub", f"n{i}")) for i in range(10)),  # more than a tuple holds
            at(60, rel("Pair", "n0")),
            at(61, rel("n1", "Pair")),
        ]
    )
    copy = restored(graph)
    assert copy.observations("Pair") == graph.observations("Pair")
    assert copy.has_observation("Pair", "fact 2") and not copy.has_observation("Pair", "fact 9")
    later = [
        at(70, ObservationAdded(entity="Pair", content="fact 4")),  # after the restored ones
        at(25, ObservationAdded(entity="Pair", content="fact 0.5"), origin="b"),  # among them
        at(71, ObservationDeleted(entity="Hub", content="big")),
        at(72, EntityDeleted(name="n3")),  # hides one of the hub's relations
        at(73, rel("Hub", "Pair")),  # the hub's packed relations take an eleventh
        at(74, rel("Pair", "n2")),  # a small set of packed relations takes a third
        at(75, created("n3")),  # re-created: its old relation stays hidden
        at(76, ObservationAdded(entity="n5", content="first")),
        at(79, EntityDeleted(name="n6")),  # drops its restored occurrence
        at(77, RelationDeleted(from_entity="Hub", to_entity="n4", relation_type="knows")),
        at(5, ObservationAdded(entity="n9", content="older than n9")),  # rejected
        at(78, ObservationAdded(entity="new", content="before its creation")),
    ]

    graph.apply_all(later)
    copy.apply_all(later)

    assert copy.snapshot() == graph.snapshot()
    assert copy.to_snapshot() == graph.to_snapshot()
    for name in ("Hub", "Pair", "n0", "n1", "n2", "n3", "n4", "n6", "new"):
        assert copy.relations_of(name) == graph.relations_of(name)
        assert copy.entity(name) == graph.entity(name)


def test_a_snapshot_of_a_restored_graph_equals_the_original_s_after_the_same_events() -> None:
    graph = busy_graph()
    copy = restored(graph)
    # Appended to restored occurrences; and a new origin, ordered before the old ones.
    later = [
        at(90, ObservationAdded(entity="Alice", content="likes jam"), origin="0"),
        at(91, ObservationAdded(entity="Bob", content="beeps"), origin="z"),
        at(92, rel("Alice", "Dave", "owes"), origin="0"),
    ]
    graph.apply_all(later)
    copy.apply_all(later)

    snapshot = copy.to_snapshot()

    assert snapshot == graph.to_snapshot()
    assert copy.to_snapshot() == snapshot  # taking a snapshot changed nothing
    again = GraphProjection.from_snapshot(snapshot)
    assert again.to_snapshot() == snapshot
    assert again.snapshot() == graph.snapshot()


def test_relation_attributes_survive_a_restore_and_plain_ones_come_from_the_key() -> None:
    graph = busy_graph()

    copy = restored(graph)

    owes = copy.relation("Bob", "Dave", "owes")
    assert owes == graph.relation("Bob", "Dave", "owes")
    assert owes is not None and owes.weight == 0.25 and owes.properties == {"amount": 3}
    assert copy.relation("Alice", "Bob", "knows") == graph.relation("Alice", "Bob", "knows")
    assert copy.relation("Hub", "n1", "knows") is None  # hidden: older than n1's creation


def test_an_empty_graph_round_trips() -> None:
    graph = restored(GraphProjection())

    assert graph.snapshot() == GraphProjection().snapshot()
    assert graph.position == 0


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: b"\x93\x01\x02",
        lambda data: _with(data, "from_entities", _first_replaced(data, "from_entities", 999)),
        lambda data: _with(data, "types", _uint32s(0)),
        lambda data: _with(data, "edges", b"\x00"),
        lambda data: _with(data, "names", ["Alice"] * len(_field(data, "names"))),
        # Stamps are read from the columns when first needed: checked at the restore.
        lambda data: _with(data, "stamps", _stamps_short(_field(data, "stamps"))),
        lambda data: _with(data, "stamps", _origin_replaced(_field(data, "stamps"), 99)),
    ],
    ids=[
        "truncated",
        "empty",
        "another shape",
        "a relation from a missing entity",
        "columns that do not line up",
        "a column cut mid-number",
        "one name twice",
        "a stamp table shorter than its records",
        "a stamp from an origin not in the table",
    ],
)
def test_a_damaged_snapshot_is_refused(damage: object) -> None:
    data = busy_graph().to_snapshot()

    with pytest.raises(SnapshotError):
        GraphProjection.from_snapshot(damage(data))  # type: ignore[operator]


_FIELDS = [
    "position",
    "entities_last",
    "entities_unsorted",
    "alive",
    "relations_last",
    "relations_unsorted",
    "visible",
    "origins",
    "strings",
    "stamps",
    "names",
    "types",
    "type_stamps",
    "dead",
    "deleted",
    "unsorted",
    "content_deleted",
    "packed_at",
    "packed",
    "edge_counts",
    "edges",
    "from_entities",
    "to_entities",
    "relation_types",
    "hidden",
    "bases",
    "relation_deleted",
    "updates",
    "entity_attrs",
    "decay_runs",
    "layout",
]


def _field(data: bytes, field: str) -> Any:
    """One field of the snapshot's (array-like) layout, as plain msgpack values."""
    state = msgspec.msgpack.decode(data)
    assert len(state) == len(_FIELDS)
    return state[_FIELDS.index(field)]


def _with(data: bytes, field: str, value: object) -> bytes:
    """The snapshot with one field replaced."""
    state = msgspec.msgpack.decode(data)
    assert len(state) == len(_FIELDS)
    state[_FIELDS.index(field)] = value
    return msgspec.msgpack.encode(state)


def _uint32s(*values: int) -> bytes:
    return b"".join(value.to_bytes(4, "little") for value in values)


def _first_replaced(data: bytes, field: str, value: int) -> bytes:
    """A column of uint32s (little-endian) with its first one replaced by `value`."""
    column: bytes = _field(data, field)
    return _uint32s(value) + column[4:]


def test_a_snapshot_whose_stamp_table_misses_a_record_s_stamp_is_refused_at_the_restore() -> None:
    # Restored records read their stamps from the table only when first asked: a short table
    # must be refused by the restore, not met by a read later.
    graph = GraphProjection()
    graph.apply_all([at(1, created("Alice")), at(2, created("Bob")), at(3, rel("Alice", "Bob"))])
    data = graph.to_snapshot()
    for field in ("entities_last", "relations_last"):
        data = _with(data, field, 0)  # no stamp listed past the records' own
    # Two entities' `created` and `watermark`, one relation's `created`, the two just unlisted.
    stamps = _field(data, "stamps")
    assert len(stamps[0]) == 7 * 8
    GraphProjection.from_snapshot(_with(data, "stamps", _stamps_short(stamps, 2)))  # all there

    with pytest.raises(SnapshotError, match="stamp table"):
        GraphProjection.from_snapshot(_with(data, "stamps", _stamps_short(stamps, 3)))


def _stamps_short(stamps: list[bytes], count: int = 1) -> list[bytes]:
    """The stamp columns (int64, uint32, int64) without their last `count` stamps."""
    hlc, origins, seq = stamps
    return [hlc[: -8 * count], origins[: -4 * count], seq[: -8 * count]]


def _origin_replaced(stamps: list[bytes], origin: int) -> list[bytes]:
    """The stamp columns with the first stamp's origin index (uint32s) replaced."""
    hlc, origins, seq = stamps
    return [hlc, _uint32s(origin) + origins[4:], seq]


def test_a_snapshot_is_restored_from_a_memoryview_too() -> None:
    graph = busy_graph()

    copy = GraphProjection.from_snapshot(memoryview(b"..." + graph.to_snapshot())[3:])

    assert copy.snapshot() == graph.snapshot()
    assert copy.to_snapshot() == graph.to_snapshot()


def test_the_search_index_is_rebuilt_from_a_restored_graph() -> None:
    graph = busy_graph()
    original = SearchProjection()
    original.note_names(graph.entity_names())
    copy = restored(graph)
    rebuilt = SearchProjection()
    rebuilt.note_names(copy.entity_names())

    for query in ("ali", "tea", "robot", "android", "n1", "zzz"):
        assert rebuilt.search(copy, query) == original.search(graph, query)


def test_the_schema_view_round_trips_with_retired_and_unparsable_schemas() -> None:
    document = {"name": "add_npc", "description": "a character", "properties": {}}
    schema_json, digest = canonical_json(document)
    schemas = SchemaProjection()
    schemas.apply_all(
        [
            at(
                1,
                SchemaRegistered(
                    type_name="npc",
                    schema_json=schema_json,
                    digest=digest,
                    source="rpg/npc.schema.json",
                ),
            ),
            at(2, SchemaRegistered(type_name="broken", schema_json="{", digest="x", source="b")),
            at(
                3,
                SchemaRegistered(
                    type_name="old", schema_json=schema_json, digest=digest, source="o"
                ),
            ),
            at(4, SchemaRetired(type_name="old")),
        ]
    )

    copy = SchemaProjection.from_snapshot(schemas.to_snapshot())

    assert copy.records() == schemas.records()
    assert copy.schema("npc") == schemas.schema("npc") is not None
    assert (copy.position, copy.revision) == (schemas.position, schemas.revision)
    late = [at(3, SchemaRetired(type_name="npc"))]  # older than nothing: retires npc
    schemas.apply_all(late)
    copy.apply_all(late)
    assert copy.records() == schemas.records()
    assert copy.to_snapshot() == schemas.to_snapshot()


def test_the_conflict_view_round_trips() -> None:
    conflicts = ConflictsProjection()
    conflicts.apply_all(
        [
            at(1, created("Alice"), origin="n1"),
            at(2, created("Alice"), origin="n2"),
            at(3, ObservationAdded(entity="Alice", content="x"), origin="n1"),
            at(4, rel("Alice", "Bob"), origin="n2"),
        ]
    )

    copy = ConflictsProjection.from_snapshot(conflicts.to_snapshot())

    assert copy.conflicts() == conflicts.conflicts()
    assert copy.count() == conflicts.count() == 1
    assert copy.position == conflicts.position
    later = [at(5, ObservationAdded(entity="Alice", content="x"), origin="n3")]
    conflicts.apply_all(later)
    copy.apply_all(later)
    assert copy.conflicts() == conflicts.conflicts()


def test_other_snapshots_are_refused_by_the_schema_and_conflict_views() -> None:
    graph = busy_graph().to_snapshot()

    with pytest.raises(ValueError, match="not a schemas snapshot"):
        SchemaProjection.from_snapshot(graph)
    with pytest.raises(ValueError, match="not a conflicts snapshot"):
        ConflictsProjection.from_snapshot(graph)
