"""Entity-type schemas (MemoryMesh's format): the parsed, validated form of a schema file.

A schema names its add tool (`"name": "add_npc"`, type `npc`), describes it, and lists
properties. Each property has a kind (string, array, number, integer, boolean), a description,
an optional `required` flag and `enum`, and an optional `relationship` that turns its value(s)
into edges. `additionalProperties` false refuses keys the schema does not list; absent or true
accepts them as plain string metadata. The node's name is always the `name` property, required
and a string; a schema without one gets it implicitly.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from projections.metadata import normalize_key

__all__ = [
    "EntitySchema",
    "PropertyKind",
    "PropertySchema",
    "Relationship",
    "SchemaFileError",
    "SchemaLimits",
    "canonical_json",
    "parse_schema",
]

ADD_PREFIX = "add_"
# MCP tool names allow [A-Za-z0-9_.-]{1,128}; "update_" is the longest prefix a type gets.
_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,119}$")
_PROPERTY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
NAME_PROPERTY = "name"


class SchemaFileError(ValueError):
    """A schema document is unusable; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class SchemaLimits:
    """How large a schema file may be. Its document is copied into the log on every change
    and into every tools/list answer, so a 50 MB description would cost 100 MB of log and a
    105 MB tool list; the defaults are far above any real schema (the shipped ones use under
    4 KB, ten properties and 110-character descriptions)."""

    max_file_bytes: int = 1 << 20
    max_description_chars: int = 8_192
    max_properties: int = 256


class PropertyKind(StrEnum):
    STRING = "string"
    ARRAY = "array"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"


@dataclass(frozen=True)
class Relationship:
    """A property whose value(s) name target nodes: one edge of `edge_type` per target."""

    edge_type: str
    node_type: str | None = (
        None  # the expected target type; informational (as MemoryMesh defines it)
    )
    description: str = ""


@dataclass(frozen=True)
class PropertySchema:
    name: str
    kind: PropertyKind
    description: str
    required: bool = False
    enum: tuple[str, ...] | None = None
    relationship: Relationship | None = None


@dataclass(frozen=True)
class EntitySchema:
    """One entity type's schema; `document` is the JSON it was parsed from, as given."""

    type_name: str
    description: str
    properties: tuple[PropertySchema, ...]
    additional_properties: bool
    document: dict[str, Any]

    @property
    def tool_names(self) -> tuple[str, str, str]:
        return (f"add_{self.type_name}", f"update_{self.type_name}", f"delete_{self.type_name}")

    def find(self, name: str) -> PropertySchema | None:
        for prop in self.properties:
            if prop.name == name:
                return prop
        return None

    @property
    def required(self) -> tuple[PropertySchema, ...]:
        return tuple(p for p in self.properties if p.required)


