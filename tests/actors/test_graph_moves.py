"""Moves (rename, merge, repointing a relation) carry the graph family's fields over, and the
working graph a command decides against answers the family's reads with its own writes."""

from __future__ import annotations

from actors.commands import (
    EntityMerge,
    EntityUpdate,
    MergeEntities,
    RelationUpdate,
    UpdateEntities,
    UpdateRelations,
)
from actors.graph_commands import BatchEntity, GraphRelate, GraphRelateBatch
from actors.working_graph import WorkingGraph
from eventstore.events import EntityCreated, EntityDeleted, RelationUpdated
from projections.graph import GraphProjection
from tests.actors.graph_support import DAY, T0, run_at
from tests.helpers import entity, graph_with


def related_graph() -> GraphProjection:
    graph = GraphProjection()
    run_at(
        graph,
        GraphRelateBatch(
            entities=[
                BatchEntity(
                    local_id="a",
                    name="Alice",
                    entity_type="Person",
                    confidence=0.9,
                    properties={"aliases": "Al", "subtype": "rule", "role": "lead"},
                )
            ]
        ),
        T0,
    )
    run_at(
        graph,
        GraphRelate(
            from_name="Alice",
            from_type="Person",
            to_name="X",
            to_type="Project",
            relation="WORKS_ON",
            weight=0.7,
            evidence="she said",
            valid_at="2025-01-01",
        ),
        T0 + DAY,
    )
    return graph


def test_a_rename_keeps_the_entitys_attributes_and_its_relations_details() -> None:
    graph = related_graph()
    before = graph.entity_attributes("Alice")
    details = graph.relation_details("Alice", "X", "WORKS_ON")
    run_at(graph, UpdateEntities([EntityUpdate("Alice", new_name="Alicia")]), T0 + 5 * DAY)
    after = graph.entity_attributes("Alicia")
    assert before is not None and after is not None
    assert (after.confidence, after.times_mentioned, after.subtype, after.aliases) == (
        before.confidence,
        before.times_mentioned,
        "rule",
        ["Al"],
    )
    assert after.properties == {"role": "lead"}
    moved = graph.relation_details("Alicia", "X", "WORKS_ON")
    assert details is not None and moved is not None
    assert (moved.evidence, moved.ingested_at, moved.last_confirmed) == (
        "she said",
        details.ingested_at,
        details.last_confirmed,
    )
    view = graph.relation("Alicia", "X", "WORKS_ON")
    assert view is not None and view.weight == 0.7 and view.valid_at is not None


def test_a_merge_and_a_repointed_relation_keep_the_relations_details() -> None:
    graph2 = related_graph()
    run_at(
        graph2,
        UpdateRelations([RelationUpdate("Alice", "X", "WORKS_ON", new_relation_type="LEADS")]),
        T0 + 2 * DAY,
    )
    details = graph2.relation_details("Alice", "X", "LEADS")
    assert details is not None and (details.evidence, details.ingested_at) == ("she said", T0 + DAY)
    graph3 = related_graph()
    run_at(
        graph3,
        GraphRelateBatch(entities=[BatchEntity(local_id="b", name="Bea", entity_type="Person")]),
    )
    run_at(graph3, MergeEntities([EntityMerge("Alice", "Bea")]), T0 + 3 * DAY)
    merged = graph3.relation_details("Bea", "X", "WORKS_ON")
    assert merged is not None and (merged.evidence, merged.last_confirmed) == ("she said", T0 + DAY)


def test_renaming_an_entity_without_attributes_creates_it_plain() -> None:
    graph = graph_with(entity("A", "t", "o"))
    run_at(graph, UpdateEntities([EntityUpdate("A", new_name="B")]))
    attributes = graph.entity_attributes("B")
    assert attributes is not None and (attributes.confidence, attributes.times_mentioned) == (
        0.5,
        1,
    )


def test_the_working_graph_resolves_and_reads_what_it_wrote() -> None:
    graph = related_graph()
    work = WorkingGraph(graph, T0 + 9 * DAY)
    work.record(EntityCreated(name="Zoë", entity_type="Person", aliases=["Z"]))
    work.record(EntityDeleted(name="X"))
    assert work.resolve_name("zoë").names == ("Zoë",)
    assert work.resolve_name("z").names == ("Zoë",)
    assert work.resolve_name("al").names == ("Alice",)  # from the graph beneath
    assert not work.resolve_name("x").found
    created = work.entity_attributes("Zoë")
    assert created is not None and created.last_seen == T0 + 9 * DAY
    assert work.relation_details("Alice", "X", "WORKS_ON") is None


def test_the_working_graph_applies_a_cleared_invalid_at() -> None:
    graph = related_graph()
    work = WorkingGraph(graph, T0)
    key = {"from_entity": "Alice", "to_entity": "X", "relation_type": "WORKS_ON"}
    work.record(RelationUpdated(**key, invalid_at=5, last_confirmed=7))
    closed = work.relation("Alice", "X", "WORKS_ON")
    assert closed is not None and closed.invalid_at == 5
    work.record(RelationUpdated(**key, cleared=["invalid_at"]))
    reopened = work.relation("Alice", "X", "WORKS_ON")
    details = work.relation_details("Alice", "X", "WORKS_ON")
    assert reopened is not None and reopened.invalid_at is None
    assert details is not None and details.last_confirmed == 7
