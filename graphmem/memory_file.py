"""Reading the official memory server's file: JSONL, or the legacy `memory.json` document,
into records in file order, with what could not be read reported per line.

The official file (as the official server writes it) is JSONL: one compact object per line, entities
(`type, name, entityType, observations`) then relations (`type, from, to, relationType`). The
oldest releases wrote one pretty-printed document `{"entities": [...], "relations": [...]}`;
both are read. MemoryMesh's file is JSONL too, with `node` records (`name, nodeType,
metadata`) and `edge` records (`from, to, edgeType`, an optional `weight`): a node is an entity
(its metadata its observations) and an edge a relation that keeps its weight. Reading is
tolerant where the official loader is not: a bad line is reported with its line number and the
rest is still read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, not_
from pathlib import Path
from typing import Any, Literal

import msgspec

from graphmem.limits import InputLimits
from graphmem.memory_lines import (
    EntityLine,
    RelationLine,
    plain_record,
    plain_records,
    unescaped_text,
    whole_file_records,
)
from projections.bounded_json import JsonShapeError, decode

__all__ = [
    "LONE_SURROGATE",
    "EntityRecord",
    "MemoryFileError",
    "ParsedMemory",
    "Problem",
    "RelationKey",
    "RelationRecord",
    "parse_memory",
    "read_memory_file",
    "unique_in_order",
]

RelationKey = tuple[str, str, str]


class MemoryFileError(Exception):
    """The memory file cannot be read at all (missing, a directory, unreadable)."""


@dataclass(frozen=True)
class Problem:
    """Something in the file that was not imported as written; `where` is "line 7" or
    "entities[3]" (the legacy document has no useful line numbers)."""

    where: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


# Structs, not dataclasses: a bulk import makes one per line, and msgspec builds one in a tenth
# of a frozen dataclass's time; they hold only strings and lists of strings, so no cycles (gc).
# `place` is None for a line of a file, whose `where` ("line 7") is made when asked: a string
# per record was 0.25 s and 120 MB of a million entities' import.
class EntityRecord(msgspec.Struct, gc=False):
    place: str | None
    line: int | None
    name: str
    entity_type: str
    observations: list[str]

    @property
    def where(self) -> str:
        return _where(self.place, self.line)


class RelationRecord(msgspec.Struct, frozen=True, gc=False):
    place: str | None
    line: int | None
    from_entity: str
    to_entity: str
    relation_type: str
    # MemoryMesh's edge weight; None when the file gives none (the official format has none).
    weight: float | None = None

    @property
    def key(self) -> RelationKey:
        return (self.from_entity, self.to_entity, self.relation_type)

    @property
    def where(self) -> str:
        return _where(self.place, self.line)


def _where(place: str | None, line: int | None) -> str:
    return place if place is not None else f"line {line}"


def _place(where: str | None, line: int | None) -> str | None:
    """A record's `place`: None where `where` is its line's (every line of a JSONL file)."""
    return None if line is not None else where


@dataclass
class ParsedMemory:
    """The records of a memory file in file order; duplicates of an entity already merged."""

    format: Literal["jsonl", "legacy-json", "memorymesh"] = "jsonl"
    entities: list[EntityRecord] = field(default_factory=list)
    relations: list[RelationRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Each entity's index in `entities` by name: the reader needs it to merge duplicates, and
    # a bulk import to join relations to their endpoints (building it again at a million
    # entities costs half a second of cache misses).
    entity_index: dict[str, int] = field(default_factory=dict)


# --- reading --------------------------------------------------------------------------------

# The edge accepts tabs and line breaks in observations and no other control character; names,
# types and relation types are single-line. Imported text follows the same rules.
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_SINGLE_LINE = re.compile(r"[\x00-\x1f\x7f]")
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LIMITS = InputLimits()


def _text_problem(value: object, what: str, *, multiline: bool) -> str | None:
    """Why `value` cannot be stored as the text `what`, or None if it can."""
    if not isinstance(value, str):
        return f"{what} is {_json_kind(value)}, not a string"
    limit = _LIMITS.max_content_chars if multiline else _LIMITS.max_name_chars
    if len(value) > limit:
        return f"{what} is {len(value):,} characters long; the limit is {limit:,}"
    if LONE_SURROGATE.search(value):
        return f"{what} contains invalid Unicode (a lone surrogate)"
    found = (_CONTROL_MULTILINE if multiline else _CONTROL_SINGLE_LINE).search(value)
    if found:
        return f"{what} contains the control character U+{ord(found.group()):04X}"
    return None


_KINDS = {type(None): "null", bool: "a boolean", int: "a number", float: "a number"}
_KINDS.update({str: "a string", list: "an array"})


def _json_kind(value: object) -> str:
    return _KINDS.get(type(value), "an object")


def _shown(value: object) -> str:
    """A short rendering of a scalar; a container is named by its kind (it may be huge, or
    nested too deep to render)."""
    if isinstance(value, list | dict):
        return _json_kind(value)
    return json.dumps(value, ensure_ascii=False)[:60]


def read_memory_file(path: str | Path) -> ParsedMemory:
    """Parse an official memory file (JSONL or the legacy JSON document), tolerantly."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise MemoryFileError(f"cannot read {path}: {error.strerror or error}") from None
    return parse_memory(data)


