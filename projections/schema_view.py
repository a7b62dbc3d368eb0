"""SchemaViewProjection: each entity's metadata parsed against its type's schema in force.

An entity of a type with a schema in force has typed fields (the schema's properties, read back
from its "Key: Value" metadata entries, projections.metadata) and conformance problems: a
required property with no entry, a value outside an enum or not of its property's kind, a key
the schema does not list when it forbids other keys, a property given more than once. Entries
without a key are free text. Relationship values are node names; edges are not checked here.

The view follows the graph and schema projections lazily, like the search index: the writer
tells it what applied envelopes touched (entity names, schema type names), and the next query
re-parses those entities and, for a type whose schema changed, every entity of that type. It
keeps one result per entity, so a query never re-reads the whole graph.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    SchemaRegistered,
    SchemaRetired,
)
from projections.entity_schema import NAME_PROPERTY, EntitySchema, PropertyKind, PropertySchema
from projections.graph import GraphProjection
from projections.metadata import display_name, normalize_key, parse_entry
from projections.schemas import SchemaProjection

__all__ = ["FieldValue", "Problem", "ProblemKind", "SchemaViewProjection", "parse_entity"]

ProblemKind = Literal[
    "missing_required", "not_in_enum", "unknown_key", "wrong_kind", "duplicate_key"
]
FieldValue = str | list[str] | float | int | bool

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_KIND_TEXT = {
    PropertyKind.NUMBER: "a number",
    PropertyKind.INTEGER: "a whole number",
    PropertyKind.BOOLEAN: "true or false",
}


class Problem(msgspec.Struct, frozen=True):
    """One way an entity does not conform to its schema; `detail` says what to fix."""

    entity: str
    entity_type: str
    kind: ProblemKind
    key: str
    value: str
    detail: str


@dataclass(frozen=True, slots=True)
class _Result:
    fields: dict[str, FieldValue]
    problems: tuple[Problem, ...]


# Names noted before the view may give up remembering them and parse everything instead.
_DIRTY_BOUND = 1024


class SchemaViewProjection:
    """Typed fields and conformance problems per entity, kept current lazily (pure, no I/O).

    Built over the graph and schema projections it reads; when the writer replaces those (a
    reset), it builds a new view too. A new view parses every entity on its first query. Use one
    view from one thread at a time, like the graph it reads.
    """

    name = "schema_view"
    version = 1

    def __init__(self, graph: GraphProjection, schemas: SchemaProjection) -> None:
        self._graph = graph
        self._schemas = schemas
        self._full = True
        self._dirty: set[str] = set()
        self._changed_types: set[str] = set()
        # The schema every current result of a type was parsed with (absent: none in force).
        self._used: dict[str, EntitySchema] = {}
        self._type_of: dict[str, str] = {}
        self._by_type: dict[str, set[str]] = {}
        # Only entities of a type with a schema in force have a result.
        self._results: dict[str, _Result] = {}
        self._nonconforming: dict[str, set[str]] = {}
        self.parses = 0
        """Entities parsed against a schema so far: shows how much a refresh re-read."""

    def note(self, envelopes: Iterable[Envelope]) -> None:
        """Remember which entities and schema types the applied envelopes touched (cheap)."""
        if self._full:
            return  # the next query parses every entity: there is nothing to remember
        dirty = self._dirty
        for envelope in envelopes:
            event = envelope.event
            if isinstance(event, ObservationAdded | ObservationDeleted):
                dirty.add(event.entity)
            elif isinstance(event, EntityCreated | EntityUpdated | EntityDeleted):
                dirty.add(event.name)
            elif isinstance(event, SchemaRegistered | SchemaRetired):
                self._changed_types.add(event.type_name)
        if len(dirty) > _DIRTY_BOUND and len(dirty) > self._graph.entity_count():
            # More names to re-read than there are entities: parsing them all costs no more,
            # and a server that is never asked would otherwise remember every name it touched.
            self._full = True
            self._dirty = set()
            self._changed_types = set()

    # --- queries --------------------------------------------------------------------------

    def problems(self, type_name: str | None = None, limit: int | None = None) -> list[Problem]:
        """Problems of non-conforming entities (of `type_name` only, if given), by type, then
        entity name, then in the order found; at most `limit` of them."""
        self._refresh()
        if type_name is None:
            types = sorted(self._nonconforming)
        else:
            types = [type_name] if type_name in self._nonconforming else []
        found: list[Problem] = []
        for each in types:
            for entity in sorted(self._nonconforming[each]):
                found.extend(self._results[entity].problems)
                if limit is not None and len(found) >= limit:
                    return found[:limit]
        return found

    def problems_of(self, name: str) -> list[Problem]:
        """The problems of one entity; [] if it conforms, has no schema or does not exist."""
        self._refresh()
        result = self._results.get(name)
        return [] if result is None else list(result.problems)

    def nonconforming_count(self, type_name: str | None = None) -> int:
        """How many entities (of `type_name`, if given) have at least one problem."""
        self._refresh()
        if type_name is not None:
            return len(self._nonconforming.get(type_name, ()))
        return sum(len(names) for names in self._nonconforming.values())

    def fields(self, name: str) -> dict[str, FieldValue] | None:
        """The entity's typed fields by property name (plus, where the schema allows other
        keys, those entries as text); None if it does not exist or its type has no schema."""
        self._refresh()
        result = self._results.get(name)
        if result is None:
            return None
        return {
            key: list(value) if isinstance(value, list) else value
            for key, value in result.fields.items()
        }

    # --- keeping current ------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._full:
            self._rebuild()
            return
        dirty, self._dirty = self._dirty, set()
        # Schemas first, so an entity touched as well is parsed once, with the new schema.
        changed, self._changed_types = self._changed_types, set()
        for type_name in changed:
            schema = self._schemas.schema(type_name)
            if schema == self._used.get(type_name):
                continue  # an older registration that lost, or the same document again
            if schema is None:
                del self._used[type_name]
            else:
                self._used[type_name] = schema
            dirty.update(self._by_type.get(type_name, ()))
        graph = self._graph
        for name in dirty:
            self._forget(name)
            entity_type = graph.entity_type(name)
            if entity_type is not None:
                self._store(name, entity_type, graph.observations(name))

    def _rebuild(self) -> None:
        self._full = False
        self._dirty = set()
        self._changed_types = set()
        self._used = {schema.type_name: schema for schema in self._schemas.schemas()}
        self._type_of = {}
        self._by_type = {}
        self._results = {}
        self._nonconforming = {}
        for entity in self._graph.entities():
            self._store(entity.name, entity.entity_type, entity.observations)

    def _forget(self, name: str) -> None:
        entity_type = self._type_of.pop(name, None)
        if entity_type is None:
            return
        self._by_type[entity_type].discard(name)
        if not self._by_type[entity_type]:
            del self._by_type[entity_type]
        if self._results.pop(name, None) is not None:
            names = self._nonconforming.get(entity_type)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._nonconforming[entity_type]

    def _store(self, name: str, entity_type: str, observations: Sequence[str]) -> None:
        self._type_of[name] = entity_type
        self._by_type.setdefault(entity_type, set()).add(name)
        schema = self._used.get(entity_type)
        if schema is None:
            return
        self.parses += 1
        fields, problems = parse_entity(schema, name, observations)
        self._results[name] = _Result(fields, tuple(problems))
        if problems:
            self._nonconforming.setdefault(entity_type, set()).add(name)


# --- parsing one entity ---------------------------------------------------------------------


def parse_entity(
    schema: EntitySchema, name: str, observations: Sequence[str]
) -> tuple[dict[str, FieldValue], list[Problem]]:
    """An entity's typed fields and its problems against `schema` (the inverse of how the
    add_/update_<type> tools write metadata). A property given twice counts its latest entry."""
    found = _Found(schema, name)
    by_key: dict[str, PropertySchema] = {}
    for prop in schema.properties:
        by_key.setdefault(normalize_key(prop.name), prop)
        by_key.setdefault(normalize_key(display_name(prop.name)), prop)
    given: dict[str, list[tuple[str, str]]] = {}  # property -> (entry, value) in order
    extras: dict[str, tuple[str, str]] = {}  # normalized key -> (first spelling, latest value)
    for entry in observations:
        parsed = parse_entry(entry)
        if parsed is None:
            continue
        key, value = parsed
        matched = by_key.get(normalize_key(key))
        if matched is None:
            if schema.additional_properties:
                spelled = extras.get(normalize_key(key), (key, ""))[0]
                extras[normalize_key(key)] = (spelled, value)
            else:
                found.unknown_key(key, value, entry)
        elif matched.name != NAME_PROPERTY and value:
            # The name is the entity's own; an empty value is no value (null removes one).
            given.setdefault(matched.name, []).append((entry, value))
    fields: dict[str, FieldValue] = {NAME_PROPERTY: name}
    for prop in schema.properties:
        values = given.get(prop.name)
        if prop.name == NAME_PROPERTY:
            continue
        if not values:
            if prop.required:
                found.missing(prop)
            continue
        latest = values[-1][1]
        for entry, earlier in values[:-1]:
            found.duplicate(prop, entry, earlier, latest)
        typed = found.typed(prop, latest)
        if typed is not None:
            fields[prop.name] = typed
    for spelled, value in extras.values():
        fields.setdefault(spelled, value)
    return fields, found.problems


class _Found:
    """The problems found in one entity, each with a detail that says what to fix."""

    def __init__(self, schema: EntitySchema, name: str) -> None:
        self.schema = schema
        self.name = name
        self.problems: list[Problem] = []

    def _add(self, kind: ProblemKind, key: str, value: str, detail: str) -> None:
        self.problems.append(Problem(self.name, self.schema.type_name, kind, key, value, detail))

    def typed(self, prop: PropertySchema, text: str) -> FieldValue | None:
        """The value of `text` as `prop`'s kind (None, with a problem, if it is not one)."""
        kind = prop.kind
        if kind is PropertyKind.ARRAY or prop.relationship is not None:
            # The tools join items with ", ", also for a string relationship with many targets.
            items = [self.allowed(prop, item.strip()) for item in text.split(",") if item.strip()]
            return items if kind is PropertyKind.ARRAY else ", ".join(items)
        if kind is PropertyKind.STRING:
            return self.allowed(prop, text)
        value: FieldValue | None = None
        if kind is PropertyKind.BOOLEAN and text.casefold() in ("true", "false"):
            value = text.casefold() == "true"
        elif kind is PropertyKind.INTEGER and _INTEGER.fullmatch(text):
            value = int(text)
        elif kind is PropertyKind.NUMBER and _NUMBER.fullmatch(text):
            number = float(text)
            value = number if math.isfinite(number) else None  # "1e999" overflows
        if value is None:
            self._add(
                "wrong_kind",
                prop.name,
                text,
                f'"{prop.name}" must be {_KIND_TEXT[kind]}, and "{text}" is not: set it with '
                f"update_{self.schema.type_name}.",
            )
        return value

    def allowed(self, prop: PropertySchema, value: str) -> str:
        """`value` in the enum's own spelling (matched ignoring case, as the tools do)."""
        if prop.enum is None:
            return value
        for allowed in prop.enum:
            if allowed.casefold() == value.casefold():
                return allowed
        self._add(
            "not_in_enum",
            prop.name,
            value,
            f'"{value}" is not an allowed value of "{prop.name}": use one of '
            f"{', '.join(prop.enum)} (update_{self.schema.type_name}).",
        )
        return value

    def missing(self, prop: PropertySchema) -> None:
        self._add(
            "missing_required",
            prop.name,
            "",
            f'Required property "{prop.name}" is missing: set it with '
            f'update_{self.schema.type_name}, or add the entry "{prop.name}: ...".',
        )

    def unknown_key(self, key: str, value: str, entry: str) -> None:
        allowed = ", ".join(p.name for p in self.schema.properties)
        self._add(
            "unknown_key",
            key,
            value,
            f'"{key}" is not a property of {self.schema.type_name}, which allows only: '
            f'{allowed}. Delete the entry "{entry}", or rename its key to one of those.',
        )

    def duplicate(self, prop: PropertySchema, entry: str, earlier: str, latest: str) -> None:
        self._add(
            "duplicate_key",
            prop.name,
            earlier,
            f'"{prop.name}" is given more than once and the latest value, "{latest}", counts: '
            f'delete the entry "{entry}".',
        )
