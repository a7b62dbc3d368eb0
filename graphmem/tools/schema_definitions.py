"""Definitions of the schema family's tools: the input schema and description of
add_/update_/delete_<type> for one entity-type schema (MCP presentation, derived from the
schema alone)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from actors.schema_plans import Action
from projections.entity_schema import (
    NAME_PROPERTY,
    EntitySchema,
    PropertyKind,
    PropertySchema,
)

__all__ = ["tool_description", "tool_input_schema"]


def _properties(schema: EntitySchema) -> Iterator[PropertySchema]:
    """The schema's properties other than the name, which every tool takes apart."""
    return (p for p in schema.properties if p.name != NAME_PROPERTY)


def tool_input_schema(schema: EntitySchema, action: Action) -> dict[str, Any]:
    """The JSON Schema (draft-07) of the tool's arguments: `{<type>: {...properties}}`."""
    type_name = schema.type_name
    name_schema = {
        "type": "string",
        "minLength": 1,
        "description": f"The name of the {type_name} to delete"
        if action == "delete"
        else _name_description(schema),
    }
    inner: dict[str, Any] = {"type": "object", "properties": {NAME_PROPERTY: name_schema}}
    if action == "delete":
        inner["required"] = [NAME_PROPERTY]
    else:
        nullable = action == "update"
        for prop in _properties(schema):
            # A required property may be left out of an update, never removed by one.
            inner["properties"][prop.name] = _property_schema(
                prop,
                nullable=nullable and not prop.required,
                required=prop.required and not nullable,
            )
        inner["required"] = (
            [NAME_PROPERTY] if nullable else [p.name for p in schema.properties if p.required]
        )
        inner["additionalProperties"] = _additional_schema(schema, nullable=nullable)
        inner["description"] = (
            schema.description if action == "add" else f"The {type_name} and what to change"
        )
    return {"type": "object", "properties": {type_name: inner}, "required": [type_name]}


def tool_description(schema: EntitySchema, action: Action) -> str:
    type_name = schema.type_name
    links = [
        f"{p.name} -> {p.relationship.edge_type}"
        for p in _properties(schema)
        if p.relationship is not None
    ]
    edges = (
        f" Relationship properties create edges ({', '.join(links)}); their targets must "
        "already exist."
        if links
        else ""
    )
    if action == "add":
        return f"{schema.description.rstrip('.')}.{edges}"
    if action == "update":
        return (
            f"Update an existing {type_name} in the knowledge graph: give its name and only "
            "the properties to change; null removes an optional property."
            + (" Changing a relationship property replaces its edges." if links else "")
        )
    return f"Delete an existing {type_name} from the knowledge graph, with every edge touching it."


def _name_description(schema: EntitySchema) -> str:
    found = schema.find(NAME_PROPERTY)
    return found.description if found is not None else f"The name of the {schema.type_name}"


def _property_schema(prop: PropertySchema, *, nullable: bool, required: bool) -> dict[str, Any]:
    enum = {"enum": list(prop.enum)} if prop.enum else {}
    description = prop.description
    string: dict[str, Any] = {"type": "string", **enum}
    items = {"type": "array", "items": string}
    options: list[dict[str, Any]]
    if prop.relationship is not None:
        rel = prop.relationship
        target = f"{rel.node_type} node" if rel.node_type else "node"
        description = _sentences(
            description,
            f"Names an existing {target} (or a list of them); creates a {rel.edge_type} "
            "edge to each.",
        )
        options = [string, items]
    elif prop.kind is PropertyKind.ARRAY:
        options = [{**items, "minItems": 1} if required else items]
    elif prop.kind is PropertyKind.STRING:
        options = [{**string, "minLength": 1} if required else string]
    else:
        options = [{"type": prop.kind.value}]
    if nullable:
        options.append({"type": "null"})
        description = _sentences(description, "Null removes it.")
    if len(options) == 1:
        return {**options[0], "description": description}
    return {"anyOf": options, "description": description}


def _sentences(first: str, second: str) -> str:
    first = first.strip()
    if first and first[-1] not in ".!?":
        first += "."
    return f"{first} {second}".strip()


def _additional_schema(schema: EntitySchema, *, nullable: bool) -> bool | dict[str, Any]:
    if not schema.additional_properties:
        return False
    kinds = ["string", "number", "boolean", *(["null"] if nullable else [])]
    return {"type": kinds, "description": "Any other property, stored as a text entry"}
