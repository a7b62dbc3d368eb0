"""Small builders for the JSON Schemas of tool inputs and outputs (draft-07, as the official
server publishes them: no `additionalProperties` on inputs, `false` on every output object)."""

from __future__ import annotations

from typing import Any

DRAFT_07 = "http://json-schema.org/draft-07/schema#"

Schema = dict[str, Any]


def string(description: str | None = None, **extra: Any) -> Schema:
    schema: Schema = {"type": "string", **extra}
    if description:
        schema["description"] = description
    return schema


def array(items: Schema, description: str | None = None) -> Schema:
    schema: Schema = {"type": "array", "items": items}
    if description:
        schema["description"] = description
    return schema


def obj(
    properties: dict[str, Schema],
    required: list[str] | None = None,
    *,
    closed: bool = False,
    description: str | None = None,
) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def root(schema: Schema) -> Schema:
    return {"$schema": DRAFT_07, **schema}


def closed_copy(schema: Schema) -> Schema:
    """The same schema with `additionalProperties: false` on every object level (outputs)."""
    copy: Schema = {}
    for key, value in schema.items():
        if key == "properties":
            copy[key] = {name: closed_copy(sub) for name, sub in value.items()}
        elif key == "items":
            copy[key] = closed_copy(value)
        else:
            copy[key] = value
    if copy.get("type") == "object":
        copy["additionalProperties"] = False
    return copy
