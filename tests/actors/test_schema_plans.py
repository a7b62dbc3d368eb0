"""schema_plans: dynamic tool calls checked against their schema and planned into commands."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.commands import (
    AddEdges,
    AddNodes,
    CommitTransaction,
    DeleteNodes,
    EdgeInput,
    EdgeTargets,
    NodeInput,
    PropertyEntry,
    SetNodeProperties,
)
from actors.errors import CommandRejectedError, NodeNotFoundError
from actors.schema_plans import (
    SchemaViolationError,
    plan_add,
    plan_delete,
    plan_update,
    unwrap_arguments,
)
from projections.entity_schema import EntitySchema, parse_schema
from tests import schema_samples
from tests.helpers import entity, graph_with, run


def npc_schema(**properties: Any) -> EntitySchema:
    """The seed's npc schema, plus `properties`; `additionalProperties=False` closes it."""
    document = copy.deepcopy(schema_samples.NPC_SCHEMA)
    closed = properties.pop("additionalProperties", None)
    if closed is not None:
        document["additionalProperties"] = closed
    document["properties"] |= properties
    return parse_schema(document)


NPC_SCHEMA = npc_schema()
GANDALF = {"name": "Gandalf", "role": "Wizard", "status": "Active"}


def refusal(call: Any, *args: Any) -> SchemaViolationError:
    with pytest.raises(SchemaViolationError) as caught:
        call(*args)
    return caught.value


def added(schema: EntitySchema, values: dict[str, Any]) -> tuple[NodeInput, list[EdgeInput]]:
    plan = plan_add(schema, values)
    assert isinstance(plan, CommitTransaction)
    nodes = plan.steps[0]
    assert isinstance(nodes, AddNodes) and len(nodes.nodes) == 1
    edges: list[EdgeInput] = []
    if len(plan.steps) > 1:
        step = plan.steps[1]
        assert isinstance(step, AddEdges)
        edges = step.edges
    assert len(plan.steps) <= 2
    return nodes.nodes[0], edges


# --- add --------------------------------------------------------------------------------------


def test_add_npc_stores_its_properties_as_metadata_without_the_name() -> None:
    node, edges = added(NPC_SCHEMA, GANDALF)

    assert node == NodeInput("Gandalf", "npc", ["role: Wizard", "status: Active"])
    assert edges == []


def test_add_npc_with_a_location_also_plans_a_located_in_edge() -> None:
    node, edges = added(NPC_SCHEMA, {**GANDALF, "currentLocation": "Rivendell"})

    assert node.metadata == ["role: Wizard", "status: Active", "currentLocation: Rivendell"]
    assert edges == [EdgeInput("Gandalf", "Rivendell", "located_in")]
    assert edges[0].weight == 1.0


def test_metadata_follows_schema_order_then_extra_keys_in_argument_order() -> None:
    values = {
        "mood": "grumpy",
        "traits": ["wise", "patient"],
        "status": "Active",
        "description": "Grey robes",
        "name": "Gandalf",
        "age": 2019,
        "role": "Wizard",
    }

    node, _ = added(NPC_SCHEMA, values)

    assert node.metadata == [
        "role: Wizard",
        "status: Active",
        "description: Grey robes",
        "traits: wise, patient",
        "mood: grumpy",
        "age: 2019",
    ]


def test_a_missing_required_field_is_named() -> None:
    error = refusal(plan_add, NPC_SCHEMA, {"name": "Gandalf", "role": "Wizard"})

    assert 'Required field "status" is missing for npc' in error.message
    assert any("add_npc(" in s for s in error.suggestions)


@pytest.mark.parametrize("status", [None, "", "  "])
def test_an_empty_required_field_counts_as_missing(status: Any) -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, "status": status})

    assert 'Required field "status" is missing' in error.message


@pytest.mark.parametrize("name", [None, "", " ", 42, ["Gandalf"]])
def test_the_name_must_be_a_non_empty_string(name: Any) -> None:
    values = {**GANDALF, "name": name}
    if name is None:
        del values["name"]

    error = refusal(plan_add, NPC_SCHEMA, values)

    assert 'Missing required property: "name" is required for npc' in error.message


