"""GraphProjection's graph attributes: entity and relation registers, clears, and defaults.

Each is a last-writer-wins register on the stamp, reset by a (re-)creation; `cleared` is a
write of "not set"; the times a relation was ingested and last confirmed read, when unset, as
its latest creation's stamp time. The memory tools' views (EntityView, RelationView) are not
widened: the attributes are read through entity_attributes and relation_details.
"""

from __future__ import annotations

from typing import Any

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    RelationCreated,
    RelationUpdated,
)
from eventstore.hlc import stamp_of
from projections.graph import EntityAttributes, GraphProjection, RelationDetails
from tests.projections.test_graph import at, fold

ALICE = "Alice"


def ms(n: int) -> int:
    """The stamp of wall millisecond n (the fold's times are the stamps' milliseconds)."""
    return stamp_of(n)


def made(**attrs: Any) -> EntityCreated:
    return EntityCreated(name=ALICE, entity_type="person", **attrs)


def updated(**attrs: Any) -> EntityUpdated:
    return EntityUpdated(name=ALICE, **attrs)


def edge(**attrs: Any) -> RelationCreated:
    return RelationCreated(from_entity=ALICE, to_entity="X", relation_type="works_on", **attrs)


def edge_updated(**attrs: Any) -> RelationUpdated:
    return RelationUpdated(from_entity=ALICE, to_entity="X", relation_type="works_on", **attrs)


def both_ends() -> list[Any]:
    return [at(ms(1), made()), at(ms(2), EntityCreated(name="X", entity_type="project"))]


def test_an_entity_created_without_attributes_reads_the_defaults_and_its_creation_time() -> None:
    graph = fold(at(ms(40), made()))

    assert graph.entity_attributes(ALICE) == EntityAttributes(ALICE, last_seen=40)


def test_entity_attributes_are_the_newest_writes_whatever_the_order() -> None:
    events = [
        at(ms(1), made(confidence=0.6, aliases=["Al"], properties={"team": "core"})),
        at(ms(2), updated(confidence=0.9, times_mentioned=3)),
        at(ms(3), updated(confidence=0.7, last_seen=99, subtype="lead")),
    ]
    expected = EntityAttributes(
        ALICE,
        confidence=0.7,
        times_mentioned=3,
        last_seen=99,
        subtype="lead",
        aliases=["Al"],
        properties={"team": "core"},
    )

    assert fold(*events).entity_attributes(ALICE) == expected
    assert fold(*reversed(events)).entity_attributes(ALICE) == expected
    assert fold(*events, *events).entity_attributes(ALICE) == expected


def test_a_cleared_entity_attribute_reads_unset_unless_a_newer_write_sets_it_again() -> None:
    base = [at(ms(1), made(subtype="lead", source_file="a.md"))]
    cleared = at(ms(2), updated(cleared=["subtype"]))
    rewritten = at(ms(3), updated(subtype="owner"))

    graph = fold(*base, cleared)
    attributes = graph.entity_attributes(ALICE)
    assert attributes is not None
    assert (attributes.subtype, attributes.source_file) == (None, "a.md")
    assert fold(rewritten, cleared, *base).entity_attributes(ALICE) == EntityAttributes(
        ALICE, last_seen=1, subtype="owner", source_file="a.md"
    )


def test_a_re_creation_starts_the_attributes_fresh_but_keeps_newer_writes() -> None:
    before = at(ms(2), updated(confidence=0.9, subtype="lead"))
    after = at(ms(6), updated(times_mentioned=4))
    events = [
        at(ms(1), made(aliases=["Al"])),
        before,
        at(ms(3), EntityDeleted(name=ALICE)),
        at(ms(5), made(confidence=0.3)),
        after,
    ]
    expected = EntityAttributes(ALICE, confidence=0.3, times_mentioned=4, last_seen=5)

    assert fold(*events).entity_attributes(ALICE) == expected
    # The newer write arriving before the creation it follows still survives it.
    assert fold(after, *reversed(events[:4])).entity_attributes(ALICE) == expected


def test_a_relation_reads_its_creation_time_as_ingested_and_confirmed_unless_given() -> None:
    graph = fold(*both_ends(), at(ms(7), edge(evidence="standup notes")))

    assert graph.relation_details(ALICE, "X", "works_on") == RelationDetails(
        ALICE, "X", "works_on", "standup notes", ingested_at=7, last_confirmed=7
    )
    moved = fold(*both_ends(), at(ms(7), edge(ingested_at=3, last_confirmed=4)))
    assert moved.relation_details(ALICE, "X", "works_on") == RelationDetails(
        ALICE, "X", "works_on", None, ingested_at=3, last_confirmed=4
    )


