"""decide: the official memory server's behaviours (released and main), decided then folded."""

from __future__ import annotations

from typing import get_args

import pytest

from actors.commands import (
    AddObservations,
    AddObservationsResult,
    AddObservationsResultItem,
    Command,
    CommandOf,
    CommandResult,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    CreateRelationsResult,
    DeleteEntities,
    DeleteEntitiesResult,
    DeleteObservations,
    DeleteObservationsResult,
    DeleteRelations,
    DeleteRelationsResult,
    ObservationDeletion,
    ObservationInput,
)
from actors.decide import decide
from actors.errors import CommandRejectedError, EntityNotFoundError
from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
)
from projections.graph import EntityView, GraphProjection, RelationView
from tests.helpers import entity, graph_with, relation, run


def names(graph: GraphProjection) -> list[str]:
    return [view.name for view in graph.entities()]


def triples(relations: list[RelationView]) -> list[tuple[str, str, str]]:
    return [(r.from_entity, r.to_entity, r.relation_type) for r in relations]


def all_triples(graph: GraphProjection) -> list[tuple[str, str, str]]:
    return triples(list(graph.relations()))


# --- createEntities -------------------------------------------------------------------------


def test_create_entities_creates_and_returns_them_unchanged() -> None:
    graph = GraphProjection()
    alice = entity("Alice", "person", "works at Acme Corp")
    bob = entity("Bob", "person", "likes programming")

    result = run(graph, CreateEntities([alice, bob]))

    assert result == CreateEntitiesResult([alice, bob], [])
    assert list(graph.entities()) == [
        EntityView("Alice", "person", ["works at Acme Corp"]),
        EntityView("Bob", "person", ["likes programming"]),
    ]


def test_creating_an_existing_entity_again_creates_nothing_and_reports_it_skipped() -> None:
    graph = graph_with(entity("Alice", "person", "a"))

    result = run(graph, CreateEntities([entity("Alice", "robot", "b")]))

    assert result == CreateEntitiesResult([], ["Alice"])
    assert list(graph.entities()) == [EntityView("Alice", "person", ["a"])]


def test_create_entities_with_nothing_creates_nothing() -> None:
    graph = GraphProjection()

    decision = decide(graph, CreateEntities([]))

    assert decision.events == []
    assert decision.result == CreateEntitiesResult([], [])


def test_create_entities_skips_a_name_repeated_in_the_same_batch() -> None:
    graph = GraphProjection()

    result = run(graph, CreateEntities([entity("A", "x", "1"), entity("A", "y", "2"), entity("B")]))

    assert result == CreateEntitiesResult([entity("A", "x", "1"), entity("B")], ["A"])
    assert list(graph.entities()) == [EntityView("A", "x", ["1"]), EntityView("B", "person", [])]


def test_create_entities_keeps_duplicate_observations_as_given() -> None:
    graph = GraphProjection()

    run(graph, CreateEntities([entity("A", "x", "dup", "dup")]))

    assert graph.observations("A") == ["dup", "dup"]


def test_create_entities_writes_the_creation_then_each_observation() -> None:
    decision = decide(GraphProjection(), CreateEntities([entity("A", "x", "1", "2")]))

    assert decision.events == [
        EntityCreated(name="A", entity_type="x"),
        ObservationAdded(entity="A", content="1"),
        ObservationAdded(entity="A", content="2"),
    ]


def test_a_deleted_entity_can_be_created_again_and_starts_fresh() -> None:
    graph = graph_with(entity("A", "x", "old"), entity("B"))
    run(graph, DeleteEntities(["A"]))

    result = run(graph, CreateEntities([entity("A", "y", "new")]))

    assert result == CreateEntitiesResult([entity("A", "y", "new")], [])
    assert list(graph.entities()) == [EntityView("B", "person", []), EntityView("A", "y", ["new"])]


# --- createRelations ------------------------------------------------------------------------


