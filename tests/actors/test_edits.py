"""decide for the edit and merge commands: renames, retypes, content replacements, relation
edits and merges, decided then folded; every refusal leaves the graph untouched."""

from __future__ import annotations

import pytest

from actors.commands import (
    CreateEntities,
    CreateRelations,
    EntityMerge,
    EntityUpdate,
    EntityUpdateResult,
    MergeEntities,
    MergeEntitiesResult,
    MergeResult,
    ObservationUpdate,
    ObservationUpdateResult,
    RelationUpdate,
    RelationUpdateResult,
    UpdateEntities,
    UpdateEntitiesResult,
    UpdateObservations,
    UpdateObservationsResult,
    UpdateRelations,
    UpdateRelationsResult,
)
from actors.decide import decide
from actors.errors import (
    CommandRejectedError,
    EntityExistsError,
    EntityNotFoundError,
    MergeIntoItselfError,
    NothingToUpdateError,
    ObservationNotFoundError,
    RelationExistsError,
    RelationNotFoundError,
)
from eventstore.events import (
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import EntityView, GraphProjection
from tests.helpers import entity, graph_with, run, stamp
from tests.helpers import relation as rel


def triples(graph: GraphProjection) -> list[tuple[str, str, str]]:
    return [(r.from_entity, r.to_entity, r.relation_type) for r in graph.relations()]


def rename(name: str, new_name: str | None = None, new_type: str | None = None) -> UpdateEntities:
    return UpdateEntities([EntityUpdate(name, new_name, new_type)])


# --- update_entities --------------------------------------------------------------------------


def test_a_rename_moves_observations_and_repoints_every_incident_relation() -> None:
    graph = graph_with(
        entity("Alice", "person", "likes tea", "likes tea", "runs"),
        entity("Bob"),
        relations=(
            rel("Alice", "Bob", "knows"),
            rel("Bob", "Alice", "admires"),
            rel("Alice", "Alice", "is"),
        ),
    )

    result = run(graph, rename("Alice", "Alicia"))

    assert result == UpdateEntitiesResult(
        [
            EntityUpdateResult(
                "Alice",
                "Alicia",
                "person",
                True,
                False,
                3,
                [
                    rel("Alicia", "Bob", "knows"),
                    rel("Bob", "Alicia", "admires"),
                    rel("Alicia", "Alicia", "is"),
                ],
            )
        ]
    )
    assert graph.entity("Alice") is None
    assert graph.entity("Alicia") == EntityView(
        "Alicia", "person", ["likes tea", "likes tea", "runs"]
    )
    assert sorted(triples(graph)) == [
        ("Alicia", "Alicia", "is"),
        ("Alicia", "Bob", "knows"),
        ("Bob", "Alicia", "admires"),
    ]


def test_a_rename_is_tombstones_then_creations_then_a_marker() -> None:
    graph = graph_with(entity("A", "t", "o"), entity("B"), relations=(rel("A", "B", "r"),))

    events = decide(graph, rename("A", "C", "u")).events

    assert events == [
        EntityDeleted(name="A"),
        RelationDeleted(from_entity="A", to_entity="B", relation_type="r"),
        EntityCreated(name="C", entity_type="u"),
        ObservationAdded(entity="C", content="o"),
        # The moved relation keeps when it was learned and confirmed (the test stamps: 0 ms).
        RelationCreated(
            from_entity="C", to_entity="B", relation_type="r", ingested_at=0, last_confirmed=0
        ),
        EntityRenamed(old_name="A", new_name="C"),
    ]


def test_recreating_the_old_name_after_a_rename_revives_nothing() -> None:
    graph = graph_with(entity("A", "t", "o"), entity("B"), relations=(rel("A", "B", "r"),))
    run(graph, rename("A", "C"))

    run(graph, CreateEntities([entity("A", "t")]))

    assert graph.entity("A") == EntityView("A", "t", [])
    assert triples(graph) == [("C", "B", "r")]


def test_a_rename_keeps_the_relation_attributes() -> None:
    graph = graph_with(entity("A"), entity("B"))
    graph.apply_all(
        stamp(
            [
                RelationCreated(
                    from_entity="A", to_entity="B", relation_type="r", weight=0.5, valid_at=7
                )
            ],
            start_seq=graph.position + 1,
        )
    )
    graph.apply_all(
        stamp(
            [
                RelationUpdated(
                    from_entity="A", to_entity="B", relation_type="r", properties={"k": 1}
                )
            ],
            start_seq=graph.position + 1,
        )
    )

    run(graph, rename("A", "Z"))

    view = graph.relation("Z", "B", "r")
    assert view is not None
    assert (view.weight, view.valid_at, view.properties) == (0.5, 7, {"k": 1})


def test_a_retype_alone_is_one_entity_update() -> None:
    graph = graph_with(entity("A", "t", "o"), entity("B"), relations=(rel("A", "B", "r"),))

    decision = decide(graph, rename("A", None, "u"))
    assert decision.events == [EntityUpdated(name="A", entity_type="u")]
    run(graph, rename("A", None, "u"))

    assert graph.entity("A") == EntityView("A", "u", ["o"])
    assert triples(graph) == [("A", "B", "r")]


def test_asking_for_the_current_name_and_type_changes_nothing() -> None:
    graph = graph_with(entity("A", "t"))

    decision = decide(graph, rename("A", "A", "t"))

    assert decision.events == []
    assert decision.result == UpdateEntitiesResult(
        [EntityUpdateResult("A", "A", "t", False, False, 0, [])]
    )


def test_renames_in_one_call_see_each_other() -> None:
    graph = graph_with(
        entity("A", "t", "a"), entity("B", "t", "b"), relations=(rel("A", "B", "r"),)
    )

    run(
        graph,
        UpdateEntities(
            [EntityUpdate("A", "A2"), EntityUpdate("B", "B2"), EntityUpdate("A2", "A3")]
        ),
    )

    assert [v.name for v in graph.entities()] == ["B2", "A3"]
    assert triples(graph) == [("A3", "B2", "r")]
    assert graph.observations("A3") == ["a"]


def test_two_entities_can_swap_names_through_a_third_in_one_call() -> None:
    graph = graph_with(entity("A", "t", "a"), entity("B", "t", "b"))

    run(
        graph,
        UpdateEntities(
            [EntityUpdate("A", "tmp"), EntityUpdate("B", "A"), EntityUpdate("tmp", "B")]
        ),
    )

    assert graph.observations("A") == ["b"]
    assert graph.observations("B") == ["a"]
    assert graph.entity("tmp") is None


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (rename("Nobody", "X"), EntityNotFoundError),
        (rename("A", "B"), EntityExistsError),
        (rename("A"), NothingToUpdateError),
        (
            UpdateEntities([EntityUpdate("A", "C"), EntityUpdate("Nobody", "D")]),
            EntityNotFoundError,
        ),
        (UpdateEntities([EntityUpdate("A", "C"), EntityUpdate("B", "C")]), EntityExistsError),
    ],
)
def test_a_refused_update_leaves_the_graph_untouched(
    command: UpdateEntities, error: type[CommandRejectedError]
) -> None:
    graph = graph_with(entity("A", "t", "o"), entity("B"), relations=(rel("A", "B", "r"),))
    before = graph.snapshot()

    with pytest.raises(error):
        run(graph, command)

    assert graph.snapshot() == before