def test_a_value_outside_the_enum_is_refused_with_the_allowed_values() -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, "role": "Dragon"})

    assert 'Invalid value "Dragon" for role of npc' in error.message
    assert "Warrior, Wizard, Merchant, Noble, Peasant, Thief" in error.message
    assert isinstance(error, CommandRejectedError)


def test_an_enum_value_is_matched_ignoring_case_and_stored_as_the_schema_spells_it() -> None:
    node, _ = added(NPC_SCHEMA, {**GANDALF, "role": "wizard", "status": "ACTIVE"})

    assert node.metadata == ["role: Wizard", "status: Active"]


def test_each_item_of_an_array_is_checked_against_its_enum() -> None:
    schema = npc_schema(
        schools={"type": "array", "description": "Magic", "enum": ["Fire", "Light"]}
    )

    node, _ = added(schema, {**GANDALF, "schools": ["fire", "Light"]})
    assert node.metadata[-1] == "schools: Fire, Light"

    error = refusal(plan_add, schema, {**GANDALF, "schools": ["Fire", "Shadow"]})
    assert 'Invalid value "Shadow" for schools' in error.message


def test_a_lone_string_for_an_array_is_one_item_and_duplicates_are_dropped() -> None:
    node, _ = added(NPC_SCHEMA, {**GANDALF, "traits": "wise"})
    assert node.metadata[-1] == "traits: wise"

    node, _ = added(NPC_SCHEMA, {**GANDALF, "traits": ["wise", "", "wise", "old"]})
    assert node.metadata[-1] == "traits: wise, old"


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("description", ["a"]),
        ("traits", [1, 2]),
        ("traits", {"a": 1}),
        ("currentLocation", 7),
        ("currentLocation", ["Rivendell", 7]),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused(prop: str, value: Any) -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, prop: value})

    assert f'Property "{prop}" of npc must be' in error.message


def test_numbers_integers_and_booleans_are_checked_and_written_as_text() -> None:
    schema = npc_schema(
        age={"type": "integer", "description": "Years"},
        gold={"type": "number", "description": "Coins"},
        hostile={"type": "boolean", "description": "Attacks"},
    )

    node, _ = added(schema, {**GANDALF, "age": 2019.0, "gold": 12.5, "hostile": False})
    assert node.metadata[-3:] == ["age: 2019", "gold: 12.5", "hostile: false"]

    for prop, value in [
        ("age", 1.5),
        ("age", True),
        ("age", "12"),
        ("gold", True),
        ("gold", float("nan")),
        ("gold", "12"),
        ("hostile", "yes"),
        ("hostile", 1),
    ]:
        error = refusal(plan_add, schema, {**GANDALF, prop: value})
        assert f'Property "{prop}" of npc must be' in error.message


def test_a_relationship_takes_a_list_of_targets_one_edge_each() -> None:
    node, edges = added(
        NPC_SCHEMA, {**GANDALF, "currentLocation": ["Rivendell", "Moria", "Rivendell"]}
    )

    assert node.metadata[-1] == "currentLocation: Rivendell, Moria"
    assert edges == [
        EdgeInput("Gandalf", "Rivendell", "located_in"),
        EdgeInput("Gandalf", "Moria", "located_in"),
    ]


@pytest.mark.parametrize("empty", ["", [], None])
def test_an_empty_relationship_makes_no_edge_and_no_metadata(empty: Any) -> None:
    node, edges = added(NPC_SCHEMA, {**GANDALF, "currentLocation": empty})

    assert node.metadata == ["role: Wizard", "status: Active"]
    assert edges == []


def test_two_relationships_to_the_same_target_and_type_plan_one_edge() -> None:
    schema = npc_schema(
        home={
            "type": "string",
            "description": "Home",
            "relationship": {"edgeType": "located_in"},
        }
    )

    _, edges = added(schema, {**GANDALF, "currentLocation": "Shire", "home": "Shire"})

    assert edges == [EdgeInput("Gandalf", "Shire", "located_in")]


