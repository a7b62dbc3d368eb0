"""ConflictsProjection: elements written by several nodes, each node's latest write, the winner."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import (
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    decode_envelope,
    encode_envelope,
)
from projections.conflicts import Conflict, ConflictsProjection, ConflictWrite
from tests.helpers import stamp
from tests.property.test_graph_fold import envelope_sets


def folded(*logs: list[Envelope]) -> ConflictsProjection:
    conflicts = ConflictsProjection()
    for log in logs:
        conflicts.apply_all(log)
    return conflicts


def test_elements_written_by_one_node_only_are_no_conflict() -> None:
    log = stamp(
        [
            EntityCreated(name="A", entity_type="t"),
            ObservationAdded(entity="A", content="o"),
            EntityDeleted(name="A"),
        ],
        origin="n1",
    )

    assert folded(log).conflicts() == []


def test_an_entity_written_by_two_nodes_lists_both_and_keeps_the_newest() -> None:
    laptop = stamp([EntityCreated(name="A", entity_type="t")], origin="laptop", hlc=10)
    desktop = stamp([EntityUpdated(name="A", entity_type="u")], origin="desktop", hlc=20)

    conflicts = folded(laptop, desktop).conflicts()

    assert conflicts == [
        Conflict(
            "entity",
            ("A",),
            (
                ConflictWrite("laptop", 10, 1, "EntityCreated"),
                ConflictWrite("desktop", 20, 1, "EntityUpdated"),
            ),
            ConflictWrite("desktop", 20, 1, "EntityUpdated"),
        )
    ]


def test_each_node_counts_with_its_latest_write_only() -> None:
    n1 = stamp(
        [EntityCreated(name="A", entity_type="t"), EntityDeleted(name="A")], origin="n1", hlc=5
    )
    n2 = stamp([EntityCreated(name="A", entity_type="t")], origin="n2", hlc=3)

    (conflict,) = folded(n1, n2).conflicts()

    assert conflict.writes == (
        ConflictWrite("n2", 3, 1, "EntityCreated"),
        ConflictWrite("n1", 5, 2, "EntityDeleted"),
    )
    assert conflict.kept == ConflictWrite("n1", 5, 2, "EntityDeleted")


def test_a_tie_on_the_clock_goes_to_the_larger_node_id() -> None:
    a = stamp([ObservationAdded(entity="E", content="c")], origin="a", hlc=7)
    b = stamp([ObservationDeleted(entity="E", content="c")], origin="b", hlc=7)

    (conflict,) = folded(a, b).conflicts()

    assert conflict.kind == "observation"
    assert conflict.key == ("E", "c")
    assert conflict.kept.origin == "b"


def test_relations_and_observations_are_elements_of_their_own() -> None:
    n1 = stamp(
        [
            EntityCreated(name="A", entity_type="t"),
            EntityCreated(name="B", entity_type="t"),
            RelationCreated(from_entity="A", to_entity="B", relation_type="r"),
            ObservationAdded(entity="A", content="x"),
        ],
        origin="n1",
        hlc=1,
    )
    n2 = stamp(
        [
            RelationDeleted(from_entity="A", to_entity="B", relation_type="r"),
            ObservationAdded(entity="A", content="y"),
        ],
        origin="n2",
        hlc=2,
    )

    conflicts = folded(n1, n2).conflicts()

    assert [(c.kind, c.key) for c in conflicts] == [("relation", ("A", "B", "r"))]


def test_markers_are_not_elements() -> None:
    n1 = stamp([EntitiesMerged(sources=["S"], target="T")], origin="n1")
    n2 = stamp([EntitiesMerged(sources=["S"], target="T")], origin="n2")

    assert folded(n1, n2).conflicts() == []


def test_conflicts_filter_by_entity_and_come_newest_first_up_to_the_limit() -> None:
    n1 = stamp(
        [
            EntityCreated(name="A", entity_type="t"),
            EntityCreated(name="B", entity_type="t"),
            RelationCreated(from_entity="B", to_entity="A", relation_type="r"),
            ObservationAdded(entity="C", content="x"),
        ],
        origin="n1",
        hlc=1,
    )
    n2 = [
        *stamp([EntityDeleted(name="A")], origin="n2", hlc=2),
        *stamp([EntityDeleted(name="B")], origin="n2", start_seq=2, hlc=3),
        *stamp(
            [RelationDeleted(from_entity="B", to_entity="A", relation_type="r")],
            origin="n2",
            start_seq=3,
            hlc=4,
        ),
        *stamp([ObservationDeleted(entity="C", content="x")], origin="n2", start_seq=4, hlc=5),
    ]
    projection = folded(n1, n2)

    assert [c.key for c in projection.conflicts()] == [("C", "x"), ("B", "A", "r"), ("B",), ("A",)]
    assert [c.key for c in projection.conflicts("A")] == [("B", "A", "r"), ("A",)]
    assert [c.key for c in projection.conflicts(limit=2)] == [("C", "x"), ("B", "A", "r")]
    assert projection.count() == 4
    assert projection.position == max(e.position for e in [*n1, *n2])


@given(st.data(), envelope_sets())
def test_any_order_and_any_repetition_give_the_same_conflicts(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes + envelopes[:5]))

    in_order = folded(envelopes)
    one_by_one = ConflictsProjection()
    for envelope in shuffled:
        one_by_one.apply(envelope)

    assert one_by_one.conflicts() == in_order.conflicts()


def _replayed(events: list[object], origin: str, hlc: int) -> list[Envelope]:
    """One transaction's envelopes as a replay decodes them: every string its own copy."""
    return [
        decode_envelope(
            encode_envelope(
                Envelope(position=seq, origin=origin, origin_seq=seq, hlc=hlc, tx=1, event=event)  # type: ignore[arg-type]
            )
        )
        for seq, event in enumerate(events, 1)
    ]


def _held(conflicts: ConflictsProjection) -> tuple[set[int], set[int], set[int]]:
    """The distinct objects holding the origins, the clocks and the entity names."""
    writes = list(conflicts._writes.items())
    origins = {id(write.origin) for _, write in writes}  # type: ignore[union-attr]
    clocks = {id(write.hlc) for _, write in writes}  # type: ignore[union-attr]
    names = {id(key[1]) for key, _ in writes}
    return origins, clocks, names


def test_a_fold_and_a_restore_hold_each_origin_clock_and_entity_run_once() -> None:
    # Every element of the log keeps a write: an origin, a clock and an entity name copied
    # into each (every decoded envelope brings its own) was most of the model's memory.
    origin = "node-" + "x" * 40
    log = _replayed(
        [
            EntityCreated(name="alice-" + "a" * 40, entity_type="person"),
            *(ObservationAdded(entity="alice-" + "a" * 40, content=f"fact {i}") for i in range(5)),
        ],
        origin,
        hlc=(1_700_000_000_000 << 16) + 3,
    )
    folded_ = folded(log)
    restored = ConflictsProjection.from_snapshot(folded_.to_snapshot())
    for conflicts in (folded_, restored):
        origins, clocks, names = _held(conflicts)
        assert (len(origins), len(clocks), len(names)) == (1, 1, 1)
    assert restored.to_snapshot() == folded_.to_snapshot()
