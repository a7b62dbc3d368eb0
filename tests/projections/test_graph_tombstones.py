"""Tombstone collection (GraphProjection.collect_tombstones): the records of deletions every
member has seen go, reads do not change, and every newer event folds as it would have."""

from __future__ import annotations

import itertools

from eventstore.events import (
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import GraphProjection
from tests.projections.test_graph import at, created, fold, obs, rel


def _history() -> list[Envelope]:
    """x, y, z; x-knows->y and y-likes->z; then y-likes->z deleted and x deleted (seq 1-7)."""
    return [
        at(1, created("x")),
        at(2, created("y")),
        at(3, created("z")),
        at(4, rel("x", "y")),
        at(5, rel("y", "z", "likes")),
        at(6, RelationDeleted(from_entity="y", to_entity="z", relation_type="likes")),
        at(7, EntityDeleted(name="x")),
    ]


def test_collecting_drops_covered_tombstones_and_reads_do_not_change() -> None:
    graph = fold(*_history())
    before = graph.snapshot()
    collected = graph.collect_tombstones({"a": 7})
    assert (collected.entities, collected.relations) == (1, 2)
    assert set(graph.state.entities) == {"y", "z"} and not graph.state.relations
    assert graph.snapshot() == before
    assert graph.entity_count() == 2 and graph.relation_count() == 0
    restored = GraphProjection.from_snapshot(graph.to_snapshot())
    assert restored.snapshot() == before


def test_a_tombstone_the_watermark_does_not_cover_is_kept() -> None:
    graph = fold(*_history())
    # x's deletion is seq 7: with 6 covered x stays. Both relations go: every later event is
    # newer than their stamps, so only a newer creation of their own can show them again (x
    # revived by a creation newer than x-knows->y hides it).
    collected = graph.collect_tombstones({"a": 6})
    assert (collected.entities, collected.relations) == (0, 2)
    assert "x" in graph.state.entities and graph.state.entities["x"].edges is None
    assert graph.collect_tombstones({"b": 100}).entities == 0  # another origin's watermark


def test_a_record_holding_a_stamp_past_the_watermark_is_kept() -> None:
    # An update of x after its deletion (seq 8) is still open to a late, older event.
    graph = fold(*_history(), at(8, EntityUpdated(name="x", entity_type="robot")))
    assert graph.collect_tombstones({"a": 7}).entities == 0
    assert "x" in graph.state.entities


def _newer() -> list[Envelope]:
    """Events stamped after the whole history, touching every collected name and key."""
    return [
        at(20, obs("x", "orphan note")),
        at(21, EntityUpdated(name="x", entity_type="robot")),
        at(22, RelationUpdated(from_entity="y", to_entity="z", relation_type="likes", weight=2.0)),
        at(23, created("x", "animal")),
        at(24, obs("x", "back")),
        at(25, rel("x", "y")),
        at(26, rel("y", "z", "likes")),
        at(27, EntityDeleted(name="z")),
        at(28, ObservationAdded(entity="y", content="still here")),
    ]


def test_every_newer_event_folds_on_a_collected_graph_as_on_the_full_one() -> None:
    for cut, restored in itertools.product(range(len(_newer()) + 1), (False, True)):
        full = fold(*_history())
        collected = fold(*_history())
        if restored:  # restored records hold their edges packed
            collected = GraphProjection.from_snapshot(collected.to_snapshot())
        collected.collect_tombstones({"a": 7})
        full.apply_all(_newer()[:cut])
        collected.apply_all(_newer()[:cut])
        assert collected.snapshot() == full.snapshot(), f"after {cut} newer ({restored=})"
        assert collected.entity_count() == full.entity_count()
        assert collected.relation_count() == full.relation_count()


def test_without_the_gate_a_late_older_creation_would_revive_a_collected_entity() -> None:
    # Why collection waits for every member: another node's creation of x stamped before x's
    # deletion (hlc 5, origin b) loses to the tombstone, but revives x once it is gone.
    late = at(5, created("x", "robot"), origin="b", seq=1)
    full = fold(*_history())
    collected = fold(*_history())
    collected.collect_tombstones({"a": 7})
    full.apply(late)
    collected.apply(late)
    assert full.entity_count() == 2
    assert collected.entity_count() == 3
