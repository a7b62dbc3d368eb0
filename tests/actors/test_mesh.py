"""decide for the schema-driven family (MemoryMesh): nodes, edges, metadata and typed updates,
decided then folded; every refusal leaves the graph untouched and says what to do next."""

from __future__ import annotations

import math

import pytest

from actors.commands import (
    AddEdges,
    AddEdgesResult,
    AddMetadata,
    AddMetadataResult,
    AddNodes,
    AddNodesResult,
    Command,
    DeleteEdges,
    DeleteEdgesResult,
    DeleteMetadata,
    DeleteMetadataResult,
    DeleteNodes,
    DeleteNodesResult,
    EdgeInput,
    EdgeKey,
    EdgeTargets,
    EdgeUpdate,
    MetadataChange,
    NodeInput,
    NodeUpdate,
    PropertyEntry,
    SetNodeProperties,
    SetNodePropertiesResult,
    UpdateEdges,
    UpdateEdgesResult,
    UpdateNodes,
    UpdateNodesResult,
)
from actors.decide import decide
from actors.errors import (
    BlankFieldError,
    CommandRejectedError,
    ConflictingWeightsError,
    DuplicateItemError,
    EdgeExistsError,
    EdgeNotFoundError,
    InvalidWeightError,
    NodeExistsError,
    NodeNotFoundError,
    NothingToUpdateError,
    TypedNodeNotFoundError,
)
from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import EntityView, GraphProjection, RelationView
from tests.helpers import run


def node(name: str, node_type: str = "npc", *metadata: str) -> NodeInput:
    return NodeInput(name, node_type, list(metadata))


def mesh(*nodes: NodeInput, edges: tuple[EdgeInput, ...] = ()) -> GraphProjection:
    graph = GraphProjection()
    run(graph, AddNodes(list(nodes)))
    if edges:
        run(graph, AddEdges(list(edges)))
    return graph


def edges_of(graph: GraphProjection) -> list[tuple[str, str, str, float]]:
    return [(r.from_entity, r.to_entity, r.relation_type, r.weight) for r in graph.relations()]


def refused(graph: GraphProjection, command: Command, error: type[CommandRejectedError]) -> str:
    """Decide `command`, expecting `error`; check nothing changed; return the message."""
    before = graph.snapshot()
    with pytest.raises(error) as raised:
        decide(graph, command)
    assert graph.snapshot() == before
    return raised.value.message


# --- add_nodes --------------------------------------------------------------------------------


def test_add_nodes_creates_each_node_with_its_metadata_in_order() -> None:
    graph = GraphProjection()

    result = run(graph, AddNodes([node("Gandalf", "npc", "Role: Wizard", "Status: Active")]))

    assert result == AddNodesResult([node("Gandalf", "npc", "Role: Wizard", "Status: Active")])
    assert graph.entity("Gandalf") == EntityView(
        "Gandalf", "npc", ["Role: Wizard", "Status: Active"]
    )


def test_add_nodes_writes_one_exact_metadata_entry_once() -> None:
    decision = decide(GraphProjection(), AddNodes([node("A", "t", "k: v", "k: v", "j: w")]))

    assert decision.events == [
        EntityCreated(name="A", entity_type="t"),
        ObservationAdded(entity="A", content="k: v"),
        ObservationAdded(entity="A", content="j: w"),
    ]
    assert decision.result == AddNodesResult([node("A", "t", "k: v", "j: w")])


def test_adding_a_node_whose_name_exists_with_any_type_is_refused_with_upstream_text() -> None:
    graph = mesh(node("Gandalf", "npc"))

    message = refused(
        graph, AddNodes([node("B", "x"), node("Gandalf", "location")]), NodeExistsError
    )

    assert message.startswith("Node already exists: Gandalf. Consider updating existing node.")
    assert graph.entity("B") is None


def test_node_exists_error_suggests_the_update_tools() -> None:
    graph = mesh(node("Gandalf", "npc"))

    with pytest.raises(NodeExistsError) as raised:
        decide(graph, AddNodes([node("Gandalf")]))

    assert any("update_npc" in s for s in raised.value.suggestions)


def test_a_name_twice_in_one_add_nodes_call_is_refused() -> None:
    message = refused(
        GraphProjection(), AddNodes([node("A"), node("A", "other")]), DuplicateItemError
    )

    assert message.startswith("Node A is listed more than once")


