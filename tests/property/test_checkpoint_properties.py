"""A snapshot taken anywhere, restored and fed the rest, is the fold of everything.

Event sets are those of the fold's own properties (several origins, tied and out-of-order
clocks, a tiny alphabet so that elements collide), applied in any arrival order.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import Envelope
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from tests.property.test_graph_fold import envelope_sets

NAMES = ["a", "b", "c", "nobody"]


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[list[Envelope], int]:
    """An event set in some arrival order, and where in it the snapshot is taken."""
    envelopes = draw(envelope_sets())
    ordered = draw(st.permutations(envelopes))
    return ordered, draw(st.integers(0, len(ordered)))


def assert_same_reads(restored: GraphProjection, folded: GraphProjection) -> None:
    assert restored.snapshot() == folded.snapshot()
    assert restored.position == folded.position
    assert restored.entity_count() == folded.entity_count()
    assert restored.relation_count() == folded.relation_count()
    assert restored.relation_keys() == folded.relation_keys()
    assert restored.relations_of_any(NAMES) == folded.relations_of_any(NAMES)
    for name in NAMES:
        assert restored.entity(name) == folded.entity(name)
        assert restored.creation_key(name) == folded.creation_key(name)
        assert restored.relations_of(name) == folded.relations_of(name)


@given(arrivals())
def test_snapshot_anywhere_then_the_rest_equals_folding_everything(
    case: tuple[list[Envelope], int],
) -> None:
    envelopes, cut = case
    folded = GraphProjection()
    folded.apply_all(envelopes)
    before = GraphProjection()
    before.apply_all(envelopes[:cut])

    restored = GraphProjection.from_snapshot(before.to_snapshot())
    restored.apply_all(envelopes[cut:])

    assert_same_reads(restored, folded)
    assert restored.to_snapshot() == folded.to_snapshot()  # the whole fold state, not only reads


@given(arrivals(), st.data())
def test_restoring_a_restored_graph_s_snapshot_then_the_rest_equals_folding_everything(
    case: tuple[list[Envelope], int], data: st.DataObject
) -> None:
    envelopes, first = case
    second = data.draw(st.integers(first, len(envelopes)))
    folded = GraphProjection()
    folded.apply_all(envelopes)
    before = GraphProjection()
    before.apply_all(envelopes[:first])

    restored = GraphProjection.from_snapshot(before.to_snapshot())
    restored.apply_all(envelopes[first:second])
    restored = GraphProjection.from_snapshot(restored.to_snapshot())
    restored.apply_all(envelopes[second:])

    assert restored.to_snapshot() == folded.to_snapshot()
    assert_same_reads(restored, folded)


@given(arrivals(), st.data())
def test_reads_between_snapshot_and_restore_change_nothing(
    case: tuple[list[Envelope], int], data: st.DataObject
) -> None:
    envelopes, cut = case
    before = GraphProjection()
    before.apply_all(envelopes[:cut])
    if data.draw(st.booleans()):
        before.snapshot()  # reads may re-sort listings: the snapshot must not depend on it
    restored = GraphProjection.from_snapshot(before.to_snapshot())
    restored.snapshot()
    for envelope in envelopes[cut:]:
        before.apply(envelope)
        restored.apply(envelope)

    assert_same_reads(restored, before)


@given(arrivals())
def test_a_conflict_view_snapshot_then_the_rest_equals_folding_everything(
    case: tuple[list[Envelope], int],
) -> None:
    envelopes, cut = case
    folded = ConflictsProjection()
    folded.apply_all(envelopes)
    before = ConflictsProjection()
    before.apply_all(envelopes[:cut])

    restored = ConflictsProjection.from_snapshot(before.to_snapshot())
    restored.apply_all(envelopes[cut:])

    assert restored.conflicts() == folded.conflicts()
    assert restored.position == folded.position
