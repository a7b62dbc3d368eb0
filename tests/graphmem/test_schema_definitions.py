"""The schema family's tool definitions: what add_/update_/delete_<type> advertise, and that
the advertised input schema agrees with what the planner accepts and refuses."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from actors.schema_plans import plan_add, plan_delete, plan_update
from graphmem.tools.schema_definitions import tool_description, tool_input_schema
from projections.entity_schema import parse_schema
from tests import schema_samples

NPC_SCHEMA = parse_schema(schema_samples.NPC_SCHEMA)
GANDALF = {"name": "Gandalf", "role": "Wizard", "status": "Active"}


def test_the_add_schema_has_the_seeds_shape() -> None:
    schema = tool_input_schema(NPC_SCHEMA, "add")

    assert schema["type"] == "object"
    assert schema["required"] == ["npc"]
    inner = schema["properties"]["npc"]
    assert inner["type"] == "object"
    assert inner["required"] == ["name", "role", "status"]
    props = inner["properties"]
    assert list(props) == ["name", "role", "status", "currentLocation", "description", "traits"]
    assert props["role"]["enum"] == ["Warrior", "Wizard", "Merchant", "Noble", "Peasant", "Thief"]
    assert props["traits"]["items"] == {"type": "string"}
    assert props["currentLocation"]["anyOf"] == [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}},
    ]
    assert "existing location node" in props["currentLocation"]["description"]
    assert inner["additionalProperties"]["type"] == ["string", "number", "boolean"]


def test_the_update_schema_requires_only_the_name_and_lets_optional_fields_be_null() -> None:
    inner = tool_input_schema(NPC_SCHEMA, "update")["properties"]["npc"]

    assert inner["required"] == ["name"]
    assert {"type": "null"} in inner["properties"]["description"]["anyOf"]
    assert "anyOf" not in inner["properties"]["role"]  # required: never removed


def test_the_delete_schema_takes_only_the_name() -> None:
    assert tool_input_schema(NPC_SCHEMA, "delete") == {
        "type": "object",
        "properties": {
            "npc": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The name of the npc to delete",
                    }
                },
                "required": ["name"],
            }
        },
        "required": ["npc"],
    }


def test_a_closed_schema_advertises_no_additional_properties() -> None:
    closed = parse_schema({**schema_samples.NPC_SCHEMA, "additionalProperties": False})

    inner = tool_input_schema(closed, "add")["properties"]["npc"]

    assert inner["additionalProperties"] is False


@pytest.mark.parametrize(
    ("action", "values"),
    [
        ("add", GANDALF),
        ("add", {**GANDALF, "currentLocation": ["Rivendell"], "traits": ["wise"], "age": 3}),
        ("update", {"name": "Gandalf", "description": None, "currentLocation": "Moria"}),
        ("update", {"name": "Gandalf", "mood": None}),
        ("delete", {"name": "Gandalf"}),
    ],
)
def test_every_call_the_planner_accepts_validates_against_the_advertised_schema(
    action: Any, values: dict[str, Any]
) -> None:
    planner = {"add": plan_add, "update": plan_update, "delete": plan_delete}[action]
    planner(NPC_SCHEMA, values)

    jsonschema.Draft7Validator(tool_input_schema(NPC_SCHEMA, action)).validate({"npc": values})


@pytest.mark.parametrize(
    ("action", "values"),
    [
        ("add", {"name": "Gandalf", "role": "Wizard"}),
        ("add", {**GANDALF, "role": "Dragon"}),
        ("add", {**GANDALF, "traits": [1]}),
        ("add", {**GANDALF, "pet": {"name": "Shadowfax"}}),
        ("update", {"name": "Gandalf", "role": None}),
        ("delete", {}),
    ],
)
def test_calls_the_planner_refuses_for_their_shape_fail_the_advertised_schema_too(
    action: Any, values: dict[str, Any]
) -> None:
    validator = jsonschema.Draft7Validator(tool_input_schema(NPC_SCHEMA, action))

    assert not validator.is_valid({"npc": values})


def test_tool_descriptions_say_what_each_tool_does() -> None:
    assert tool_description(NPC_SCHEMA, "add") == (
        "Add a non-player character to the knowledge graph. Relationship properties create "
        "edges (currentLocation -> located_in); their targets must already exist."
    )
    assert tool_description(NPC_SCHEMA, "update").startswith("Update an existing npc")
    assert "replaces its edges" in tool_description(NPC_SCHEMA, "update")
    assert tool_description(NPC_SCHEMA, "delete") == (
        "Delete an existing npc from the knowledge graph, with every edge touching it."
    )