def test_a_relation_update_confirms_and_replaces_the_evidence() -> None:
    events = [
        *both_ends(),
        at(ms(7), edge(evidence="standup notes")),
        at(ms(9), edge_updated(evidence="the org chart", last_confirmed=20)),
    ]
    expected = RelationDetails(ALICE, "X", "works_on", "the org chart", 7, 20)

    assert fold(*events).relation_details(ALICE, "X", "works_on") == expected
    assert fold(*reversed(events)).relation_details(ALICE, "X", "works_on") == expected


def test_clearing_invalid_at_re_opens_a_superseded_relation() -> None:
    events = [
        *both_ends(),
        at(ms(7), edge(weight=0.8, valid_at=100)),
        at(ms(8), edge_updated(invalid_at=200)),
        at(ms(9), edge_updated(cleared=["invalid_at"])),
    ]
    superseded = fold(*events[:4]).relation(ALICE, "X", "works_on")
    assert superseded is not None
    assert superseded.invalid_at == 200

    for order in (events, list(reversed(events))):
        view = fold(*order).relation(ALICE, "X", "works_on")
        assert view is not None
        assert (view.weight, view.valid_at, view.invalid_at) == (0.8, 100, None)


def test_a_cleared_relation_attribute_reads_its_default() -> None:
    events = [
        *both_ends(),
        at(ms(7), edge(weight=0.8, properties={"role": "lead"}, evidence="notes")),
        at(ms(8), edge_updated(cleared=["weight", "properties", "evidence", "last_confirmed"])),
    ]
    graph = fold(*events)

    view = graph.relation(ALICE, "X", "works_on")
    assert view is not None
    assert (view.weight, view.properties) == (1.0, {})
    assert graph.relation_details(ALICE, "X", "works_on") == RelationDetails(
        ALICE, "X", "works_on", None, 7, 7
    )


def test_attributes_survive_a_snapshot_round_trip() -> None:
    graph = fold(
        *both_ends(),
        at(ms(3), updated(confidence=0.9, aliases=["Al"], cleared=["subtype"])),
        at(ms(7), edge(evidence="notes", ingested_at=5)),
        at(ms(8), edge_updated(cleared=["evidence"], last_confirmed=30)),
    )
    restored = GraphProjection.from_snapshot(graph.to_snapshot())

    assert restored.entity_attributes(ALICE) == graph.entity_attributes(ALICE)
    assert restored.relation_details(ALICE, "X", "works_on") == RelationDetails(
        ALICE, "X", "works_on", None, 5, 30
    )
    assert restored.to_snapshot() == graph.to_snapshot()


def test_gone_entities_and_relations_have_no_attributes() -> None:
    graph = fold(*both_ends(), at(ms(3), EntityDeleted(name=ALICE)))

    assert graph.entity_attributes(ALICE) is None
    assert graph.entity_attributes("nobody") is None
    assert graph.relation_details(ALICE, "X", "works_on") is None


# --- the name index -----------------------------------------------------------------------


def test_names_resolve_exactly_then_case_insensitively_then_by_alias_then_by_slug() -> None:
    graph = fold(
        at(ms(1), made(aliases=["Al"])),
        at(ms(2), EntityCreated(name="Bob Smith", entity_type="person")),
    )

    assert graph.resolve_name(ALICE).names == (ALICE,)
    assert graph.resolve_name("alice").step == "folded"
    assert graph.resolve_name("AL").names == (ALICE,)
    assert graph.resolve_name("AL").step == "alias"
    assert graph.resolve_name("bob-smith").names == ("Bob Smith",)
    assert graph.resolve_name("bob-smith").step == "slug"
    assert not graph.resolve_name("Carol").found


def test_the_name_index_follows_alias_writes_clears_deletions_and_re_creations() -> None:
    graph = fold(at(ms(1), made()))
    assert not graph.resolve_name("Al").found  # the index is built here, then kept

    graph.apply(at(ms(2), updated(aliases=["Al"])))
    assert graph.resolve_name("al").names == (ALICE,)
    graph.apply(at(ms(3), updated(cleared=["aliases"])))
    assert not graph.resolve_name("al").found
    graph.apply(at(ms(4), updated(aliases=["Ally"])))
    graph.apply(at(ms(5), EntityDeleted(name=ALICE)))
    assert not graph.resolve_name("ally").found
    assert not graph.resolve_name(ALICE).found
    graph.apply(at(ms(6), made(aliases=["Lis"])))
    assert not graph.resolve_name("ally").found  # a re-creation starts the aliases fresh
    assert graph.resolve_name("lis").names == (ALICE,)