def test_create_relations_creates_and_returns_the_relation() -> None:
    graph = graph_with(entity("Alice"), entity("Bob"))

    result = run(graph, CreateRelations([relation("Alice", "Bob", "knows")]))

    assert result == CreateRelationsResult([relation("Alice", "Bob", "knows")], [])
    assert list(graph.relations()) == [RelationView("Alice", "Bob", "knows", 1.0)]


def test_creating_an_existing_relation_again_creates_nothing() -> None:
    graph = graph_with(
        entity("Alice"), entity("Bob"), relations=(relation("Alice", "Bob", "knows"),)
    )

    result = run(graph, CreateRelations([relation("Alice", "Bob", "knows")]))

    assert result == CreateRelationsResult([], [relation("Alice", "Bob", "knows")])
    assert graph.relation_count() == 1


def test_create_relations_with_nothing_creates_nothing() -> None:
    decision = decide(GraphProjection(), CreateRelations([]))

    assert decision.events == []
    assert decision.result == CreateRelationsResult([], [])


def test_create_relations_skips_a_triple_repeated_in_the_same_batch() -> None:
    graph = graph_with(entity("A"), entity("B"))
    ab = relation("A", "B", "knows")

    result = run(graph, CreateRelations([ab, relation("B", "A", "knows"), ab]))

    assert result == CreateRelationsResult([ab, relation("B", "A", "knows")], [ab])
    assert all_triples(graph) == [("A", "B", "knows"), ("B", "A", "knows")]


def test_a_dangling_relation_is_rejected_and_nothing_of_the_batch_is_written() -> None:
    graph = graph_with(entity("Alice"), entity("Bob"))
    before = graph.snapshot()

    with pytest.raises(EntityNotFoundError) as raised:
        decide(
            graph,
            CreateRelations(
                [relation("Alice", "Bob", "knows"), relation("Alice", "Nobody", "knows")]
            ),
        )

    assert str(raised.value) == "Entity with name Nobody not found"
    assert raised.value.name == "Nobody"
    assert graph.snapshot() == before


def test_the_missing_from_endpoint_is_reported_before_the_missing_to_endpoint() -> None:
    graph = graph_with(entity("A"))

    with pytest.raises(EntityNotFoundError, match=r"^Entity with name X not found$"):
        decide(graph, CreateRelations([relation("A", "A", "ok"), relation("X", "Y", "r")]))
    with pytest.raises(EntityNotFoundError, match=r"^Entity with name Y not found$"):
        decide(graph, CreateRelations([relation("A", "Y", "r"), relation("X", "A", "r")]))


def test_a_relation_to_a_deleted_entity_is_rejected() -> None:
    graph = graph_with(entity("A"), entity("B"))
    run(graph, DeleteEntities(["B"]))

    with pytest.raises(EntityNotFoundError, match="B"):
        decide(graph, CreateRelations([relation("A", "B", "r")]))


def test_self_relations_are_allowed() -> None:
    graph = graph_with(entity("Alice"))

    run(graph, CreateRelations([relation("Alice", "Alice", "likes")]))

    assert all_triples(graph) == [("Alice", "Alice", "likes")]


def test_create_relations_writes_weight_one() -> None:
    decision = decide(graph_with(entity("A")), CreateRelations([relation("A", "A", "r")]))

    assert decision.events == [RelationCreated(from_entity="A", to_entity="A", relation_type="r")]
    assert decision.events[0].weight == 1.0  # type: ignore[union-attr]


# --- addObservations ------------------------------------------------------------------------


def test_add_observations_adds_new_ones() -> None:
    graph = graph_with(entity("Alice", "person", "works at Acme Corp"))

    result = run(graph, AddObservations([ObservationInput("Alice", ["likes coffee", "has a dog"])]))

    assert result == AddObservationsResult(
        [AddObservationsResultItem("Alice", ["likes coffee", "has a dog"])]
    )
    assert graph.observations("Alice") == ["works at Acme Corp", "likes coffee", "has a dog"]