def test_an_argument_key_spelled_like_a_property_counts_as_that_property() -> None:
    node, edges = added(NPC_SCHEMA, {**GANDALF, "current_location": "Rivendell"})

    assert node.metadata[-1] == "currentLocation: Rivendell"
    assert edges == [EdgeInput("Gandalf", "Rivendell", "located_in")]


def test_a_property_given_twice_in_two_spellings_is_refused() -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, "Role": "Thief"})

    assert '"role" and "Role" both give npc property "role"' in error.message


def test_extra_keys_are_refused_when_the_schema_closes_additional_properties() -> None:
    schema = npc_schema(additionalProperties=False)

    error = refusal(plan_add, schema, {**GANDALF, "mood": "grumpy", "age": 3})

    assert 'Unknown properties for npc: "mood", "age"' in error.message
    assert "name, role, status, currentLocation, description, traits" in error.message


def test_extra_scalars_are_stored_as_text_and_null_or_empty_ones_are_skipped() -> None:
    node, _ = added(
        NPC_SCHEMA, {**GANDALF, "age": 3, "tall": True, "note": None, "nick": "", "w": 1.5}
    )

    assert node.metadata[2:] == ["age: 3", "tall: true", "w: 1.5"]


@pytest.mark.parametrize("value", [{"a": 1}, ["a", "b"]])
def test_an_extra_key_holding_an_object_or_a_list_is_refused(value: Any) -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, "friends": value})

    assert 'Property "friends" is not in the npc schema' in error.message


@pytest.mark.parametrize("key", ["a:b", "", "__", "line\nbreak"])
def test_an_extra_key_that_cannot_be_a_metadata_key_is_refused(key: str) -> None:
    error = refusal(plan_add, NPC_SCHEMA, {**GANDALF, key: "x"})

    assert "cannot be a property name" in error.message


# --- update -----------------------------------------------------------------------------------


def test_update_replaces_only_the_given_properties() -> None:
    plan = plan_update(NPC_SCHEMA, {"name": "Gandalf", "status": "Missing", "mood": "calm"})

    assert plan == SetNodeProperties(
        "Gandalf",
        "npc",
        [PropertyEntry("status", "status: Missing"), PropertyEntry("mood", "mood: calm")],
        [],
    )


def test_update_of_a_relationship_moves_its_edges_and_rewrites_its_entry() -> None:
    plan = plan_update(NPC_SCHEMA, {"name": "Gandalf", "currentLocation": "Mordor"})

    assert plan.entries == [PropertyEntry("currentLocation", "currentLocation: Mordor")]
    assert plan.edges == [EdgeTargets("located_in", ["Mordor"])]


def test_null_removes_an_optional_property_and_a_relationship_removes_its_edges() -> None:
    plan = plan_update(
        NPC_SCHEMA, {"name": "Gandalf", "description": None, "currentLocation": None}
    )

    assert plan.entries == [
        PropertyEntry("currentLocation", None),
        PropertyEntry("description", None),
    ]
    assert plan.edges == [EdgeTargets("located_in", [])]


def test_a_required_property_cannot_be_removed_by_an_update() -> None:
    error = refusal(plan_update, NPC_SCHEMA, {"name": "Gandalf", "role": None})

    assert 'Required field "role" of npc cannot be removed' in error.message


def test_update_values_are_checked_like_add_values() -> None:
    error = refusal(plan_update, NPC_SCHEMA, {"name": "Gandalf", "status": "Asleep"})
    assert 'Invalid value "Asleep" for status' in error.message

    closed = npc_schema(additionalProperties=False)
    error = refusal(plan_update, closed, {"name": "Gandalf", "mood": "calm"})
    assert 'Unknown properties for npc: "mood"' in error.message


def test_an_update_with_nothing_but_the_name_is_refused() -> None:
    error = refusal(plan_update, NPC_SCHEMA, {"name": "Gandalf"})

    assert "Nothing to update" in error.message
    assert "give at least one of: role, status, currentLocation" in error.message


def test_an_update_needs_the_name() -> None:
    error = refusal(plan_update, NPC_SCHEMA, {"status": "Active"})

    assert '"name" is required for npc' in error.message