@pytest.mark.parametrize("bad", [node("", "npc"), node("A", "")])
def test_a_blank_node_name_or_type_is_refused(bad: NodeInput) -> None:
    refused(GraphProjection(), AddNodes([bad]), BlankFieldError)


# --- update_nodes -----------------------------------------------------------------------------


def test_update_nodes_on_a_missing_node_is_refused_with_upstream_text() -> None:
    graph = mesh(node("A"))

    message = refused(
        graph, UpdateNodes([NodeUpdate("A", "t2"), NodeUpdate("Nope")]), NodeNotFoundError
    )

    assert message.startswith("Node not found: Nope")


def test_update_nodes_retypes_with_one_event() -> None:
    graph = mesh(node("A", "npc", "k: v"))

    decision = decide(graph, UpdateNodes([NodeUpdate("A", node_type="location")]))

    assert decision.events == [EntityUpdated(name="A", entity_type="location")]
    assert decision.result == UpdateNodesResult([node("A", "location", "k: v")])


def test_update_nodes_replaces_the_whole_metadata_list_keeping_kept_entries_in_place() -> None:
    graph = mesh(node("A", "npc", "a", "b", "c"))

    decision = decide(graph, UpdateNodes([NodeUpdate("A", metadata=["d", "c", "a", "d"])]))
    run(graph, UpdateNodes([NodeUpdate("A", metadata=["d", "c", "a", "d"])]))

    assert decision.events == [
        ObservationDeleted(entity="A", content="b"),
        ObservationAdded(entity="A", content="d"),
    ]
    assert decision.result == UpdateNodesResult([node("A", "npc", "a", "c", "d")])
    assert graph.observations("A") == ["a", "c", "d"]


def test_update_nodes_with_the_same_type_and_list_writes_nothing() -> None:
    graph = mesh(node("A", "npc", "a"))

    decision = decide(graph, UpdateNodes([NodeUpdate("A", "npc", ["a"])]))

    assert decision.events == []
    assert decision.result == UpdateNodesResult([node("A", "npc", "a")])


def test_a_later_update_nodes_item_sees_the_earlier_one() -> None:
    graph = mesh(node("A", "npc", "a"))

    result = run(graph, UpdateNodes([NodeUpdate("A", metadata=["b"]), NodeUpdate("A", "x")]))

    assert result == UpdateNodesResult([node("A", "npc", "b"), node("A", "x", "b")])


# --- delete_nodes and delete_<type> -----------------------------------------------------------


def test_delete_nodes_cascades_to_every_edge_and_ignores_missing_names() -> None:
    graph = mesh(
        node("A"),
        node("B"),
        node("C"),
        edges=(
            EdgeInput("A", "B", "knows"),
            EdgeInput("C", "A", "likes"),
            EdgeInput("B", "C", "r"),
        ),
    )

    decision = decide(graph, DeleteNodes(["A", "Nope", "A"]))
    run(graph, DeleteNodes(["A", "Nope", "A"]))

    assert decision.events == [
        EntityDeleted(name="A"),
        RelationDeleted(from_entity="A", to_entity="B", relation_type="knows"),
        RelationDeleted(from_entity="C", to_entity="A", relation_type="likes"),
    ]
    assert decision.result == DeleteNodesResult(
        ["A"], ["Nope"], [EdgeKey("A", "B", "knows"), EdgeKey("C", "A", "likes")]
    )
    assert edges_of(graph) == [("B", "C", "r", 1.0)]


def test_delete_of_a_type_refuses_a_missing_node_with_upstream_text() -> None:
    graph = mesh(node("Gandalf", "npc"))

    message = refused(
        graph, DeleteNodes(["Gandalf", "Nope"], node_type="npc"), TypedNodeNotFoundError
    )

    assert message.startswith('npc "Nope" not found')


def test_delete_of_a_type_refuses_a_node_of_another_type_and_names_its_type() -> None:
    graph = mesh(node("Rivendell", "location"))

    with pytest.raises(TypedNodeNotFoundError) as raised:
        decide(graph, DeleteNodes(["Rivendell"], node_type="npc"))

    assert raised.value.message.startswith('npc "Rivendell" not found')
    assert raised.value.actual_type == "location"
    assert any("delete_location" in s for s in raised.value.suggestions)