def test_renaming_onto_an_existing_name_says_to_merge_instead() -> None:
    graph = graph_with(entity("A"), entity("B"))

    with pytest.raises(EntityExistsError) as refused:
        decide(graph, rename("A", "B"))

    assert "merge_entities" in refused.value.message
    assert "already exists" in refused.value.message


# --- update_observations ----------------------------------------------------------------------


def test_an_observation_update_removes_every_occurrence_and_adds_the_new_once() -> None:
    graph = graph_with(entity("A", "t", "old", "keep", "old"))

    result = run(graph, UpdateObservations([ObservationUpdate("A", "old", "new")]))

    assert result == UpdateObservationsResult([ObservationUpdateResult("A", "old", "new", 2, True)])
    assert graph.observations("A") == ["keep", "new"]


def test_an_observation_update_to_a_content_already_there_does_not_duplicate_it() -> None:
    graph = graph_with(entity("A", "t", "old", "new"))

    result = run(graph, UpdateObservations([ObservationUpdate("A", "old", "new")]))

    assert result == UpdateObservationsResult(
        [ObservationUpdateResult("A", "old", "new", 1, False)]
    )
    assert graph.observations("A") == ["new"]


def test_observation_updates_in_one_call_see_each_other() -> None:
    graph = graph_with(entity("A", "t", "1"))

    run(
        graph,
        UpdateObservations([ObservationUpdate("A", "1", "2"), ObservationUpdate("A", "2", "3")]),
    )

    assert graph.observations("A") == ["3"]


