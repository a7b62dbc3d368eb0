"""Snapshots: a projection restored from one is the projection it was taken of."""

from __future__ import annotations

import itertools

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
        lambda data: _with_edge_to(data, 999),
    ],
    ids=["truncated", "empty", "another shape", "an edge to a missing relation"],
)
def test_a_damaged_snapshot_is_refused(damage: object) -> None:
    data = busy_graph().to_snapshot()

    with pytest.raises(SnapshotError):
        GraphProjection.from_snapshot(damage(data))  # type: ignore[operator]


def _with_edge_to(data: bytes, index: int) -> bytes:
    state = msgspec.msgpack.decode(data)
    state[-1][0] = [index]
    return msgspec.msgpack.encode(state)


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
    assert (copy.position, copy.version) == (schemas.position, schemas.version)
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
