"""What the read models hold depends on the graph, not on how many calls or deletions led to it:
a long run keeps no per-call state that a fresh process restored from a snapshot would not."""

from __future__ import annotations

from typing import Any

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    RelationCreated,
    RelationDeleted,
)
from projections.graph import GraphProjection
from projections.schema_view import SchemaViewProjection
from projections.schemas import SchemaProjection
from projections.search import SearchProjection
from tests.helpers import stamp, substring_scan
from tests.projections.test_schema_view import NPC, registered


class Feed:
    """A graph and the models the writer keeps beside it, fed one command's events at a time."""

    def __init__(self, **search: Any) -> None:
        self.graph = GraphProjection()
        self.schemas = SchemaProjection()
        self.search = SearchProjection(**search)
        self.view = SchemaViewProjection(self.graph, self.schemas)
        self.log: list[Envelope] = []

    def apply(self, *events: AnyEvent) -> None:
        start = self.graph.position + 1
        envelopes = stamp(events, start_seq=start, hlc=start)
        self.log += envelopes
        self.graph.apply_all(envelopes)
        self.schemas.apply_all(envelopes)
        self.search.note(envelopes)
        self.view.note(envelopes)

    def churn(self, first: int, last: int, *, window: int = 10) -> None:
        """Entities first..last-1 created (with an observation and a relation to the one
        before), each deleted with its relations `window` entities later."""
        for i in range(first, last):
            name = f"e{i}"
            events: list[AnyEvent] = [
                EntityCreated(name=name, entity_type="npc"),
                ObservationAdded(entity=name, content=f"token{i} Role: Wizard"),
            ]
            if i > first:
                events.append(
                    RelationCreated(from_entity=name, to_entity=f"e{i - 1}", relation_type="r")
                )
            self.apply(*events)
            if i - window >= first:
                gone = f"e{i - window}"
                self.apply(
                    EntityDeleted(name=gone),
                    RelationDeleted(
                        from_entity=f"e{i - window + 1}", to_entity=gone, relation_type="r"
                    ),
                )
            if i % 7 == 0:
                assert self.search.search(self.graph, f"token{i}") == [name]


def test_plain_relation_creations_are_held_as_one_shared_base_not_an_event_each() -> None:
    feed = Feed()
    feed.churn(0, 300, window=300)
    bases = {id(relation.base) for relation in feed.graph.state.relations.values()}
    assert len(feed.graph.state.relations) == 299
    assert len(bases) == 1
    restored = GraphProjection.from_snapshot(feed.graph.to_snapshot())
    assert restored.snapshot() == feed.graph.snapshot()


def test_a_relation_created_with_attributes_keeps_them() -> None:
    feed = Feed()
    feed.apply(EntityCreated(name="a", entity_type="t"), EntityCreated(name="b", entity_type="t"))
    feed.apply(RelationCreated(from_entity="a", to_entity="b", relation_type="r", weight=0.5))
    feed.apply(RelationCreated(from_entity="b", to_entity="a", relation_type="r"))
    relation = feed.graph.relation("a", "b", "r")
    assert relation is not None and relation.weight == 0.5
    assert feed.graph.relation("b", "a", "r") == feed.graph.relation("b", "a", "r")
    assert [r.weight for r in feed.graph.relations()] == [0.5, 1.0]


def test_a_snapshot_leaves_the_live_graph_holding_occurrences_as_a_restore_would() -> None:
    feed = Feed()
    feed.churn(0, 50, window=20)
    live = feed.graph
    assert any(entity.occ for entity in live.state.entities.values())
    saved = live.to_snapshot()
    assert not any(entity.occ for entity in live.state.entities.values())
    restored = GraphProjection.from_snapshot(saved)
    assert live.to_snapshot() == saved == restored.to_snapshot()
    assert live.snapshot() == restored.snapshot()
    feed.apply(*(ObservationAdded(entity=f"e{i}", content="later") for i in range(30, 50)))
    feed.churn(50, 60, window=5)  # folding on over packed occurrences
    never_saved = GraphProjection()
    never_saved.apply_all(feed.log)
    assert live.snapshot() == never_saved.snapshot()


def test_an_index_whose_entities_come_and_go_holds_segments_for_the_alive_ones_only() -> None:
    feed = Feed(segment_size=4, hollow_min=2)
    feed.churn(0, 2000)
    feed.search.search(feed.graph, "token")
    # 10 alive entities are in at most 10 segments; emptied ones are dropped once they
    # outnumber those in use (and hollow_min): a bound set by the alive entities alone, where
    # 2,000 entities that came and went would leave 500 segments of 4.
    alive = feed.graph.entity_count()
    assert alive == 10
    assert len(feed.search._segments) <= 2 * alive + 2 + 1
    for query in ("token1999", "token", "wizard", "e19", "zzz"):
        assert feed.search.search(feed.graph, query) == substring_scan(feed.graph, query)


def test_a_schema_view_that_is_never_asked_remembers_no_touched_names() -> None:
    feed = Feed()
    feed.apply(registered(NPC))
    feed.churn(0, 3000)
    assert len(feed.view._dirty) == 0
    fresh = SchemaViewProjection(feed.graph, feed.schemas)
    assert feed.view.problems() == fresh.problems()
    assert feed.view.problems_of("e2999") != []


def test_a_schema_view_remembers_at_most_about_as_many_names_as_the_graph_holds() -> None:
    feed = Feed()
    feed.apply(registered(NPC))
    feed.churn(0, 10)
    feed.view.problems_of("e9")  # parsed: from now on it remembers touched names
    feed.churn(10, 3000)
    assert len(feed.view._dirty) <= max(1024, feed.graph.entity_count())
    fresh = SchemaViewProjection(feed.graph, feed.schemas)
    assert feed.view.problems() == fresh.problems()
    assert feed.view.fields("e2999") == fresh.fields("e2999")