def test_an_observation_update_writes_a_content_delete_then_an_add() -> None:
    graph = graph_with(entity("A", "t", "1"))

    events = decide(graph, UpdateObservations([ObservationUpdate("A", "1", "2")])).events

    assert events == [
        ObservationDeleted(entity="A", content="1"),
        ObservationAdded(entity="A", content="2"),
    ]


@pytest.mark.parametrize(
    ("update", "error"),
    [
        (ObservationUpdate("Nobody", "1", "2"), EntityNotFoundError),
        (ObservationUpdate("A", "missing", "2"), ObservationNotFoundError),
    ],
)
def test_a_refused_observation_update_leaves_the_graph_untouched(
    update: ObservationUpdate, error: type[CommandRejectedError]
) -> None:
    graph = graph_with(entity("A", "t", "1"))
    before = graph.snapshot()

    with pytest.raises(error):
        run(graph, UpdateObservations([ObservationUpdate("A", "1", "x"), update]))

    assert graph.snapshot() == before


# --- update_relations -------------------------------------------------------------------------


def test_a_relation_update_changes_the_type_and_keeps_omitted_fields() -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(rel("A", "B", "knows"),))

    result = run(
        graph, UpdateRelations([RelationUpdate("A", "B", "knows", new_relation_type="likes")])
    )

    assert result == UpdateRelationsResult(
        [RelationUpdateResult(rel("A", "B", "knows"), rel("A", "B", "likes"), True)]
    )
    assert triples(graph) == [("A", "B", "likes")]


def test_a_relation_update_repoints_its_endpoints() -> None:
    graph = graph_with(entity("A"), entity("B"), entity("C"), relations=(rel("A", "B", "r"),))

    run(graph, UpdateRelations([RelationUpdate("A", "B", "r", new_from="C", new_to="A")]))

    assert triples(graph) == [("C", "A", "r")]


def test_a_relation_update_to_its_own_key_changes_nothing() -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(rel("A", "B", "r"),))

    decision = decide(graph, UpdateRelations([RelationUpdate("A", "B", "r", new_to="B")]))

    assert decision.events == []
    assert decision.result == UpdateRelationsResult(
        [RelationUpdateResult(rel("A", "B", "r"), rel("A", "B", "r"), False)]
    )


@pytest.mark.parametrize(
    ("update", "error"),
    [
        (RelationUpdate("A", "B", "nope", new_relation_type="x"), RelationNotFoundError),
        (RelationUpdate("A", "B", "r", new_to="Nobody"), EntityNotFoundError),
        (RelationUpdate("A", "B", "r", new_from="Nobody"), EntityNotFoundError),
        (RelationUpdate("A", "B", "r", new_relation_type="t"), RelationExistsError),
        (RelationUpdate("A", "B", "r"), NothingToUpdateError),
    ],
)
def test_a_refused_relation_update_leaves_the_graph_untouched(
    update: RelationUpdate, error: type[CommandRejectedError]
) -> None:
    graph = graph_with(entity("A"), entity("B"), relations=(rel("A", "B", "r"), rel("A", "B", "s")))
    before = graph.snapshot()

    with pytest.raises(error):
        run(graph, UpdateRelations([RelationUpdate("A", "B", "s", new_relation_type="t"), update]))

    assert graph.snapshot() == before


# --- merge_entities ---------------------------------------------------------------------------