def test_two_relationships_sharing_an_edge_type_update_to_the_union_of_targets() -> None:
    schema = npc_schema(
        home={"type": "string", "description": "Home", "relationship": {"edgeType": "located_in"}}
    )

    plan = plan_update(schema, {"name": "Gandalf", "currentLocation": "Moria", "home": "Shire"})

    assert plan.edges == [EdgeTargets("located_in", ["Moria", "Shire"])]


# --- delete -----------------------------------------------------------------------------------


def test_delete_plans_the_typed_deletion_of_the_named_node() -> None:
    assert plan_delete(NPC_SCHEMA, {"name": "Gandalf"}) == DeleteNodes(["Gandalf"], "npc")


def test_delete_ignores_other_keys_but_needs_the_name() -> None:
    assert plan_delete(NPC_SCHEMA, {"name": "Gandalf", "role": 3}).names == ["Gandalf"]

    error = refusal(plan_delete, NPC_SCHEMA, {})
    assert '"name" is required for npc' in error.message


# --- decided by the writer's core -------------------------------------------------------------


def test_a_planned_add_with_a_missing_target_writes_neither_node_nor_edge() -> None:
    graph = graph_with(entity("Rivendell", "location"))
    position = graph.position

    with pytest.raises(NodeNotFoundError):
        run(graph, plan_add(NPC_SCHEMA, {**GANDALF, "currentLocation": "Mordor"}))

    assert graph.position == position
    assert not graph.has_entity("Gandalf")


def test_a_planned_add_then_update_moves_the_edge_and_the_entry() -> None:
    graph = graph_with(entity("Rivendell", "location"), entity("Mordor", "location"))
    run(graph, plan_add(NPC_SCHEMA, {**GANDALF, "currentLocation": "Rivendell"}))
    assert graph.has_relation("Gandalf", "Rivendell", "located_in")

    run(graph, plan_update(NPC_SCHEMA, {"name": "Gandalf", "currentLocation": "Mordor"}))

    assert not graph.has_relation("Gandalf", "Rivendell", "located_in")
    assert graph.has_relation("Gandalf", "Mordor", "located_in")
    assert graph.observations("Gandalf") == [
        "role: Wizard",
        "status: Active",
        "currentLocation: Mordor",
    ]

    run(graph, plan_delete(NPC_SCHEMA, {"name": "Gandalf"}))
    assert not graph.has_entity("Gandalf")
    assert not graph.has_relation("Gandalf", "Mordor", "located_in")


# --- argument shapes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "key"),
    [
        ("add", "npc"),
        ("add", "add_npc"),
        ("update", "npc"),
        ("update", "update_npc"),
        ("delete", "npc"),
        ("delete", "delete_npc"),
    ],
)
def test_both_argument_shapes_are_accepted(action: Any, key: str) -> None:
    assert unwrap_arguments(NPC_SCHEMA, action, {key: GANDALF}) == GANDALF


def test_the_same_object_under_both_keys_is_accepted_but_two_different_ones_are_not() -> None:
    assert unwrap_arguments(NPC_SCHEMA, "update", {"npc": GANDALF, "update_npc": GANDALF})

    error = refusal(
        unwrap_arguments, NPC_SCHEMA, "update", {"npc": GANDALF, "update_npc": {"name": "X"}}
    )
    assert "once" in error.message


@pytest.mark.parametrize("arguments", [None, {}, {"name": "Gandalf"}, {"delete_npc": {}}])
def test_a_missing_wrapper_is_refused_with_an_example_call(arguments: Any) -> None:
    error = refusal(unwrap_arguments, NPC_SCHEMA, "add", arguments)

    assert error.message.startswith('Missing required argument: "npc" object not provided.')
    assert (
        'add_npc({"npc": {"name": "<name of the npc>", "role": "Warrior", "status": "Active"}})'
        in (error.message)
    )


@pytest.mark.parametrize("inner", ["Gandalf", ["Gandalf"], 3])
def test_a_wrapper_that_is_not_an_object_is_refused(inner: Any) -> None:
    error = refusal(unwrap_arguments, NPC_SCHEMA, "delete", {"delete_npc": inner})

    assert 'Argument "delete_npc" must be an object of npc properties' in error.message
    assert 'delete_npc({"npc": {"name": "<name of the npc>"}})' in error.message