def parse_memory(data: bytes) -> ParsedMemory:
    """The records of a memory file. Raises MemoryFileError only for a file that is one JSON
    document refused for its shape (nested too deep, a number too long) with no line of it
    holding a record; any other bad line is a problem in the result."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if plain_record(data.split(b"\n", 1)[0]) is not None:
        # A first line that is a whole record is JSONL: skip trying the file as one document
        # (measuring the nesting of a large file costs seconds, only to find extra data).
        return _parse_lines(data)
    try:
        legacy = _legacy_document(data)
    except JsonShapeError as error:
        # JSONL with a hostile line makes the whole file look like that too; a legacy
        # document has no line that holds a record on its own.
        parsed = _parse_lines(data)
        if parsed.entities or parsed.relations:
            return parsed
        raise MemoryFileError(
            f"cannot import this JSON document: {error}; fix that value and import again"
        ) from None
    if legacy is not None:
        return _parse_legacy(legacy)
    return _parse_lines(data)


_JSON_WHITESPACE = " \t\r\n"
_JSON_WHITESPACE_BYTES = _JSON_WHITESPACE.encode()


def _parse_lines(data: bytes) -> ParsedMemory:
    # One search of the whole file (tens of ms at 300 MB) spares two searches a line.
    unescaped = unescaped_text(data)
    # An official file: decoded whole, no line cut out of it.
    records = whole_file_records(data, unescaped=unescaped)
    if records is not None:
        return _parsed_plain(records)
    lines = data.split(b"\n")
    # A file's last line break leaves a blank line after it, which the loop below skips.
    whole = lines[:-1] if not lines[-1].strip(_JSON_WHITESPACE_BYTES) else lines
    records = plain_records(whole, unescaped=unescaped)
    if records is not None:
        return _parsed_plain(records)
    parsed = ParsedMemory()
    builder = _Builder(parsed)
    for number, raw in enumerate(lines, start=1):
        plain = plain_record(raw, unescaped=unescaped)
        if plain is not None:
            builder.keep_plain(plain, number)
            continue
        where = f"line {number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            builder.problem(where, number, f"not valid UTF-8 (byte {error.start + 1})")
            continue
        if not text.strip(_JSON_WHITESPACE):
            continue  # blank; other Unicode space (U+001C, say) is not JSON and is reported
        try:
            item = decode(text)
        except json.JSONDecodeError as error:
            builder.problem(where, number, f"not valid JSON ({error.msg} at column {error.colno})")
            continue
        except JsonShapeError as error:
            builder.problem(where, number, f"not imported: {error}")
            continue
        builder.add(item, where, number)
    return parsed


_NAME = attrgetter("name")
_ENTITY_TYPE = attrgetter("entityType")
_OBSERVATIONS = attrgetter("observations")
_FROM = attrgetter("from_entity")
_TO = attrgetter("to")
_RELATION_TYPE = attrgetter("relationType")


def _parsed_plain(records: list[EntityLine | RelationLine]) -> ParsedMemory:
    """The file whose line i + 1 is `records[i]`, every line plain, as the builder reads it.

    Without a repeated entity or relation (an official file has none) the builder would
    only append each record in order and index the entities by name, so that is done by
    whole columns through C-level maps: record by record it was a fifth of a million-entity
    import. Otherwise the builder merges and reports the repeats line by line."""
    parsed = ParsedMemory()
    is_entity = [type(record) is EntityLine for record in records]
    entities = list(compress(records, is_entity))
    names = list(map(_NAME, entities))
    index = dict(zip(names, count()))
    if len(index) == len(names):
        is_relation = list(map(not_, is_entity))
        relations = list(compress(records, is_relation))
        froms, tos = list(map(_FROM, relations)), list(map(_TO, relations))
        kinds = list(map(_RELATION_TYPE, relations))
        # Distinct hashes prove distinct keys (equal ones are then checked by the builder),
        # without holding a set of a million key tuples.
        if len(set(map(hash, zip(froms, tos, kinds, strict=True)))) == len(relations):
            parsed.entity_index = index
            parsed.entities = list(
                map(
                    EntityRecord,
                    repeat(None),
                    compress(count(1), is_entity),
                    names,
                    map(_ENTITY_TYPE, entities),
                    map(_OBSERVATIONS, entities),
                )
            )
            parsed.relations = list(
                map(
                    RelationRecord, repeat(None), compress(count(1), is_relation), froms, tos, kinds
                )
            )
            return parsed
    builder = _Builder(parsed)
    for number, record in enumerate(records, start=1):
        builder.keep_plain(record, number)
    return parsed


def _legacy_document(data: bytes) -> dict[str, Any] | None:
    """The whole file as the legacy `{"entities": [...], "relations": [...]}` document; raises
    JsonShapeError when the file is one JSON value refused for its shape."""
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        document = decode(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if (
        isinstance(document, dict)
        and "type" not in document
        and ("entities" in document or "relations" in document)
    ):
        return document
    return None


def _parse_legacy(document: dict[str, Any]) -> ParsedMemory:
    parsed = ParsedMemory(format="legacy-json")
    builder = _Builder(parsed)
    for key, kind in (("entities", "entity"), ("relations", "relation")):
        items = document.get(key, [])
        if not isinstance(items, list):
            builder.problem(key, None, f"is {_json_kind(items)}, not an array; nothing imported")
            continue
        for index, item in enumerate(items):
            where = f"{key}[{index}]"
            if isinstance(item, dict):
                # Legacy items carry no "type": their array says what they are.
                builder.add({**item, "type": kind}, where, None)
            else:
                builder.problem(where, None, f"is {_json_kind(item)}, not an object")
    return parsed


class _Builder:
    """Turns parsed JSON items into records, merging duplicates and noting problems."""

    def __init__(self, parsed: ParsedMemory) -> None:
        self.parsed = parsed
        self.entities = parsed.entity_index
        self.relations: dict[RelationKey, RelationRecord] = {}

    def problem(self, where: str, line: int | None, reason: str) -> None:
        self.parsed.problems.append(Problem(where, reason, line))

    def add(self, item: Any, where: str, line: int | None) -> None:
        if not isinstance(item, dict):
            self.problem(where, line, f"is {_json_kind(item)}, not an object")
            return
        kind = item.get("type")
        if kind == "entity":
            self._entity(item, where, line)
        elif kind == "relation":
            self._relation(item, where, line)
        elif kind == "node":
            self.parsed.format = "memorymesh"
            self._entity(_renamed(item, _MESH_NODE), where, line, kind="node")
        elif kind == "edge":
            self.parsed.format = "memorymesh"
            self._edge(item, where, line)
        elif "type" not in item:
            self.problem(
                where, line, 'has no "type" (expected "entity" or "relation", or "node" or "edge")'
            )
        else:
            shown = _shown(kind)
            self.problem(
                where,
                line,
                f"unknown type {shown}: only entities and relations (nodes and edges) import",
            )

    def _names_ok(
        self, item: dict[str, Any], kind: str, fields: Sequence[str], where: str, line: int | None
    ) -> bool:
        for what in fields:
            reason = (
                _text_problem(item[what], what, multiline=False)
                if what in item
                else f"{kind} has no {what}"
            )
            if reason is not None:
                self.problem(where, line, f"{reason}; the {kind} was not imported")
                return False
        return True

    def _entity(
        self, item: dict[str, Any], where: str, line: int | None, kind: str = "entity"
    ) -> None:
        fields = ("name", "entityType") if kind == "entity" else ("name", "nodeType")
        if not self._names_ok(_renamed(item, _BACK[kind]), kind, fields, where, line):
            return
        name: str = item["name"]
        entity_type: str = item["entityType"]
        observations = self._observations(item, where, line, name, kind)
        self.keep_entity(name, entity_type, observations, where, line)

    def keep_entity(
        self,
        name: str,
        entity_type: str,
        observations: list[str],
        where: str | None,
        line: int | None,
    ) -> None:
        """Add a checked entity, or merge it into the first entry of that name (`where` None:
        the line's)."""
        at = self.entities.get(name)
        if at is None:
            self.entities[name] = len(self.parsed.entities)
            record = EntityRecord(_place(where, line), line, name, entity_type, observations)
            self.parsed.entities.append(record)
            return
        first = self.parsed.entities[at]
        known = set(first.observations)
        fresh = [o for o in unique_in_order(observations) if o not in known]
        first.observations.extend(fresh)
        note = f"another entry for entity {name!r} (first at {first.where}): "
        note += f"{len(fresh)} new observation(s) merged into it"
        if entity_type != first.entity_type:
            note += f"; its type {entity_type!r} ignored for {first.entity_type!r}"
        self.problem(_where(where, line), line, note)

    def _observations(
        self, item: dict[str, Any], where: str, line: int | None, name: str, kind: str
    ) -> list[str]:
        field = "observations" if kind == "entity" else "metadata"
        raw = item.get("observations")
        if not isinstance(raw, list):
            found = f"no {field}" if "observations" not in item else _json_kind(raw)
            self.problem(
                where,
                line,
                f"{kind} {name!r} has {found}, not an array of strings; imported without {field}",
            )
            return []
        kept: list[str] = []
        for index, content in enumerate(raw):
            reason = _text_problem(content, f"{field}[{index}]", multiline=True)
            if reason is None:
                kept.append(content)
            else:
                self.problem(where, line, f"{reason}; that observation was not imported")
        return kept

    def _relation(self, item: dict[str, Any], where: str, line: int | None) -> None:
        if not self._names_ok(item, "relation", ("from", "to", "relationType"), where, line):
            return
        record = RelationRecord(
            _place(where, line), line, item["from"], item["to"], item["relationType"]
        )
        self._keep_relation(record)

    def _edge(self, item: dict[str, Any], where: str, line: int | None) -> None:
        if not self._names_ok(item, "edge", ("from", "to", "edgeType"), where, line):
            return
        weight = item.get("weight")
        if weight is not None and (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0.0 <= weight <= 1.0
        ):
            self.problem(
                where,
                line,
                f"weight is {_shown(weight)}; it must be a number from 0 to 1 (or left out); "
                "the edge was not imported",
            )
            return
        record = RelationRecord(
            _place(where, line),
            line,
            item["from"],
            item["to"],
            item["edgeType"],
            None if weight is None else float(weight),
        )
        self._keep_relation(record)

    def keep_plain(self, record: EntityLine | RelationLine, number: int) -> None:
        """Add a record the fast path read (graphmem.memory_lines): already checked."""
        if isinstance(record, EntityLine):
            self.keep_entity(record.name, record.entityType, record.observations, None, number)
        else:
            self._keep_relation(
                RelationRecord(None, number, record.from_entity, record.to, record.relationType)
            )

    def _keep_relation(self, record: RelationRecord) -> None:
        first = self.relations.get(record.key)
        if first is not None:
            note = f"the same relation as {first.where}; imported once"
            self.problem(record.where, record.line, note)
            return
        self.relations[record.key] = record
        self.parsed.relations.append(record)


# MemoryMesh's node fields under the official entity's names, and back (for messages).
_MESH_NODE = {"nodeType": "entityType", "metadata": "observations"}
_BACK: dict[str, dict[str, str]] = {"entity": {}, "node": {v: k for k, v in _MESH_NODE.items()}}


def _renamed(item: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {names.get(key, key): value for key, value in item.items()}


def unique_in_order(items: Iterable[str]) -> list[str]:
    """The items without repeats, each where it first occurs."""
    return list(dict.fromkeys(items))