def test_a_merge_unions_observations_repoints_relations_and_deletes_the_source() -> None:
    graph = graph_with(
        entity("Bob", "person", "b1", "shared"),
        entity("Robert", "person", "shared", "r1", "r1"),
        entity("Carol"),
        relations=(rel("Robert", "Carol", "knows"), rel("Carol", "Robert", "likes")),
    )

    result = run(graph, MergeEntities([EntityMerge("Robert", "Bob")]))

    assert result == MergeEntitiesResult(
        [
            MergeResult(
                "Robert",
                "Bob",
                ["r1"],
                [rel("Bob", "Carol", "knows"), rel("Carol", "Bob", "likes")],
                [],
            )
        ]
    )
    assert graph.entity("Robert") is None
    assert graph.observations("Bob") == ["b1", "shared", "r1"]
    assert sorted(triples(graph)) == [("Bob", "Carol", "knows"), ("Carol", "Bob", "likes")]


def test_a_merge_drops_duplicates_and_links_between_the_two_instead_of_self_loops() -> None:
    graph = graph_with(
        entity("T"),
        entity("S"),
        entity("X"),
        relations=(
            rel("S", "T", "same"),
            rel("T", "S", "same"),
            rel("S", "X", "r"),
            rel("T", "X", "r"),
            rel("S", "S", "self"),
        ),
    )

    result = run(graph, MergeEntities([EntityMerge("S", "T")]))

    assert isinstance(result, MergeEntitiesResult)
    merged = result.results[0]
    assert merged.moved_relations == [rel("T", "T", "self")]
    assert sorted(
        (r.from_entity, r.to_entity, r.relation_type) for r in merged.dropped_relations
    ) == [
        ("S", "T", "same"),
        ("S", "X", "r"),
        ("T", "S", "same"),
    ]
    assert sorted(triples(graph)) == [("T", "T", "self"), ("T", "X", "r")]


def test_a_merge_writes_a_marker_of_what_moved() -> None:
    graph = graph_with(
        entity("T"),
        entity("S", "t", "o"),
        entity("X"),
        relations=(rel("S", "X", "r"), rel("S", "T", "r")),
    )

    events = decide(graph, MergeEntities([EntityMerge("S", "T")])).events

    assert events[-1] == EntitiesMerged(
        sources=["S"],
        target="T",
        moved_observations=["o"],
        moved_relations=[("S", "X", "r")],
        dropped_relations=[("S", "T", "r")],
    )


def test_merges_in_one_call_see_each_other() -> None:
    graph = graph_with(
        entity("T", "t", "t"), entity("S1", "t", "a"), entity("S2", "t", "a", "b"), entity("X")
    )
    run(graph, CreateRelations([rel("S1", "X", "r"), rel("S2", "X", "r")]))

    result = run(graph, MergeEntities([EntityMerge("S1", "T"), EntityMerge("S2", "T")]))

    assert isinstance(result, MergeEntitiesResult)
    assert [r.moved_observations for r in result.results] == [["a"], ["b"]]
    assert result.results[1].dropped_relations == [rel("S2", "X", "r")]
    assert [v.name for v in graph.entities()] == ["T", "X"]
    assert graph.observations("T") == ["t", "a", "b"]
    assert triples(graph) == [("T", "X", "r")]


@pytest.mark.parametrize(
    ("merge", "error"),
    [
        (EntityMerge("A", "A"), MergeIntoItselfError),
        (EntityMerge("Nobody", "A"), EntityNotFoundError),
        (EntityMerge("A", "Nobody"), EntityNotFoundError),
    ],
)
def test_a_refused_merge_leaves_the_graph_untouched(
    merge: EntityMerge, error: type[CommandRejectedError]
) -> None:
    graph = graph_with(
        entity("A", "t", "a"), entity("B", "t", "b"), entity("C"), relations=(rel("A", "B", "r"),)
    )
    before = graph.snapshot()

    with pytest.raises(error):
        run(graph, MergeEntities([EntityMerge("C", "B"), merge]))

    assert graph.snapshot() == before


def test_merging_a_source_already_merged_in_the_same_call_is_refused() -> None:
    graph = graph_with(entity("A"), entity("B"), entity("C"))

    with pytest.raises(EntityNotFoundError):
        decide(graph, MergeEntities([EntityMerge("A", "B"), EntityMerge("A", "C")]))