def test_delete_of_a_type_deletes_the_node_and_its_edges() -> None:
    graph = mesh(
        node("Gandalf"),
        node("Rivendell", "location"),
        edges=(EdgeInput("Gandalf", "Rivendell", "located_in"),),
    )

    run(graph, DeleteNodes(["Gandalf"], node_type="npc"))

    assert graph.entity("Gandalf") is None
    assert edges_of(graph) == []


# --- add_edges --------------------------------------------------------------------------------


def test_an_edge_without_a_weight_gets_weight_one() -> None:
    graph = mesh(node("A"), node("B"))

    result = run(graph, AddEdges([EdgeInput("A", "B", "knows")]))

    assert result == AddEdgesResult([EdgeInput("A", "B", "knows", 1.0)])
    assert graph.relation("A", "B", "knows") == RelationView("A", "B", "knows", 1.0)


def test_add_edges_stores_the_given_weight() -> None:
    graph = mesh(node("A"), node("B"))

    decision = decide(graph, AddEdges([EdgeInput("A", "B", "knows", 0.25)]))

    assert decision.events == [
        RelationCreated(from_entity="A", to_entity="B", relation_type="knows", weight=0.25)
    ]


@pytest.mark.parametrize("weight", [1.5, -0.1, math.nan, math.inf])
def test_an_edge_weight_outside_zero_to_one_is_refused(weight: float) -> None:
    graph = mesh(node("A"), node("B"))

    message = refused(
        graph,
        AddEdges([EdgeInput("A", "B", "ok"), EdgeInput("A", "B", "bad", weight)]),
        InvalidWeightError,
    )

    assert message.startswith("Edge weight must be between 0 and 1")
    assert "A -> B (bad)" in message


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_edge_weights_zero_and_one_are_accepted(weight: float) -> None:
    graph = mesh(node("A"), node("B"))

    run(graph, AddEdges([EdgeInput("A", "B", "r", weight)]))

    assert edges_of(graph) == [("A", "B", "r", weight)]


def test_an_edge_to_a_missing_node_is_refused_with_upstream_text() -> None:
    graph = mesh(node("Gandalf"))

    message = refused(
        graph, AddEdges([EdgeInput("Gandalf", "Mordor", "located_in")]), NodeNotFoundError
    )

    assert message.startswith("Node not found: Mordor")


def test_an_edge_that_exists_is_refused_and_update_edges_suggested() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "knows"),))

    with pytest.raises(EdgeExistsError) as raised:
        decide(graph, AddEdges([EdgeInput("A", "B", "knows", 0.5)]))

    assert raised.value.message.startswith("Edge already exists: A -> B (knows)")
    assert any("update_edges" in s for s in raised.value.suggestions)


def test_the_same_edge_twice_in_one_call_is_refused() -> None:
    graph = mesh(node("A"), node("B"))

    message = refused(
        graph,
        AddEdges([EdgeInput("A", "B", "r"), EdgeInput("A", "B", "r", 0.5)]),
        DuplicateItemError,
    )

    assert message.startswith("Edge A -> B (r) is listed more than once")


def test_edges_with_the_same_ends_and_different_types_are_distinct() -> None:
    graph = mesh(node("A"), node("B"))

    run(
        graph,
        AddEdges([EdgeInput("A", "B", "r"), EdgeInput("A", "B", "s"), EdgeInput("B", "A", "r")]),
    )

    assert len(edges_of(graph)) == 3


def test_a_blank_edge_type_is_refused() -> None:
    graph = mesh(node("A"), node("B"))

    refused(graph, AddEdges([EdgeInput("A", "B", "")]), BlankFieldError)


# --- update_edges -----------------------------------------------------------------------------


def test_update_edges_averages_new_evidence_with_the_current_weight() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r", 0.8),))

    decision = decide(graph, UpdateEdges([EdgeUpdate("A", "B", "r", weight=0.6)]))
    run(graph, UpdateEdges([EdgeUpdate("A", "B", "r", weight=0.6)]))

    [event] = decision.events
    assert isinstance(event, RelationUpdated)
    assert (event.from_entity, event.to_entity, event.relation_type) == ("A", "B", "r")
    assert event.weight == pytest.approx(0.7)
    assert isinstance(decision.result, UpdateEdgesResult)
    assert decision.result.edges[0].weight == pytest.approx(0.7)
    assert edges_of(graph)[0][3] == pytest.approx(0.7)


