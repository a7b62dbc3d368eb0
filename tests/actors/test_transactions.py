"""decide for CommitTransaction (steps in order, all or nothing) and RegisterSchemas (only what
changed is written)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.commands import (
    AddEdges,
    AddEdgesResult,
    AddNodes,
    AddNodesResult,
    CommitTransaction,
    CommitTransactionResult,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    CreateRelationsResult,
    DeleteNodes,
    DeleteNodesResult,
    EdgeInput,
    EntityUpdate,
    NodeInput,
    RegisterSchemas,
    RegisterSchemasResult,
    SchemaDefinition,
    UpdateEntities,
    UpdateEntitiesResult,
)
from actors.decide import decide
from actors.errors import CommandRejectedError, EntityNotFoundError, NodeNotFoundError
from eventstore.events import (
    EntityCreated,
    RelationCreated,
    SchemaRegistered,
    SchemaRetired,
)
from projections.entity_schema import canonical_json
from projections.graph import EntityView, GraphProjection, RelationView
from projections.schemas import SchemaProjection
from tests.helpers import entity, graph_with, relation, run, stamp


def add_node(name: str, node_type: str = "npc", *metadata: str) -> AddNodes:
    return AddNodes([NodeInput(name, node_type, list(metadata))])


def add_edge(from_entity: str, to_entity: str, edge_type: str) -> AddEdges:
    return AddEdges([EdgeInput(from_entity, to_entity, edge_type)])


# --- CommitTransaction ------------------------------------------------------------------------


def test_a_later_step_sees_the_node_an_earlier_step_added() -> None:
    graph = graph_with(entity("Rivendell", "location"))
    transaction = CommitTransaction(
        [add_node("Gandalf", "npc", "Role: Wizard"), add_edge("Gandalf", "Rivendell", "located_in")]
    )

    result = run(graph, transaction)

    assert result == CommitTransactionResult(
        [
            AddNodesResult([NodeInput("Gandalf", "npc", ["Role: Wizard"])]),
            AddEdgesResult([EdgeInput("Gandalf", "Rivendell", "located_in")]),
        ]
    )
    assert graph.entity("Gandalf") == EntityView("Gandalf", "npc", ["Role: Wizard"])
    assert list(graph.relations()) == [RelationView("Gandalf", "Rivendell", "located_in")]


def test_a_transaction_whose_last_step_fails_writes_nothing() -> None:
    graph = graph_with(entity("Rivendell", "location"))
    before = graph.snapshot()
    transaction = CommitTransaction(
        [add_node("Gandalf"), add_edge("Gandalf", "Mordor", "located_in")]
    )

    with pytest.raises(NodeNotFoundError) as raised:
        decide(graph, transaction)

    assert raised.value.message.startswith("Step 2 of 2 (AddEdges): Node not found: Mordor.")
    assert "Nothing was written" in raised.value.message
    assert str(raised.value) == raised.value.message
    assert graph.snapshot() == before


def test_a_failing_step_of_the_official_family_is_named_and_says_nothing_was_written() -> None:
    graph = GraphProjection()

    with pytest.raises(EntityNotFoundError) as raised:
        decide(graph, CommitTransaction([CreateRelations([relation("A", "B", "r")])]))

    assert raised.value.message == (
        "Step 1 of 1 (CreateRelations): Entity with name A not found. Nothing was written."
    )


def test_a_transaction_decides_the_events_of_its_steps_in_order_and_lists_each_step() -> None:
    graph = GraphProjection()
    first = CreateEntities([entity("A"), entity("B")])
    second = CreateRelations([relation("A", "B", "knows")])

    decision = decide(graph, CommitTransaction([first, second]))

    first_events = [
        EntityCreated(name="A", entity_type="person"),
        EntityCreated(name="B", entity_type="person"),
    ]
    second_events = [RelationCreated(from_entity="A", to_entity="B", relation_type="knows")]
    assert decision.events == first_events + second_events
    assert decision.steps == ((first, first_events), (second, second_events))
    assert decision.result == CommitTransactionResult(
        [
            CreateEntitiesResult([entity("A"), entity("B")], []),
            CreateRelationsResult([relation("A", "B", "knows")], []),
        ]
    )


def test_nested_transactions_flatten_their_steps() -> None:
    inner_step = add_node("A")
    outer_step = add_node("B")

    decision = decide(
        GraphProjection(), CommitTransaction([CommitTransaction([inner_step]), outer_step])
    )

    assert [step for step, _ in decision.steps] == [inner_step, outer_step]
    assert decision.events == [
        EntityCreated(name="A", entity_type="npc"),
        EntityCreated(name="B", entity_type="npc"),
    ]


def test_an_empty_transaction_writes_nothing() -> None:
    decision = decide(GraphProjection(), CommitTransaction([]))

    assert decision.events == []
    assert decision.result == CommitTransactionResult([])


def test_a_step_can_delete_a_node_a_later_step_creates_again_fresh() -> None:
    graph = graph_with(entity("A", "npc", "old"), entity("B"), relations=(relation("A", "B", "r"),))

    run(graph, CommitTransaction([DeleteNodes(["A"]), add_node("A", "npc", "new")]))

    assert graph.entity("A") == EntityView("A", "npc", ["new"])
    assert list(graph.relations()) == []


def test_an_edit_step_sees_what_an_earlier_step_created() -> None:
    graph = GraphProjection()

    result = run(
        graph,
        CommitTransaction(
            [
                CreateEntities([entity("A", "person", "x")]),
                UpdateEntities([EntityUpdate("A", new_name="B")]),
                DeleteNodes(["A"]),
            ]
        ),
    )

    assert isinstance(result, CommitTransactionResult)
    assert isinstance(result.results[1], UpdateEntitiesResult)
    assert result.results[2] == DeleteNodesResult([], ["A"], [])
    assert list(graph.entities()) == [EntityView("B", "person", ["x"])]


def test_a_step_is_checked_against_what_the_earlier_steps_did() -> None:
    graph = GraphProjection()

    with pytest.raises(CommandRejectedError, match=r"^Step 2 of 2 \(AddNodes\): Node already"):
        decide(graph, CommitTransaction([add_node("B"), add_node("B")]))

    assert graph.entity_count() == 0


# --- RegisterSchemas --------------------------------------------------------------------------


def definition(type_name: str, description: str = "d") -> SchemaDefinition:
    document: dict[str, Any] = {
        "name": f"add_{type_name}",
        "description": description,
        "properties": {"name": {"type": "string", "description": "its name", "required": True}},
    }
    text, digest = canonical_json(document)
    return SchemaDefinition(type_name, text, digest, f"{type_name}.schema.json")


def schemas_with(*definitions: SchemaDefinition) -> SchemaProjection:
    schemas = SchemaProjection()
    decision = decide(GraphProjection(), RegisterSchemas(list(definitions)), schemas)
    schemas.apply_all(stamp(decision.events))
    assert all(schemas.schema(d.type_name) is not None for d in definitions)
    return schemas


def test_registering_new_schemas_writes_one_event_each() -> None:
    npc = definition("npc")

    decision = decide(GraphProjection(), RegisterSchemas([npc]), SchemaProjection())

    assert decision.events == [
        SchemaRegistered(
            type_name="npc", schema_json=npc.schema_json, digest=npc.digest, source=npc.source
        )
    ]
    assert decision.result == RegisterSchemasResult(["npc"], [])


def test_registering_a_schema_with_the_digest_in_force_writes_nothing() -> None:
    schemas = schemas_with(definition("npc"))

    decision = decide(GraphProjection(), RegisterSchemas([definition("npc")]), schemas)

    assert decision.events == []
    assert decision.result == RegisterSchemasResult([], [])


def test_a_changed_schema_is_registered_again() -> None:
    schemas = schemas_with(definition("npc"))
    changed = definition("npc", "a new description")

    decision = decide(GraphProjection(), RegisterSchemas([changed]), schemas)

    assert [type(e) for e in decision.events] == [SchemaRegistered]
    assert decision.result == RegisterSchemasResult(["npc"], [])


def test_retiring_writes_only_for_types_in_force() -> None:
    schemas = schemas_with(definition("npc"))

    decision = decide(GraphProjection(), RegisterSchemas([], ["npc", "never"]), schemas)

    assert decision.events == [SchemaRetired(type_name="npc")]
    assert decision.result == RegisterSchemasResult([], ["npc"])


def test_a_retired_schema_registered_again_comes_back() -> None:
    schemas = schemas_with(definition("npc"))
    retired = decide(GraphProjection(), RegisterSchemas([], ["npc"]), schemas)
    schemas.apply_all(stamp(retired.events, start_seq=10))

    decision = decide(GraphProjection(), RegisterSchemas([definition("npc")]), schemas)

    assert decision.result == RegisterSchemasResult(["npc"], [])


def test_without_schemas_in_force_every_definition_is_registered() -> None:
    decision = decide(GraphProjection(), RegisterSchemas([definition("a"), definition("b")], ["c"]))

    assert decision.result == RegisterSchemasResult(["a", "b"], [])
