"""GraphProjection's memory: a fold keeps one copy of each name and type, however many events
carried it (each decoded envelope brings its own copies of its strings)."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from msgspec.structs import astuple

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    Envelope,
    ObservationAdded,
    RelationCreated,
    decode_envelope,
    encode_envelope,
)
from projections.graph import GraphProjection
from projections.graph._records import LAZY_EDGES


def decoded(events: list[AnyEvent], first_hlc: int = 1) -> list[Envelope]:
    """Envelopes as a replay hands them over: decoded from bytes, every string a fresh copy."""
    return [
        decode_envelope(
            encode_envelope(
                Envelope(position=hlc, origin="a", origin_seq=hlc, hlc=hlc, tx=hlc, event=event)
            )
        )
        for hlc, event in enumerate(events, first_hlc)
    ]


def _names_shared(graph: GraphProjection) -> None:
    entities = graph.state.entities
    keys = {name: name for name in entities}
    for from_entity, to_entity, _ in graph.state.relations:
        assert from_entity is keys[from_entity]
        assert to_entity is keys[to_entity]


def test_a_relation_key_shares_its_endpoints_names_with_their_records() -> None:
    graph = GraphProjection()
    graph.apply_all(
        decoded(
            [
                EntityCreated(name="alice-" + "x" * 40, entity_type="person"),
                EntityCreated(name="bob-" + "y" * 40, entity_type="person"),
                RelationCreated(
                    from_entity="alice-" + "x" * 40,
                    to_entity="bob-" + "y" * 40,
                    relation_type="knows",
                ),
            ]
        )
    )
    assert len(graph.state.relations) == 1
    _names_shared(graph)


def test_a_relation_older_than_its_endpoints_creations_shares_their_names_too() -> None:
    graph = GraphProjection()
    graph.apply_all(
        decoded(
            [
                EntityCreated(name="alice", entity_type="t"),
                EntityCreated(name="bob", entity_type="t"),
            ],
            first_hlc=10,
        )
    )
    # Stamped before the creations (a replica's late event): folded by the general path.
    graph.apply_all(
        decoded(
            [RelationCreated(from_entity="alice", to_entity="bob", relation_type="knows")],
            first_hlc=5,
        )
    )
    assert len(graph.state.relations) == 1
    _names_shared(graph)


def test_types_are_held_once_however_many_records_carry_them() -> None:
    events: list[AnyEvent] = [EntityCreated(name=f"e{i}", entity_type="person") for i in range(5)]
    events += [
        RelationCreated(from_entity=f"e{i}", to_entity=f"e{i + 1}", relation_type="knows")
        for i in range(4)
    ]
    graph = GraphProjection()
    graph.apply_all(decoded(events))
    assert len({id(record.entity_type) for record in graph.state.entities.values()}) == 1
    assert len({id(key[2]) for key in graph.state.relations}) == 1


def test_a_restored_graph_names_its_records_as_the_fold_did() -> None:
    graph = GraphProjection()
    graph.apply_all(
        decoded(
            [
                EntityCreated(name="a", entity_type="t"),
                EntityCreated(name="b", entity_type="t"),
                RelationCreated(from_entity="a", to_entity="b", relation_type="k"),
            ]
        )
    )
    restored = GraphProjection.from_snapshot(graph.to_snapshot())
    for name, record in restored.state.entities.items():
        assert record.name == name
    # A relation folded after the restore shares the restored names.
    restored.apply_all(
        decoded([RelationCreated(from_entity="b", to_entity="a", relation_type="k")], 10)
    )
    _names_shared(restored)


def test_records_whose_occurrences_are_all_packed_hold_no_dict_for_them() -> None:
    graph = GraphProjection()
    graph.apply_all(
        decoded(
            [
                EntityCreated(name="alice", entity_type="person"),
                ObservationAdded(entity="alice", content="likes tea"),
                EntityCreated(name="bob", entity_type="person"),
            ]
        )
    )
    snapshot = graph.to_snapshot()  # packs the folded occurrences, as a checkpoint does
    restored = GraphProjection.from_snapshot(snapshot)
    for held in (graph, restored):
        assert [record.occ for record in held.state.entities.values()] == [None, None]
        assert held.observations("alice") == ["likes tea"]
        assert held.observations("bob") == []
    # Folding on after the restore reads as a fold that never stopped.
    more = decoded([ObservationAdded(entity="bob", content="likes coffee")], first_hlc=10)
    graph.apply_all(more)
    restored.apply_all(more)
    assert restored.observations("bob") == graph.observations("bob") == ["likes coffee"]
    assert restored.to_snapshot() == graph.to_snapshot()


def _transaction(events: list[AnyEvent], hlc: int, origin: str, first_seq: int) -> list[Envelope]:
    """One transaction's envelopes as a replay hands them over: one clock reading for all."""
    return [
        decode_envelope(
            encode_envelope(
                Envelope(
                    position=first_seq + i,
                    origin=origin,
                    origin_seq=first_seq + i,
                    hlc=hlc,
                    tx=first_seq,
                    event=event,
                )
            )
        )
        for i, event in enumerate(events)
    ]