def test_repeated_evidence_follows_the_seeds_weight_evolution() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"),))

    weights = []
    for evidence in (0.6, 0.4, 1.0):
        result = run(graph, UpdateEdges([EdgeUpdate("A", "B", "r", weight=evidence)]))
        assert isinstance(result, UpdateEdgesResult)
        weights.append(result.edges[0].weight)

    assert weights == pytest.approx([0.8, 0.6, 0.8])


def test_new_weight_replaces_the_current_weight() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r", 0.8),))

    result = run(graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_weight=0.2)]))

    assert result == UpdateEdgesResult([EdgeInput("A", "B", "r", 0.2)])
    assert edges_of(graph) == [("A", "B", "r", 0.2)]


def test_an_update_giving_both_weight_and_new_weight_is_refused() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"),))

    refused(
        graph,
        UpdateEdges([EdgeUpdate("A", "B", "r", weight=0.5, new_weight=0.5)]),
        ConflictingWeightsError,
    )


@pytest.mark.parametrize(
    "update", [EdgeUpdate("A", "B", "r", weight=1.5), EdgeUpdate("A", "B", "r", new_weight=-1.0)]
)
def test_an_update_weight_outside_zero_to_one_is_refused(update: EdgeUpdate) -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"),))

    refused(graph, UpdateEdges([update]), InvalidWeightError)


def test_updating_a_missing_edge_is_refused_with_upstream_text() -> None:
    graph = mesh(node("A"), node("B"))

    message = refused(
        graph, UpdateEdges([EdgeUpdate("A", "B", "r", weight=0.5)]), EdgeNotFoundError
    )

    assert message.startswith("Edge not found: A -> B (r)")


def test_an_edge_update_asking_for_nothing_is_refused() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"),))

    refused(graph, UpdateEdges([EdgeUpdate("A", "B", "r")]), NothingToUpdateError)


def test_repointing_an_edge_keeps_its_weight_and_applies_a_new_one() -> None:
    graph = mesh(node("A"), node("B"), node("C"), edges=(EdgeInput("A", "B", "r", 0.25),))

    decision = decide(graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_to="C", weight=0.75)]))
    run(graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_to="C", weight=0.75)]))

    assert decision.events == [
        RelationDeleted(from_entity="A", to_entity="B", relation_type="r"),
        RelationCreated(
            from_entity="A",
            to_entity="C",
            relation_type="r",
            weight=0.5,
            ingested_at=0,  # kept through the move (the test stamps: 0 ms)
            last_confirmed=0,
        ),
    ]
    assert decision.result == UpdateEdgesResult([EdgeInput("A", "C", "r", 0.5)])
    assert edges_of(graph) == [("A", "C", "r", 0.5)]


def test_retyping_an_edge_keeps_its_weight() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r", 0.4),))

    run(graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_edge_type="s")]))

    assert edges_of(graph) == [("A", "B", "s", 0.4)]


def test_repointing_to_a_missing_node_is_refused() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"),))

    message = refused(
        graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_from="Z")]), NodeNotFoundError
    )

    assert message.startswith("Node not found: Z")


def test_repointing_onto_another_edge_is_refused() -> None:
    graph = mesh(
        node("A"), node("B"), node("C"), edges=(EdgeInput("A", "B", "r"), EdgeInput("A", "C", "r"))
    )

    message = refused(graph, UpdateEdges([EdgeUpdate("A", "B", "r", new_to="C")]), EdgeExistsError)

    assert message.startswith("Edge already exists: A -> C (r)")


def test_a_later_edge_update_sees_the_earlier_one() -> None:
    graph = mesh(node("A"), node("B"), node("C"), edges=(EdgeInput("A", "B", "r", 0.2),))

    result = run(
        graph,
        UpdateEdges(
            [EdgeUpdate("A", "B", "r", new_to="C"), EdgeUpdate("A", "C", "r", new_weight=0.9)]
        ),
    )

    assert result == UpdateEdgesResult(
        [EdgeInput("A", "C", "r", 0.2), EdgeInput("A", "C", "r", 0.9)]
    )
    assert edges_of(graph) == [("A", "C", "r", 0.9)]


