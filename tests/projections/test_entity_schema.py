"""parse_schema: what a schema file must hold (as MemoryMesh defines it), and canonical_json."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from projections.entity_schema import (
    PropertyKind,
    Relationship,
    SchemaFileError,
    canonical_json,
    parse_schema,
)
from tests.schema_samples import NPC_SCHEMA


def npc(**changes: Any) -> dict[str, Any]:
    """The seed's npc schema with top-level keys replaced (None deletes a key)."""
    document = copy.deepcopy(NPC_SCHEMA)
    for key, value in changes.items():
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    return document


def with_property(name: str, definition: Any) -> dict[str, Any]:
    document = npc()
    document["properties"][name] = definition
    return document


def rejection(document: Any) -> str:
    with pytest.raises(SchemaFileError) as caught:
        parse_schema(document)
    return str(caught.value)


def test_the_seeds_npc_schema_parses_with_its_properties_and_relationship() -> None:
    schema = parse_schema(npc())

    assert schema.type_name == "npc"
    assert schema.tool_names == ("add_npc", "update_npc", "delete_npc")
    assert [p.name for p in schema.properties] == [
        "name",
        "role",
        "status",
        "currentLocation",
        "description",
        "traits",
    ]
    assert [p.name for p in schema.required] == ["name", "role", "status"]
    role = schema.find("role")
    assert role is not None and role.enum == (
        "Warrior",
        "Wizard",
        "Merchant",
        "Noble",
        "Peasant",
        "Thief",
    )
    location = schema.find("currentLocation")
    assert location is not None
    assert location.relationship == Relationship(
        "located_in", "location", "The location where this NPC resides"
    )
    traits = schema.find("traits")
    assert traits is not None and traits.kind is PropertyKind.ARRAY
    assert schema.additional_properties is True


def test_a_schema_without_a_name_property_gets_a_required_one() -> None:
    document = npc()
    del document["properties"]["name"]

    schema = parse_schema(document)

    assert schema.properties[0].name == "name"
    assert schema.properties[0].required


def test_the_name_property_is_required_even_when_the_file_says_otherwise() -> None:
    schema = parse_schema(with_property("name", {"type": "string", "description": "n"}))

    name = schema.find("name")
    assert name is not None and name.required


def test_additional_properties_default_to_allowed() -> None:
    assert parse_schema(npc(additionalProperties=None)).additional_properties is True
    assert parse_schema(npc(additionalProperties=False)).additional_properties is False


def test_number_integer_and_boolean_kinds_are_understood() -> None:
    document = npc()
    document["properties"] |= {
        "age": {"type": "integer", "description": "Age in years"},
        "gold": {"type": "number", "description": "Coins"},
        "hostile": {"type": "boolean", "description": "Attacks on sight"},
    }

    schema = parse_schema(document)

    kinds = {p.name: p.kind for p in schema.properties}
    assert kinds["age"] is PropertyKind.INTEGER
    assert kinds["gold"] is PropertyKind.NUMBER
    assert kinds["hostile"] is PropertyKind.BOOLEAN


def test_a_name_without_the_add_prefix_is_rejected() -> None:
    assert 'must start with "add_"' in rejection(npc(name="npc"))


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([], "must be a JSON object"),
        (npc(name=None), '"name" must be a string'),
        (npc(name="add_"), "must start with a letter"),
        (npc(name="add_my-type"), "must start with a letter"),
        (npc(description=None), '"description" must be a non-empty string'),
        (npc(description="  "), '"description" must be a non-empty string'),
        (npc(properties=None), '"properties" must be an object'),
        (npc(properties=[]), '"properties" must be an object'),
        (npc(additionalProperties="yes"), '"additionalProperties" must be true or false'),
    ],
)
def test_a_document_missing_a_top_level_part_is_rejected(document: Any, expected: str) -> None:
    assert expected in rejection(document)


@pytest.mark.parametrize(
    ("name", "definition", "expected"),
    [
        ("bad key", {"type": "string", "description": "d"}, "property name holds only"),
        ("__", {"type": "string", "description": "d"}, "at least one letter or digit"),
        ("mood", "happy", "must be an object"),
        ("mood", {"type": "date", "description": "d"}, "type 'date' is not one of"),
        ("mood", {"description": "d"}, "type None is not one of"),
        ("mood", {"type": "string"}, "needs a string description"),
        ("mood", {"type": "string", "description": "d", "required": "yes"}, "required must"),
    ],
)
def test_a_malformed_property_is_rejected(name: str, definition: Any, expected: str) -> None:
    assert expected in rejection(with_property(name, definition))


@pytest.mark.parametrize(
    "enum",
    [[], "Happy", ["Happy", 3], ["Happy", "Happy"]],
)
def test_a_bad_enum_is_rejected(enum: Any) -> None:
    definition = {"type": "string", "description": "d", "enum": enum}

    assert "enum must be a non-empty list of distinct strings" in rejection(
        with_property("mood", definition)
    )


def test_an_enum_on_a_number_is_rejected() -> None:
    definition = {"type": "number", "description": "d", "enum": ["1"]}

    assert "enum applies to string and array" in rejection(with_property("level", definition))


def test_a_relationship_on_a_number_is_rejected() -> None:
    definition = {"type": "number", "description": "d", "relationship": {"edgeType": "at"}}

    assert "relationship property must be a string or an array" in rejection(
        with_property("level", definition)
    )


@pytest.mark.parametrize(
    ("relationship", "expected"),
    [
        ("located_in", "relationship must be an object"),
        ({}, "edgeType must be a non-empty string"),
        ({"edgeType": " "}, "edgeType must be a non-empty string"),
        ({"edgeType": "in", "nodeType": 3}, "nodeType must be a string"),
        ({"edgeType": "in", "description": 3}, "relationship.description must be a string"),
    ],
)
def test_a_malformed_relationship_is_rejected(relationship: Any, expected: str) -> None:
    definition = {"type": "string", "description": "d", "relationship": relationship}

    assert expected in rejection(with_property("home", definition))


def test_the_name_property_cannot_be_a_relationship_or_another_kind() -> None:
    relationship = {"edgeType": "is"}
    as_relationship = {"type": "string", "description": "d", "relationship": relationship}

    assert "plain string" in rejection(with_property("name", as_relationship))
    assert "plain string" in rejection(with_property("name", {"type": "array", "description": "d"}))


def test_two_properties_naming_the_same_metadata_key_are_rejected() -> None:
    document = with_property("current_location", {"type": "string", "description": "d"})

    assert "name the same metadata key" in rejection(document)


def test_canonical_json_is_compact_keeps_key_order_and_digests_the_text() -> None:
    text, digest = canonical_json({"b": 1, "a": "é"})

    assert text == '{"b":1,"a":"é"}'
    assert len(digest) == 64
    assert canonical_json({"b": 1, "a": "é"})[1] == digest
    assert canonical_json({"a": "é", "b": 1})[1] != digest
