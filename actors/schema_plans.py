"""Dynamic schema tools, planned: add_/update_/delete_<type> arguments to graph commands (pure).

A call is checked against its type's EntitySchema (MemoryMesh's rules) and turned into commands
the graph writer decides atomically; nothing here reads the graph, so whether a node or a
relationship target exists is decided there. Property values become metadata entries
("currentLocation: Rivendell", projections.metadata.format_entry) in schema order, then extra
keys in argument order; `name` is the node's name and is not stored as metadata. Argument keys
are matched to properties exactly, else by their normalized metadata key, so "current_location"
still creates the located_in edge instead of an untyped entry that shadows it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from actors.commands import (
    AddEdges,
    AddNodes,
    Command,
    CommitTransaction,
    DeleteNodes,
    EdgeInput,
    EdgeTargets,
    NodeInput,
    PropertyEntry,
    SetNodeProperties,
)
from actors.errors import CommandRejectedError
from projections.entity_schema import (
    NAME_PROPERTY,
    EntitySchema,
    PropertyKind,
    PropertySchema,
)
from projections.metadata import display_name, format_entry, normalize_key

__all__ = [
    "Action",
    "SchemaViolationError",
    "plan_add",
    "plan_delete",
    "plan_update",
    "unwrap_arguments",
]

Action = Literal["add", "update", "delete"]


class SchemaViolationError(CommandRejectedError):
    """A dynamic tool call does not fit its schema; nothing was written. `suggestions` says
    what to send instead."""

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message, list(suggestions))


@dataclass(frozen=True)
class _Value:
    """A checked, non-empty property value: its metadata text and, for a relationship, its
    distinct targets in the order given."""

    text: str
    targets: tuple[str, ...] = ()


# --- planning -------------------------------------------------------------------------------


def plan_add(schema: EntitySchema, values: Mapping[str, Any]) -> CommitTransaction:
    """add_<type>: the node with its metadata, then one edge per relationship target."""
    given, extras = _split(schema, values)
    name = _name(schema, given)
    metadata: list[str] = []
    edges: dict[tuple[str, str], EdgeInput] = {}
    for prop in _properties(schema):
        value = _check(schema, prop, given.get(prop.name))
        if value is None:
            if prop.required:
                raise _missing(schema, prop)
            continue
        metadata.append(format_entry(prop.name, value.text))
        if prop.relationship is not None:
            edge_type = prop.relationship.edge_type
            for target in value.targets:
                edges.setdefault((target, edge_type), EdgeInput(name, target, edge_type))
    metadata.extend(
        format_entry(key, text)
        for key, raw in extras
        if (text := _extra_text(schema, key, raw)) is not None
    )
    steps: list[Command] = [AddNodes([NodeInput(name, schema.type_name, metadata)])]
    if edges:
        steps.append(AddEdges(list(edges.values())))
    return CommitTransaction(steps)


def plan_update(schema: EntitySchema, values: Mapping[str, Any]) -> SetNodeProperties:
    """update_<type>: replace the given properties only; null (or an empty value) removes an
    optional one; a relationship property also replaces its outgoing edges."""
    given, extras = _split(schema, values)
    name = _name(schema, given)
    entries: list[PropertyEntry] = []
    targets: dict[str, list[str]] = {}
    for prop in _properties(schema):
        if prop.name not in given:
            continue
        value = _check(schema, prop, given[prop.name])
        if value is None and prop.required:
            raise SchemaViolationError(
                f'Required field "{prop.name}" of {schema.type_name} cannot be removed. '
                "Nothing was changed.",
                [f'Give "{prop.name}" a new value, or leave it out to keep the current one.'],
            )
        entry = None if value is None else format_entry(prop.name, value.text)
        entries.append(PropertyEntry(prop.name, entry))
        if prop.relationship is not None:
            # Two properties may share an edge type: the edges are then the union of both.
            kept = targets.setdefault(prop.relationship.edge_type, [])
            kept.extend(t for t in (value.targets if value else ()) if t not in kept)
    for key, raw in extras:
        text = _extra_text(schema, key, raw)
        entries.append(PropertyEntry(key, None if text is None else format_entry(key, text)))
    if not entries:
        choices = ", ".join(p.name for p in _properties(schema))
        raise SchemaViolationError(
            f'Nothing to update for {schema.type_name} "{name}"; give at least one of: {choices}.',
            [_example_text(schema, "update")],
        )
    edges = [EdgeTargets(edge_type, found) for edge_type, found in targets.items()]
    return SetNodeProperties(name, schema.type_name, entries, edges)


def plan_delete(schema: EntitySchema, values: Mapping[str, Any]) -> DeleteNodes:
    """delete_<type>: the named node (it must have this type) and every edge touching it."""
    given, _ = _split(schema, values, allow_extras=True)
    return DeleteNodes([_name(schema, given)], node_type=schema.type_name)


def unwrap_arguments(
    schema: EntitySchema, action: Action, arguments: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """The property object of a call: `{<type>: {...}}` as advertised (as MemoryMesh defines it), or
    upstream MemoryMesh's `{<action>_<type>: {...}}`."""
    type_name = schema.type_name
    keys = (type_name, f"{action}_{type_name}")
    present = [key for key in keys if arguments is not None and key in arguments]
    if arguments is None or not present:
        raise SchemaViolationError(
            f'Missing required argument: "{type_name}" object not provided. '
            f"Example: {_example_text(schema, action)}",
            [f'Wrap the properties in an object under "{type_name}".'],
        )
    if len(present) > 1 and arguments[keys[0]] != arguments[keys[1]]:
        raise SchemaViolationError(
            f'Give the {type_name} properties once, under "{type_name}" (not also under '
            f'"{keys[1]}"). Nothing was changed.',
            [_example_text(schema, action)],
        )
    inner = arguments[present[0]]
    if not isinstance(inner, Mapping):
        raise SchemaViolationError(
            f'Argument "{present[0]}" must be an object of {type_name} properties. '
            f"Example: {_example_text(schema, action)}",
            [f'Send "{type_name}" as a JSON object, not as a string or a list.'],
        )
    return inner