def test_a_restored_graph_holds_one_clock_int_per_transaction_not_one_per_stamp() -> None:
    # An import writes thousands of events per transaction, all at one clock reading: each
    # restored stamp holding its own copy of that (large) int was a tenth of a restored graph.
    events: list[AnyEvent] = []
    for i in range(50):
        events += [
            EntityCreated(name=f"e{i}", entity_type="person"),
            ObservationAdded(entity=f"e{i}", content=f"fact {i}"),
        ]
    events += [
        RelationCreated(from_entity=f"e{i}", to_entity=f"e{i + 1}", relation_type="knows")
        for i in range(49)
    ]
    clock = (1_700_000_000_000 << 16) + 7  # far above the ints Python keeps shared anyway
    graph = GraphProjection()
    graph.apply_all(_transaction(events, clock, "node-a", 1))
    restored = GraphProjection.from_snapshot(graph.to_snapshot())
    stamps = [
        stamp
        for record in restored.state.entities.values()
        for stamp in (record.created, record.watermark)
    ]
    stamps += [relation.created for relation in restored.state.relations.values()]
    assert len(stamps) == 149
    assert {stamp.hlc for stamp in stamps} == {clock}
    assert len({id(stamp.hlc) for stamp in stamps}) == 1


def test_packed_occurrences_hold_an_origin_index_not_the_origins_string() -> None:
    origin = "node-" + "x" * 60
    graph = GraphProjection()
    graph.apply_all(
        _transaction(
            [EntityCreated(name="alice", entity_type="person")]
            + [ObservationAdded(entity="alice", content=f"f{i}") for i in range(20)],
            hlc=5,
            origin=origin,
            first_seq=1,
        )
    )
    graph.to_snapshot()  # packs the folded occurrences, as a checkpoint does
    packed = graph.state.entities["alice"].packed
    assert packed is not None
    assert origin.encode() not in packed
    assert len(packed) < 20 * 16


def test_a_new_origin_that_sorts_first_renumbers_the_packed_occurrences_it_moves() -> None:
    # Packed occurrences index the sorted origin table; an origin that sorts before those in
    # use moves them. Snapshots before and after, restores, and folds on must all agree with
    # a fold that never stopped.
    first = _transaction(
        [EntityCreated(name="alice", entity_type="person")]
        + [ObservationAdded(entity="alice", content=f"from m {i}") for i in range(3)],
        hlc=10,
        origin="node-m",
        first_seq=1,
    )
    second = _transaction(
        [
            ObservationAdded(entity="alice", content="from a"),
            EntityCreated(name="bob", entity_type="t"),
            ObservationAdded(entity="bob", content="bob from a"),
        ],
        hlc=20,
        origin="node-a",
        first_seq=1,
    )
    # A late one from node-m, older than what is packed: unpacks alice's occurrences.
    late = _transaction(
        [ObservationAdded(entity="alice", content="late from m")],
        hlc=15,
        origin="node-m",
        first_seq=9,
    )
    straight = GraphProjection()
    straight.apply_all(first + second + late)

    stepped = GraphProjection()
    stepped.apply_all(first)
    stepped = GraphProjection.from_snapshot(stepped.to_snapshot())  # packed: node-m is index 1
    stepped.apply_all(second)
    middle = stepped.to_snapshot()  # node-a sorts first: node-m's packed index moves to 2
    for graph in (stepped, GraphProjection.from_snapshot(middle)):
        assert graph.observations("alice") == [*straight.observations("alice")[:3], "from a"]
        graph.apply_all(late)
        assert graph.observations("alice") == straight.observations("alice")
        assert graph.snapshot() == straight.snapshot()
        assert graph.to_snapshot() == straight.to_snapshot()
    unpacked = GraphProjection.from_snapshot(straight.to_snapshot())
    unpacked.apply_all([*late])  # a repeat: nothing changes, but the occurrences unpack
    assert unpacked.to_snapshot() == straight.to_snapshot()