def test_add_observations_skips_contents_already_present() -> None:
    graph = graph_with(entity("Alice", "person", "works at Acme Corp", "likes coffee"))

    result = run(graph, AddObservations([ObservationInput("Alice", ["likes coffee", "has a dog"])]))

    assert result == AddObservationsResult([AddObservationsResultItem("Alice", ["has a dog"])])
    assert len(graph.observations("Alice")) == 3


def test_add_observations_to_an_unknown_entity_is_rejected_and_nothing_is_written() -> None:
    graph = graph_with(entity("Alice"))
    before = graph.snapshot()

    with pytest.raises(EntityNotFoundError) as raised:
        decide(
            graph,
            AddObservations(
                [ObservationInput("Alice", ["ok"]), ObservationInput("NonExistent", ["x"])]
            ),
        )

    assert raised.value.message == "Entity with name NonExistent not found"
    assert isinstance(raised.value, CommandRejectedError)
    assert graph.snapshot() == before


def test_add_observations_keeps_duplicates_within_one_item() -> None:
    graph = graph_with(entity("Alice"))

    result = run(graph, AddObservations([ObservationInput("Alice", ["has a dog", "has a dog"])]))

    assert result == AddObservationsResult(
        [AddObservationsResultItem("Alice", ["has a dog", "has a dog"])]
    )
    assert graph.observations("Alice") == ["has a dog", "has a dog"]


def test_a_later_item_for_the_same_entity_sees_the_earlier_items_additions() -> None:
    graph = graph_with(entity("A"), entity("B"))

    result = run(
        graph,
        AddObservations(
            [
                ObservationInput("A", ["x"]),
                ObservationInput("B", ["x"]),
                ObservationInput("A", ["x", "y"]),
            ]
        ),
    )

    assert result == AddObservationsResult(
        [
            AddObservationsResultItem("A", ["x"]),
            AddObservationsResultItem("B", ["x"]),
            AddObservationsResultItem("A", ["y"]),
        ]
    )
    assert graph.observations("A") == ["x", "y"]


def test_add_observations_may_add_nothing() -> None:
    graph = graph_with(entity("A", "t", "x"))

    decision = decide(
        graph, AddObservations([ObservationInput("A", ["x"]), ObservationInput("A", [])])
    )

    assert decision.events == []
    assert decision.result == AddObservationsResult(
        [AddObservationsResultItem("A", []), AddObservationsResultItem("A", [])]
    )


# --- deleteEntities -------------------------------------------------------------------------


def test_delete_entities_deletes_the_named_entity_and_leaves_the_others() -> None:
    graph = graph_with(entity("Alice"), entity("Bob"))

    result = run(graph, DeleteEntities(["Alice"]))

    assert result == DeleteEntitiesResult(1, 1, [])
    assert names(graph) == ["Bob"]


def test_delete_entities_cascades_to_every_relation_touching_the_entity() -> None:
    graph = graph_with(
        entity("Alice"),
        entity("Bob"),
        entity("Charlie"),
        relations=(relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")),
    )

    decision = decide(graph, DeleteEntities(["Bob"]))
    run(graph, DeleteEntities(["Bob"]))

    assert decision.events == [
        EntityDeleted(name="Bob"),
        RelationDeleted(from_entity="Alice", to_entity="Bob", relation_type="knows"),
        RelationDeleted(from_entity="Bob", to_entity="Charlie", relation_type="knows"),
    ]
    assert graph.relation_count() == 0
    assert names(graph) == ["Alice", "Charlie"]


def test_deleting_a_non_existent_entity_is_not_an_error_and_is_reported() -> None:
    graph = graph_with(entity("Alice"))

    result = run(graph, DeleteEntities(["Nobody", "Alice", "Nobody", "Alice"]))

    assert result == DeleteEntitiesResult(requested=4, deleted=1, not_found=["Nobody"])
    assert names(graph) == []


def test_deleting_two_related_entities_tombstones_their_relation_once() -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(relation("A", "B", "r"),))

    decision = decide(graph, DeleteEntities(["A", "B"]))

    assert decision.events == [
        EntityDeleted(name="A"),
        EntityDeleted(name="B"),
        RelationDeleted(from_entity="A", to_entity="B", relation_type="r"),
    ]