# --- checking values ------------------------------------------------------------------------


def _properties(schema: EntitySchema) -> Iterator[PropertySchema]:
    return (p for p in schema.properties if p.name != NAME_PROPERTY)


def _split(
    schema: EntitySchema, values: Mapping[str, Any], *, allow_extras: bool = False
) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """(schema property name -> value, [(extra key, value)] in argument order)."""
    by_key = {normalize_key(p.name): p for p in schema.properties}
    given: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    extras: list[tuple[str, Any]] = []
    for key, value in values.items():
        prop = schema.find(key) or by_key.get(normalize_key(key))
        if prop is None:
            extras.append((key, value))
            continue
        if prop.name in given:
            raise SchemaViolationError(
                f'"{spelled[prop.name]}" and "{key}" both give {schema.type_name} property '
                f'"{prop.name}". Nothing was changed.',
                [f'Send "{prop.name}" once.'],
            )
        given[prop.name] = value
        spelled[prop.name] = key
    if extras and not allow_extras and not schema.additional_properties:
        unknown = ", ".join(f'"{key}"' for key, _ in extras)
        allowed = ", ".join(p.name for p in schema.properties)
        raise SchemaViolationError(
            f"Unknown properties for {schema.type_name}: {unknown}. Nothing was changed; this "
            f"schema allows only: {allowed}.",
            ["Leave the unknown properties out, or record them with add_observations."],
        )
    return given, ([] if allow_extras else extras)


def _name(schema: EntitySchema, given: Mapping[str, Any]) -> str:
    name = given.get(NAME_PROPERTY)
    if not isinstance(name, str) or not name.strip():
        raise SchemaViolationError(
            f'Missing required property: "name" is required for {schema.type_name} (a '
            "non-empty string naming the node).",
            [_example_text(schema, "add")],
        )
    return name


def _missing(schema: EntitySchema, prop: PropertySchema) -> SchemaViolationError:
    return SchemaViolationError(
        f'Required field "{prop.name}" is missing for {schema.type_name}. Nothing was changed.',
        [f'Give "{prop.name}": {_describe(prop)}.', _example_text(schema, "add")],
    )


def _check(schema: EntitySchema, prop: PropertySchema, raw: Any) -> _Value | None:
    """The checked value, or None when it is absent (null, "", or an empty list)."""
    if raw is None:
        return None
    if prop.relationship is not None or prop.kind is PropertyKind.ARRAY:
        items = _items(schema, prop, raw)
        if not items:
            return None
        items = [_in_enum(schema, prop, item) for item in items]
        targets = tuple(items) if prop.relationship is not None else ()
        return _Value(", ".join(items), targets)
    if prop.kind is PropertyKind.STRING:
        # One rule for text, declared or not (_extra_text): a number or true/false is its text.
        text = _scalar_text(raw)
        if text is None:
            raise _wrong_kind(schema, prop, raw)
        return _Value(_in_enum(schema, prop, text)) if text.strip() else None
    if prop.kind is PropertyKind.BOOLEAN:
        if not isinstance(raw, bool):
            raise _wrong_kind(schema, prop, raw)
        return _Value("true" if raw else "false")
    if not _is_number(raw):
        raise _wrong_kind(schema, prop, raw)
    if prop.kind is PropertyKind.INTEGER:
        if isinstance(raw, float) and not raw.is_integer():
            raise _wrong_kind(schema, prop, raw)
        return _Value(str(int(raw)))
    return _Value(str(raw))