# --- a restore keeps its stamps in the snapshot's columns until a record's is read -----------


def _held(record: Any, field: str) -> Any:
    """The record's own field, beneath any property a restored record reads it through."""
    return astuple(record)[record.__struct_fields__.index(field)]


def _unmade(stamp: Any) -> bool:
    return bool(stamp.hlc == -1)  # the marker a restore leaves where a stamp is not made


def _lazy_slots(graph: GraphProjection) -> list[bool]:
    """For every entity's `created` and `watermark` and every relation's `created`: whether
    the record holds it not made yet."""
    state = graph.state
    held = [
        _unmade(_held(record, field))
        for record in state.entities.values()
        for field in ("created", "watermark")
    ]
    return held + [_unmade(_held(r, "created")) for r in state.relations.values()]


def _imported(n: int) -> GraphProjection:
    events: list[AnyEvent] = []
    for i in range(n):
        events += [
            EntityCreated(name=f"e{i}", entity_type="person"),
            ObservationAdded(entity=f"e{i}", content=f"fact {i}"),
        ]
    events += [
        RelationCreated(from_entity=f"e{i}", to_entity=f"e{i + 1}", relation_type="knows")
        for i in range(n - 1)
    ]
    graph = GraphProjection()
    graph.apply_all(_transaction(events, (1_700_000_000_000 << 16) + 7, "node-a", 1))
    return graph


def test_a_restored_graph_makes_a_record_s_stamps_only_when_they_are_read() -> None:
    # A stamp object and its sequence's int were 80 bytes each, three an entity, a fifth of
    # a restored graph: they stay in the snapshot's columns until read.
    graph = _imported(40)
    copy = GraphProjection.from_snapshot(graph.to_snapshot())
    assert all(_lazy_slots(copy))

    original, record = graph.state.entities["e7"], copy.state.entities["e7"]
    assert (record.created, record.watermark, record.type_stamp) == (
        original.created,
        original.watermark,
        original.type_stamp,
    )
    assert _held(record, "created") == original.created  # now held
    relation = copy.state.relations["e3", "e4", "knows"]
    assert relation.created == graph.state.relations["e3", "e4", "knows"].created
    assert sum(not lazy for lazy in _lazy_slots(copy)) == 3


def test_a_snapshot_of_a_restored_graph_reads_its_stamps_from_the_columns_without_making_them() -> (
    None
):
    # A checkpoint reads every stamp: made and kept, they would undo what the restore saved.
    graph = _imported(40)
    data = graph.to_snapshot()
    copy = GraphProjection.from_snapshot(data)
    copy.state.entities["e5"].watermark  # noqa: B018 (one made: held ones and lazy ones mix)

    assert copy.to_snapshot() == data
    assert sum(not lazy for lazy in _lazy_slots(copy)) == 1


def test_a_restored_entity_created_anew_takes_the_new_type_as_the_fold_does() -> None:
    # Its type's stamp is its creation's until read: a new creation must not move it along.
    graph = _imported(3)
    copy = GraphProjection.from_snapshot(graph.to_snapshot())
    later = (1_800_000_000_000 << 16) + 1
    recreated = _transaction([EntityCreated(name="e1", entity_type="robot")], later, "node-b", 1)

    graph.apply_all(recreated)
    copy.apply_all(recreated)

    assert copy.entity_type("e1") == graph.entity_type("e1") == "robot"
    assert copy.to_snapshot() == graph.to_snapshot()


@pytest.mark.parametrize(
    ("origins", "first_seq", "clocks"),
    [(1, 1, 1), (300, 1, 1), (1, 1 << 40, 1), (1, 1, 10_000)],
    ids=["narrow", "more origins than a byte indexes", "sequences past 32 bits", "every clock"],
)
def test_restored_stamps_read_back_exactly_whatever_the_columns_widths(
    origins: int, first_seq: int, clocks: int
) -> None:
    graph = GraphProjection()
    for i in range(1200):
        event = EntityCreated(name=f"e{i}", entity_type="person")
        origin = f"node-{i % origins:04d}"
        hlc = (1_700_000_000_000 << 16) + i % clocks
        graph.apply_all(_transaction([event], hlc, origin, first_seq + i))
    data = graph.to_snapshot()
    copy = GraphProjection.from_snapshot(data)

    for name, record in graph.state.entities.items():
        restored = copy.state.entities[name]
        assert (restored.created, restored.watermark) == (record.created, record.watermark)
    assert copy.to_snapshot() == data


