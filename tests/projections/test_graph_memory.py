"""GraphProjection's memory: a fold keeps one copy of each name and type, however many events
carried it (each decoded envelope brings its own copies of its strings)."""

from __future__ import annotations

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