def _scalar_text(raw: Any) -> str | None:
    """The text a string property stores for `raw`: a string as is, a number or true/false
    as JSON writes it; None for any other value (a list, an object, null)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if _is_number(raw):
        return str(raw)
    return None


def _is_number(raw: Any) -> bool:
    """An int or a finite float, not a bool (JSON true is no number)."""
    if isinstance(raw, float):
        return math.isfinite(raw)
    return isinstance(raw, int) and not isinstance(raw, bool)


def _items(schema: EntitySchema, prop: PropertySchema, raw: Any) -> list[str]:
    """Distinct non-blank strings, in order; a lone string is one item."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise _wrong_kind(schema, prop, raw)
    return list(dict.fromkeys(item for item in raw if item.strip()))


def _in_enum(schema: EntitySchema, prop: PropertySchema, value: str) -> str:
    """The allowed spelling of `value` (matched ignoring case)."""
    if prop.enum is None:
        return value
    for allowed in prop.enum:
        if allowed.casefold() == value.casefold():
            return allowed
    choices = ", ".join(prop.enum)
    raise SchemaViolationError(
        f'Invalid value "{value}" for {prop.name} of {schema.type_name}: allowed values are '
        f"{choices}. Nothing was changed.",
        [f'Use one of: {choices} for "{prop.name}".'],
    )


def _wrong_kind(schema: EntitySchema, prop: PropertySchema, raw: Any) -> SchemaViolationError:
    got = json.dumps(raw, default=repr)
    return SchemaViolationError(
        f'Property "{prop.name}" of {schema.type_name} must be {_describe(prop)}; got {got}. '
        "Nothing was changed.",
        [f'Send "{prop.name}" as {_describe(prop)}.'],
    )


def _describe(prop: PropertySchema) -> str:
    if prop.relationship is not None:
        return "a node name or a list of node names"
    return {
        PropertyKind.STRING: "a string (a number or true/false is stored as its text)",
        PropertyKind.ARRAY: "a list of strings",
        PropertyKind.NUMBER: "a number",
        PropertyKind.INTEGER: "a whole number",
        PropertyKind.BOOLEAN: "true or false",
    }[prop.kind] + (f" (one of: {', '.join(prop.enum)})" if prop.enum else "")


def _extra_text(schema: EntitySchema, key: str, raw: Any) -> str | None:
    """A key the schema does not list, stored as text; None when its value is null or ""."""
    if ":" in key or not display_name(key) or not key.isprintable():
        raise SchemaViolationError(
            f'"{key}" cannot be a property name: use letters, digits, spaces or underscores, '
            "without a colon. Nothing was changed.",
            [f"Rename the property, e.g. {display_name(key.replace(':', ' ')) or 'note'!r}."],
        )
    if raw is None:
        return None
    text = _scalar_text(raw)
    if text is not None:
        return text if text.strip() else None
    raise SchemaViolationError(
        f'Property "{key}" is not in the {schema.type_name} schema, so it is stored as text: '
        "it must be a string, a number or true/false. Nothing was changed.",
        [f'Send "{key}" as a single string, e.g. items joined with ", ".'],
    )


# --- examples in messages ------------------------------------------------------------------


def _example(schema: EntitySchema, action: Action) -> dict[str, Any]:
    values: dict[str, Any] = {NAME_PROPERTY: f"<name of the {schema.type_name}>"}
    if action == "delete":
        return values
    chosen = [p for p in _properties(schema) if p.required] if action == "add" else []
    if not chosen:
        chosen = list(_properties(schema))[:1]
    for prop in chosen:
        values[prop.name] = _sample(prop)
    return values


def _sample(prop: PropertySchema) -> Any:
    if prop.enum:
        return [prop.enum[0]] if prop.kind is PropertyKind.ARRAY else prop.enum[0]
    if prop.kind is PropertyKind.ARRAY:
        return [f"<{prop.name}>"]
    return {
        PropertyKind.NUMBER: 1.5,
        PropertyKind.INTEGER: 1,
        PropertyKind.BOOLEAN: True,
    }.get(prop.kind, f"<{prop.name}>")


def _example_text(schema: EntitySchema, action: Action) -> str:
    call = json.dumps({schema.type_name: _example(schema, action)}, ensure_ascii=False)
    return f"{action}_{schema.type_name}({call})"