def canonical_json(document: Any) -> tuple[str, str]:
    """Compact JSON text (key order kept: it orders properties) and its sha256 digest."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return text, hashlib.sha256(text.encode()).hexdigest()


def parse_schema(document: Any, limits: SchemaLimits | None = None) -> EntitySchema:
    """Validate a schema document (MemoryMesh's rules, plus kinds, enums and names, and
    `limits` when given); raises SchemaFileError naming the first problem.

    Files are checked against limits; documents already in the log are not (a limit lowered
    later must not take a registered type out of force)."""
    if not isinstance(document, dict):
        raise SchemaFileError("the document must be a JSON object")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise SchemaFileError('"name" must be a string such as "add_npc"')
    if not name.startswith(ADD_PREFIX):
        raise SchemaFileError(
            f'"name" is {name!r}; it must start with "add_" (e.g. "add_{name}"): the type '
            "is the name without that prefix"
        )
    type_name = name[len(ADD_PREFIX) :]
    if not _TYPE_NAME.match(type_name):
        raise SchemaFileError(
            f"type {type_name!r} (from {name!r}) must start with a letter and hold only "
            "letters, digits and underscores (at most 120)"
        )
    description = document.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SchemaFileError('"description" must be a non-empty string')
    raw_properties = document.get("properties")
    if not isinstance(raw_properties, dict):
        raise SchemaFileError('"properties" must be an object of property definitions')
    additional = document.get("additionalProperties", True)
    if not isinstance(additional, bool):
        raise SchemaFileError('"additionalProperties" must be true or false when given')
    properties = [_parse_property(key, value) for key, value in raw_properties.items()]
    _check_distinct_keys(properties)
    if not any(p.name == NAME_PROPERTY for p in properties):
        properties.insert(
            0,
            PropertySchema(NAME_PROPERTY, PropertyKind.STRING, f"The name of the {type_name}"),
        )
    properties = [
        PropertySchema(p.name, p.kind, p.description, True, p.enum, p.relationship)
        if p.name == NAME_PROPERTY
        else p
        for p in properties
    ]
    schema = EntitySchema(type_name, description, tuple(properties), additional, document)
    if limits is not None:
        _check_limits(schema, limits)
    return schema


def _check_limits(schema: EntitySchema, limits: SchemaLimits) -> None:
    if len(schema.properties) > limits.max_properties:
        raise SchemaFileError(
            f"{len(schema.properties):,} properties; a schema may have at most "
            f"{limits.max_properties:,}: split the type"
        )
    texts = [("the description", schema.description)]
    for prop in schema.properties:
        texts.append((f"property {prop.name!r}: the description", prop.description))
        if prop.relationship is not None:
            texts.append(
                (f"property {prop.name!r}: relationship.description", prop.relationship.description)
            )
    for where, text in texts:
        if len(text) > limits.max_description_chars:
            raise SchemaFileError(
                f"{where} is {len(text):,} characters long; the limit is "
                f"{limits.max_description_chars:,}: shorten it"
            )


def _check_distinct_keys(properties: list[PropertySchema]) -> None:
    # Metadata keys are compared normalized (projections.metadata), so "currentLocation" and
    # "current_location" would write, and replace, the same entries.
    seen: dict[str, str] = {}
    for prop in properties:
        other = seen.setdefault(normalize_key(prop.name), prop.name)
        if other != prop.name:
            raise SchemaFileError(
                f"properties {other!r} and {prop.name!r} name the same metadata key; "
                "rename or remove one of them"
            )


def _parse_property(key: str, value: Any) -> PropertySchema:
    where = f"property {key!r}"
    if not _PROPERTY_NAME.match(key) or not normalize_key(key):
        raise SchemaFileError(
            f"{where}: a property name holds only letters, digits and underscores, and at "
            "least one letter or digit"
        )
    if not isinstance(value, dict):
        raise SchemaFileError(f"{where} must be an object with a type and a description")
    kind_name = value.get("type")
    try:
        kind = PropertyKind(str(kind_name))
    except ValueError:
        kinds = ", ".join(k.value for k in PropertyKind)
        raise SchemaFileError(f"{where}: type {kind_name!r} is not one of {kinds}") from None
    description = value.get("description")
    if not isinstance(description, str):
        raise SchemaFileError(f"{where} needs a string description")
    required = value.get("required", False)
    if not isinstance(required, bool):
        raise SchemaFileError(f"{where}: required must be true or false")
    enum = _parse_enum(where, value.get("enum"))
    relationship = _parse_relationship(where, value.get("relationship"))
    if relationship is not None and kind not in (PropertyKind.STRING, PropertyKind.ARRAY):
        raise SchemaFileError(f"{where}: a relationship property must be a string or an array")
    if key == NAME_PROPERTY and (kind is not PropertyKind.STRING or relationship is not None):
        raise SchemaFileError(f"{where}: the name property must be a plain string")
    if enum is not None and kind in (
        PropertyKind.NUMBER,
        PropertyKind.INTEGER,
        PropertyKind.BOOLEAN,
    ):
        raise SchemaFileError(f"{where}: enum applies to string and array properties only")
    return PropertySchema(key, kind, description, required, enum, relationship)


def _parse_enum(where: str, enum: Any) -> tuple[str, ...] | None:
    if enum is None:
        return None
    if (
        not isinstance(enum, list)
        or not enum
        or not all(isinstance(item, str) for item in enum)
        or len(set(enum)) != len(enum)
    ):
        raise SchemaFileError(f"{where}: enum must be a non-empty list of distinct strings")
    return tuple(enum)


def _parse_relationship(where: str, relationship: Any) -> Relationship | None:
    if relationship is None:
        return None
    if not isinstance(relationship, dict):
        raise SchemaFileError(f"{where}: relationship must be an object with an edgeType")
    edge_type = relationship.get("edgeType")
    if not isinstance(edge_type, str) or not edge_type.strip():
        raise SchemaFileError(f"{where}: relationship.edgeType must be a non-empty string")
    node_type = relationship.get("nodeType")
    if node_type is not None and not isinstance(node_type, str):
        raise SchemaFileError(f"{where}: relationship.nodeType must be a string when given")
    description = relationship.get("description", "")
    if not isinstance(description, str):
        raise SchemaFileError(f"{where}: relationship.description must be a string")
    return Relationship(edge_type, node_type, description)