def test_a_weight_update_to_the_current_weight_writes_nothing() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r", 0.5),))

    decision = decide(graph, UpdateEdges([EdgeUpdate("A", "B", "r", weight=0.5)]))

    assert decision.events == []


# --- delete_edges -----------------------------------------------------------------------------


def test_delete_edges_deletes_exact_matches_once_and_ignores_misses() -> None:
    graph = mesh(node("A"), node("B"), edges=(EdgeInput("A", "B", "r"), EdgeInput("A", "B", "s")))
    ab_r = EdgeKey("A", "B", "r")

    decision = decide(graph, DeleteEdges([ab_r, EdgeKey("B", "A", "r"), ab_r]))
    run(graph, DeleteEdges([ab_r, EdgeKey("B", "A", "r"), ab_r]))

    assert decision.events == [RelationDeleted(from_entity="A", to_entity="B", relation_type="r")]
    assert decision.result == DeleteEdgesResult([ab_r])
    assert edges_of(graph) == [("A", "B", "s", 1.0)]


# --- add_metadata and delete_metadata ---------------------------------------------------------


def test_add_metadata_adds_only_entries_the_node_lacks_and_repeats_once() -> None:
    graph = mesh(node("A", "npc", "Role: Wizard"))

    result = run(graph, AddMetadata([MetadataChange("A", ["Role: Wizard", "Age: 9", "Age: 9"])]))

    assert result == AddMetadataResult([MetadataChange("A", ["Age: 9"])])
    assert graph.observations("A") == ["Role: Wizard", "Age: 9"]


def test_a_later_add_metadata_item_sees_the_earlier_one() -> None:
    graph = mesh(node("A"))

    result = run(graph, AddMetadata([MetadataChange("A", ["x"]), MetadataChange("A", ["x", "y"])]))

    assert result == AddMetadataResult([MetadataChange("A", ["x"]), MetadataChange("A", ["y"])])


def test_add_metadata_on_a_missing_node_writes_nothing_for_any_item() -> None:
    graph = mesh(node("A"))

    message = refused(
        graph,
        AddMetadata([MetadataChange("A", ["x"]), MetadataChange("Nope", ["y"])]),
        NodeNotFoundError,
    )

    assert message.startswith("Node not found: Nope")


def test_delete_metadata_removes_every_occurrence_and_reports_what_it_removed() -> None:
    graph = GraphProjection()
    run(graph, AddNodes([node("A", "npc", "x", "y")]))
    run(graph, AddMetadata([MetadataChange("A", ["z"])]))

    decision = decide(graph, DeleteMetadata([MetadataChange("A", ["x", "x", "missing"])]))
    run(graph, DeleteMetadata([MetadataChange("A", ["x", "x", "missing"])]))

    assert decision.events == [ObservationDeleted(entity="A", content="x")]
    assert decision.result == DeleteMetadataResult([MetadataChange("A", ["x"])])
    assert graph.observations("A") == ["y", "z"]


def test_delete_metadata_finds_an_entry_under_any_spelling_of_its_key_with_the_same_value() -> None:
    graph = mesh(node("A", "npc", "Motto: Onward", "motto: Onward", "Motto: Forward", "Onward"))

    result = run(graph, DeleteMetadata([MetadataChange("A", ["motto: Onward", "mot to: x"])]))

    assert result == DeleteMetadataResult([MetadataChange("A", ["Motto: Onward", "motto: Onward"])])
    assert graph.observations("A") == ["Motto: Forward", "Onward"]


def test_delete_metadata_on_a_missing_node_is_refused() -> None:
    refused(mesh(node("A")), DeleteMetadata([MetadataChange("Nope", ["x"])]), NodeNotFoundError)


# --- update_<type> (SetNodeProperties) --------------------------------------------------------


def gandalf_in_rivendell() -> GraphProjection:
    return mesh(
        node("Gandalf", "npc", "Role: Wizard", "Current Location: Rivendell"),
        node("Rivendell", "location"),
        node("Mordor", "location"),
        edges=(EdgeInput("Gandalf", "Rivendell", "located_in", 0.9),),
    )