# --- deleteObservations ---------------------------------------------------------------------


def test_delete_observations_removes_the_listed_content_and_keeps_the_rest() -> None:
    graph = graph_with(entity("Alice", "person", "works at Acme Corp", "likes coffee"))

    result = run(graph, DeleteObservations([ObservationDeletion("Alice", ["likes coffee"])]))

    assert result == DeleteObservationsResult(1, 1, [])
    assert graph.observations("Alice") == ["works at Acme Corp"]


def test_deleting_observations_from_a_non_existent_entity_is_not_an_error() -> None:
    graph = graph_with(entity("Alice", "person", "x"))

    result = run(
        graph,
        DeleteObservations(
            [ObservationDeletion("Nobody", ["x", "y"]), ObservationDeletion("Nobody", ["z"])]
        ),
    )

    assert result == DeleteObservationsResult(requested=3, deleted=0, entities_not_found=["Nobody"])
    assert graph.observations("Alice") == ["x"]


def test_delete_observations_removes_every_occurrence_and_counts_each_listed_content_once() -> None:
    graph = graph_with(entity("A", "t", "x", "y", "x"))
    command = DeleteObservations(
        [ObservationDeletion("A", ["x", "x", "missing"]), ObservationDeletion("A", ["x"])]
    )

    assert decide(graph, command).events == [ObservationDeleted(entity="A", content="x")]
    result = run(graph, command)

    assert result == DeleteObservationsResult(requested=4, deleted=1, entities_not_found=[])
    assert graph.observations("A") == ["y"]


def test_an_observation_can_be_added_again_after_it_was_deleted() -> None:
    graph = graph_with(entity("A", "t", "x"))
    run(graph, DeleteObservations([ObservationDeletion("A", ["x"])]))

    run(graph, AddObservations([ObservationInput("A", ["x"])]))

    assert graph.observations("A") == ["x"]


# --- deleteRelations ------------------------------------------------------------------------


def test_delete_relations_deletes_only_the_exact_triple() -> None:
    graph = graph_with(
        entity("Alice"),
        entity("Bob"),
        relations=(relation("Alice", "Bob", "knows"), relation("Alice", "Bob", "works_with")),
    )

    result = run(graph, DeleteRelations([relation("Alice", "Bob", "knows")]))

    assert result == DeleteRelationsResult(1, 1)
    assert all_triples(graph) == [("Alice", "Bob", "works_with")]


def test_delete_relations_counts_misses_and_repeats() -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(relation("A", "B", "knows"),))
    knows = relation("A", "B", "knows")

    decision = decide(graph, DeleteRelations([knows, relation("A", "B", "likes"), knows]))

    assert decision.result == DeleteRelationsResult(requested=3, deleted=1)
    assert decision.events == [
        RelationDeleted(from_entity="A", to_entity="B", relation_type="knows")
    ]


def test_a_deleted_relation_can_be_created_again() -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(relation("A", "B", "r"),))
    run(graph, DeleteRelations([relation("A", "B", "r")]))

    result = run(graph, CreateRelations([relation("A", "B", "r")]))

    assert result == CreateRelationsResult([relation("A", "B", "r")], [])
    assert all_triples(graph) == [("A", "B", "r")]


# --- readGraph, searchNodes and openNodes, as far as the graph serves them ------------------


def test_an_empty_graph_reads_empty() -> None:
    graph = GraphProjection()

    assert list(graph.entities()) == []
    assert list(graph.relations()) == []


def test_read_graph_returns_entities_and_a_self_relation() -> None:
    graph = graph_with(
        entity("Alice"), entity("Bob"), relations=(relation("Alice", "Alice", "self"),)
    )

    assert names(graph) == ["Alice", "Bob"]
    assert all_triples(graph) == [("Alice", "Alice", "self")]