def test_a_restored_graph_keys_its_relations_only_when_one_is_looked_up_by_key() -> None:
    # A key tuple and a dict slot were 116 bytes a relation: a served graph that reads, and
    # adds entities and observations, never needs them.
    graph = _imported(40)
    data = graph.to_snapshot()
    copy = GraphProjection.from_snapshot(data)
    state = copy.state
    assert state.keyed is None

    assert copy.relations_of("e3") == graph.relations_of("e3")
    more = [EntityCreated(name="late", entity_type="person")]
    more += [ObservationAdded(entity="e2", content="one more")]
    copy.apply_all(_transaction(more, (1_800_000_000_000 << 16) + 1, "node-a", 100))
    assert copy.to_snapshot() != data
    assert state.keyed is None
    keys = [_held(relation, "key") for relation in state.relation_records()]
    assert sum(key == ("", "", "") for key in keys) == len(keys) - 2  # e3's two were read
    assert list(copy.relations()) == list(graph.relations())  # a listing makes each key
    assert state.keyed is None

    assert copy.has_relation("e5", "e6", "knows")
    assert state.keyed is not None
    assert list(state.relations) == list(graph.state.relations)
    _names_shared(copy)


def test_a_relation_folded_into_a_restored_graph_finds_the_restored_one_with_its_key() -> None:
    graph = _imported(5)
    copy = GraphProjection.from_snapshot(graph.to_snapshot())
    again = [RelationCreated(from_entity="e1", to_entity="e2", relation_type="knows")]
    again += [RelationCreated(from_entity="e4", to_entity="e0", relation_type="knows")]
    envelopes = _transaction(again, (1_800_000_000_000 << 16) + 1, "node-b", 1)

    graph.apply_all(envelopes)
    copy.apply_all(envelopes)

    assert len(copy.state.relations) == len(graph.state.relations) == 5
    assert copy.to_snapshot() == graph.to_snapshot()


def test_a_restored_entity_makes_its_edges_per_read_and_keeps_them_once_one_is_added() -> None:
    # A PackedEdges held by every restored entity was 40 bytes of each: made when read.
    graph = _imported(10)
    copy = GraphProjection.from_snapshot(graph.to_snapshot())
    record = copy.state.entities["e4"]
    assert _held(record, "edges") is LAZY_EDGES
    keys = {relation.key for relation in record.edges}
    assert keys == {("e3", "e4", "knows"), ("e4", "e5", "knows")}
    assert _held(record, "edges") is LAZY_EDGES  # read, not kept
    assert copy.incident_keys("e0") == [("e0", "e1", "knows")]

    added = RelationCreated(from_entity="e4", to_entity="e0", relation_type="owns")
    for target in (graph, copy):
        target.apply_all(_transaction([added], (1_700_000_000_001 << 16), "node-a", 100))
    assert _held(record, "edges") is not LAZY_EDGES
    assert {r.key for r in record.edges} == keys | {("e4", "e0", "owns")}
    assert sorted(copy.incident_keys("e0")) == [("e0", "e1", "knows"), ("e4", "e0", "owns")]
    assert copy.snapshot() == graph.snapshot()
    assert copy.to_snapshot() == graph.to_snapshot()


def test_opening_one_restored_entity_makes_no_creation_stamp_to_order_it() -> None:
    # One alone needs no listing order: a first open_nodes reads no stamp it does not answer.
    graph = _imported(10)
    copy = GraphProjection.from_snapshot(graph.to_snapshot())
    [view] = copy.entities_named(["e6"], listing_order=True)
    assert view == graph.entity("e6")
    assert _unmade(_held(copy.state.entities["e6"], "created"))
    two = copy.entities_named(["e8", "e2"], listing_order=True)
    assert [v.name for v in two] == ["e2", "e8"]
    # Nor one relation: e0's only one keeps its creation stamp unmade.
    assert copy.relation_keys_of_any(["e0"]) == [("e0", "e1", "knows")]
    assert _unmade(_held(copy.state.relations["e0", "e1", "knows"], "created"))
    assert copy.relation_keys_of_any(["e5"]) == graph.relation_keys_of_any(["e5"])


def test_a_restored_graph_s_names_for_its_keys_are_not_walked_by_the_collector() -> None:
    # A list of a million names was walked by every full collection; a tuple of strings is
    # untracked once the collector has seen it.
    copy = GraphProjection.from_snapshot(_imported(10).to_snapshot())
    gc.collect()
    columns = copy.state.unkeyed[0].stamps  # type: ignore[attr-defined]
    assert not gc.is_tracked(columns.names)
    assert copy.relation("e1", "e2", "knows") is not None