def test_update_of_a_type_moves_the_relationship_edge_and_its_metadata() -> None:
    graph = gandalf_in_rivendell()

    result = run(
        graph,
        SetNodeProperties(
            "Gandalf",
            "npc",
            [PropertyEntry("currentLocation", "Current Location: Mordor")],
            [EdgeTargets("located_in", ["Mordor"])],
        ),
    )

    assert result == SetNodePropertiesResult(
        node("Gandalf", "npc", "Role: Wizard", "Current Location: Mordor"),
        [EdgeInput("Gandalf", "Rivendell", "located_in", 0.9)],
        [EdgeInput("Gandalf", "Mordor", "located_in")],
    )
    assert edges_of(graph) == [("Gandalf", "Mordor", "located_in", 1.0)]


def test_update_of_a_type_replaces_only_the_changed_key_matching_any_key_spelling() -> None:
    graph = mesh(node("A", "npc", "role: Wizard", "Status: Active", "ROLE : Thief", "note"))

    run(graph, SetNodeProperties("A", "npc", [PropertyEntry("Role", "Role: Merchant")]))

    assert graph.observations("A") == ["Status: Active", "note", "Role: Merchant"]


def test_setting_a_property_to_its_current_entry_writes_nothing() -> None:
    graph = gandalf_in_rivendell()

    decision = decide(
        graph,
        SetNodeProperties(
            "Gandalf",
            "npc",
            [PropertyEntry("role", "Role: Wizard")],
            [EdgeTargets("located_in", ["Rivendell"])],
        ),
    )

    assert decision.events == []
    assert decision.result == SetNodePropertiesResult(
        node("Gandalf", "npc", "Role: Wizard", "Current Location: Rivendell"), [], []
    )


def test_a_property_set_to_none_is_removed() -> None:
    graph = gandalf_in_rivendell()

    run(graph, SetNodeProperties("Gandalf", "npc", [PropertyEntry("role", None)]))

    assert graph.observations("Gandalf") == ["Current Location: Rivendell"]


def test_an_edge_kept_by_update_of_a_type_keeps_its_weight() -> None:
    graph = gandalf_in_rivendell()

    result = run(
        graph,
        SetNodeProperties(
            "Gandalf", "npc", [], [EdgeTargets("located_in", ["Rivendell", "Mordor"])]
        ),
    )

    assert isinstance(result, SetNodePropertiesResult)
    assert result.removed_edges == []
    assert edges_of(graph) == [
        ("Gandalf", "Rivendell", "located_in", 0.9),
        ("Gandalf", "Mordor", "located_in", 1.0),
    ]


def test_an_empty_target_list_removes_the_edges_of_that_type_only() -> None:
    graph = gandalf_in_rivendell()
    run(
        graph,
        AddEdges(
            [EdgeInput("Gandalf", "Mordor", "fears"), EdgeInput("Mordor", "Gandalf", "located_in")]
        ),
    )

    run(graph, SetNodeProperties("Gandalf", "npc", [], [EdgeTargets("located_in", [])]))

    assert [e[:3] for e in edges_of(graph)] == [
        ("Gandalf", "Mordor", "fears"),
        ("Mordor", "Gandalf", "located_in"),
    ]


def test_update_of_a_type_with_a_missing_target_writes_nothing_not_even_metadata() -> None:
    graph = gandalf_in_rivendell()

    message = refused(
        graph,
        SetNodeProperties(
            "Gandalf",
            "npc",
            [PropertyEntry("currentLocation", "Current Location: Shire")],
            [EdgeTargets("located_in", ["Shire"])],
        ),
        NodeNotFoundError,
    )

    assert message.startswith("Node not found: Shire")


def test_update_of_a_type_on_a_node_of_another_type_is_refused() -> None:
    graph = gandalf_in_rivendell()

    message = refused(graph, SetNodeProperties("Rivendell", "npc", []), TypedNodeNotFoundError)

    assert message.startswith('npc "Rivendell" not found')


def test_update_of_a_type_on_a_missing_node_is_refused() -> None:
    message = refused(
        GraphProjection(), SetNodeProperties("Nope", "npc", []), TypedNodeNotFoundError
    )

    assert message.startswith('npc "Nope" not found')