def search_fixture() -> GraphProjection:
    return graph_with(
        entity("Alice", "person", "works at Acme Corp", "likes programming"),
        entity("Bob", "person", "works at TechCo"),
        entity("Acme Corp", "company", "tech company"),
        relations=(
            relation("Alice", "Acme Corp", "works_at"),
            relation("Bob", "Acme Corp", "competitor"),
        ),
    )


def search(graph: GraphProjection, query: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The official search_nodes rule over the graph's read API (the search tool does this)."""
    needle = query.lower()
    found = [
        view.name
        for view in graph.entities()
        if needle in view.name.lower()
        or needle in view.entity_type.lower()
        or any(needle in o.lower() for o in view.observations)
    ]
    return found, triples(graph.relations_of_any(found))


def test_search_matches_name_type_and_observation_case_insensitively() -> None:
    graph = search_fixture()

    assert search(graph, "Alice")[0] == ["Alice"]
    assert search(graph, "company")[0] == ["Acme Corp"]
    assert search(graph, "programming")[0] == ["Alice"]
    assert search(graph, "ALICE")[0] == ["Alice"]
    assert search(graph, "nothing matches") == ([], [])


def test_search_returns_relations_with_either_endpoint_among_the_matches() -> None:
    graph = search_fixture()

    assert search(graph, "Acme") == (
        ["Alice", "Acme Corp"],
        [("Alice", "Acme Corp", "works_at"), ("Bob", "Acme Corp", "competitor")],
    )
    assert search(graph, "Alice") == (["Alice"], [("Alice", "Acme Corp", "works_at")])


def open_fixture() -> GraphProjection:
    return graph_with(
        entity("Alice"),
        entity("Bob"),
        entity("Charlie"),
        relations=(relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")),
    )


def open_nodes(
    graph: GraphProjection, requested: list[str]
) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The official open_nodes rule over the graph's read API (the open tool does this)."""
    wanted = set(requested)
    found = [view.name for view in graph.entities() if view.name in wanted]
    return found, triples(graph.relations_of_any(found))


def test_open_nodes_returns_the_requested_entities_and_every_relation_touching_them() -> None:
    graph = open_fixture()

    assert open_nodes(graph, ["Alice", "Bob"]) == (
        ["Alice", "Bob"],
        [("Alice", "Bob", "knows"), ("Bob", "Charlie", "knows")],
    )
    assert open_nodes(graph, ["Bob"])[1] == [("Alice", "Bob", "knows"), ("Bob", "Charlie", "knows")]
    assert open_nodes(graph, ["Alice"])[1] == [("Alice", "Bob", "knows")]
    assert open_nodes(graph, ["Charlie"])[1] == [("Bob", "Charlie", "knows")]


def test_open_nodes_skips_missing_names_and_opens_nothing_for_none() -> None:
    graph = open_fixture()

    assert open_nodes(graph, ["NonExistent"]) == ([], [])
    assert open_nodes(graph, []) == ([], [])


# --- purity ---------------------------------------------------------------------------------


def test_decide_never_changes_the_graph() -> None:
    graph = open_fixture()
    before = graph.snapshot()
    position = graph.position
    commands = [
        CreateEntities([entity("New")]),
        CreateRelations([relation("Alice", "Charlie", "r")]),
        AddObservations([ObservationInput("Alice", ["x"])]),
        DeleteEntities(["Bob"]),
        DeleteObservations([ObservationDeletion("Alice", ["x"])]),
        DeleteRelations([relation("Alice", "Bob", "knows")]),
    ]

    for command in commands:
        decide(graph, command)

    assert graph.snapshot() == before
    assert graph.position == position


def test_every_command_class_is_in_the_command_union_and_answers_its_own_result() -> None:
    commands = set(CommandOf.__subclasses__())
    assert commands == set(get_args(Command))
    for command in commands:
        (result,) = get_args(command.__orig_bases__[0])  # type: ignore[attr-defined]
        assert result.__name__ == f"{command.__name__}Result"
        assert result in get_args(CommandResult)
