"""Migration: read the official memory server's file into the graph, and write the graph back out.

The official file (reference contract §A2) is JSONL: one compact object per line, entities
(`type, name, entityType, observations`) then relations (`type, from, to, relationType`). The
oldest releases wrote one pretty-printed document `{"entities": [...], "relations": [...]}`
(`memory.json`); both are read. Reading is tolerant where the official loader is not: a bad
line is reported with its line number and the rest still imports. Importing is idempotent: it
only adds what the graph lacks, so running it twice changes nothing the second time.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from actors.commands import (
    AddObservations,
    Command,
    CommandResult,
    CreateEntities,
    CreateRelations,
    EntitiesCreated,
    EntityInput,
    ObservationInput,
    ObservationsAdded,
    RelationInput,
    RelationsCreated,
)
from actors.errors import CommandRejectedError
from actors.gateway import GraphGateway
from eventstore.events import Cause
from graphmem.tools.base import InputLimits
from graphmem.tools.graph_values import entity_value, relation_value
from projections.graph import GraphProjection

T = TypeVar("T")

IMPORT_CAUSE = Cause(tool="import", client="graphmem-cli")

Progress = Callable[[int, int], None]
"""Called with (records done, records in total) as an import advances."""

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


@dataclass
class EntityRecord:
    where: str
    line: int | None
    name: str
    entity_type: str
    observations: list[str]


@dataclass(frozen=True)
class RelationRecord:
    where: str
    line: int | None
    from_entity: str
    to_entity: str
    relation_type: str

    @property
    def key(self) -> RelationKey:
        return (self.from_entity, self.to_entity, self.relation_type)


@dataclass
class ParsedMemory:
    """The records of a memory file in file order; duplicates of an entity already merged."""

    format: Literal["jsonl", "legacy-json"] = "jsonl"
    entities: list[EntityRecord] = field(default_factory=list)
    relations: list[RelationRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# --- reading --------------------------------------------------------------------------------

# The edge accepts tabs and line breaks in observations and no other control character; names,
# types and relation types are single-line. Imported text follows the same rules.
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_SINGLE_LINE = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LIMITS = InputLimits()


def _text_problem(value: object, what: str, *, multiline: bool) -> str | None:
    """Why `value` cannot be stored as the text `what`, or None if it can."""
    if not isinstance(value, str):
        return f"{what} is {_json_kind(value)}, not a string"
    limit = _LIMITS.max_content_chars if multiline else _LIMITS.max_name_chars
    if len(value) > limit:
        return f"{what} is {len(value):,} characters long; the limit is {limit:,}"
    if _SURROGATE.search(value):
        return f"{what} contains invalid Unicode (a lone surrogate)"
    found = (_CONTROL_MULTILINE if multiline else _CONTROL_SINGLE_LINE).search(value)
    if found:
        return f"{what} contains the control character U+{ord(found.group()):04X}"
    return None


_KINDS = {type(None): "null", bool: "a boolean", int: "a number", float: "a number"}
_KINDS.update({str: "a string", list: "an array"})


def _json_kind(value: object) -> str:
    return _KINDS.get(type(value), "an object")


def read_memory_file(path: str | Path) -> ParsedMemory:
    """Parse an official memory file (JSONL or the legacy JSON document), tolerantly."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise MemoryFileError(f"cannot read {path}: {error.strerror or error}") from None
    return parse_memory(data)


def parse_memory(data: bytes) -> ParsedMemory:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    legacy = _legacy_document(data)
    if legacy is not None:
        return _parse_legacy(legacy)
    parsed = ParsedMemory()
    builder = _Builder(parsed)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"line {number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            builder.problem(where, number, f"not valid UTF-8 (byte {error.start + 1})")
            continue
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except json.JSONDecodeError as error:
            builder.problem(where, number, f"not valid JSON ({error.msg} at column {error.colno})")
            continue
        builder.add(item, where, number)
    return parsed


def _legacy_document(data: bytes) -> dict[str, Any] | None:
    """The whole file as the legacy `{"entities": [...], "relations": [...]}` document."""
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        document = json.loads(data.decode("utf-8"))
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
        self.entities: dict[str, EntityRecord] = {}
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
        elif "type" not in item:
            self.problem(where, line, 'has no "type" (expected "entity" or "relation")')
        else:
            shown = json.dumps(kind, ensure_ascii=False)[:60]
            self.problem(where, line, f"unknown type {shown}: only entities and relations import")

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

    def _entity(self, item: dict[str, Any], where: str, line: int | None) -> None:
        if not self._names_ok(item, "entity", ("name", "entityType"), where, line):
            return
        name: str = item["name"]
        entity_type: str = item["entityType"]
        observations = self._observations(item, where, line, name)
        first = self.entities.get(name)
        if first is None:
            record = EntityRecord(where, line, name, entity_type, observations)
            self.entities[name] = record
            self.parsed.entities.append(record)
            return
        known = set(first.observations)
        fresh = [o for o in _unique(observations) if o not in known]
        first.observations.extend(fresh)
        note = f"another entry for entity {name!r} (first at {first.where}): "
        note += f"{len(fresh)} new observation(s) merged into it"
        if entity_type != first.entity_type:
            note += f"; its type {entity_type!r} ignored for {first.entity_type!r}"
        self.problem(where, line, note)

    def _observations(
        self, item: dict[str, Any], where: str, line: int | None, name: str
    ) -> list[str]:
        raw = item.get("observations")
        if not isinstance(raw, list):
            found = "no observations" if "observations" not in item else _json_kind(raw)
            self.problem(
                where,
                line,
                f"entity {name!r} has {found}, not an array of strings; "
                "imported without observations",
            )
            return []
        kept: list[str] = []
        for index, content in enumerate(raw):
            reason = _text_problem(content, f"observations[{index}]", multiline=True)
            if reason is None:
                kept.append(content)
            else:
                self.problem(where, line, f"{reason}; that observation was not imported")
        return kept

    def _relation(self, item: dict[str, Any], where: str, line: int | None) -> None:
        if not self._names_ok(item, "relation", ("from", "to", "relationType"), where, line):
            return
        record = RelationRecord(where, line, item["from"], item["to"], item["relationType"])
        first = self.relations.get(record.key)
        if first is not None:
            self.problem(where, line, f"the same relation as {first.where}; imported once")
            return
        self.relations[record.key] = record
        self.parsed.relations.append(record)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --- importing ------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What an import did. `present` counts are things the graph already had (not re-added)."""

    format: str = "jsonl"
    entities_created: int = 0
    entities_present: int = 0
    observations_added: int = 0
    observations_present: int = 0
    relations_created: int = 0
    relations_present: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return self.entities_present + self.observations_present + self.relations_present

    @property
    def changed(self) -> bool:
        return bool(self.entities_created or self.observations_added or self.relations_created)


@dataclass(frozen=True)
class _Present:
    """What the graph already holds of a file's records."""

    entities: dict[str, tuple[str, set[str]]]
    relations: set[RelationKey]


def _present(graph: GraphProjection, parsed: ParsedMemory) -> _Present:
    entities: dict[str, tuple[str, set[str]]] = {}
    for record in parsed.entities:
        view = graph.entity(record.name)
        if view is not None:
            entities[record.name] = (view.entity_type, set(view.observations))
    relations = {r.key for r in parsed.relations if graph.has_relation(*r.key)}
    return _Present(entities, relations)


class _Importer:
    def __init__(
        self, gateway: GraphGateway, parsed: ParsedMemory, batch_size: int, progress: Progress
    ) -> None:
        self.gateway = gateway
        self.parsed = parsed
        self.batch_size = max(1, batch_size)
        self.report_progress = progress
        self.total = len(parsed.entities) + len(parsed.relations)
        self.done = 0
        self.report = ImportReport(format=parsed.format, problems=list(parsed.problems))

    def advance(self, count: int) -> None:
        if count:
            self.done = min(self.total, self.done + count)
            self.report_progress(self.done, self.total)

    def run(self) -> ImportReport:
        self.report_progress(0, self.total)
        present = self.gateway.query_blocking(lambda graph: _present(graph, self.parsed))
        additions = self._plan_additions(present)
        new = [e for e in self.parsed.entities if e.name not in present.entities]
        for created in _batches(new, self.batch_size):
            additions.extend(self._create_entities(created))
            self.advance(len(created))
        for added in _batches(additions, self.batch_size):
            self._add_observations(added)
            self.advance(sum(1 for record, _ in added if record.name in present.entities))
        self._import_relations(present)
        return self.report

    def _plan_additions(self, present: _Present) -> list[tuple[EntityRecord, list[str]]]:
        """Observations that entities already in the graph lack; advances those that lack none."""
        additions: list[tuple[EntityRecord, list[str]]] = []
        for record in self.parsed.entities:
            found = present.entities.get(record.name)
            if found is None:
                continue
            entity_type, observations = found
            self.report.entities_present += 1
            if entity_type != record.entity_type:
                self._problem(
                    record,
                    f"entity {record.name!r} already exists with type {entity_type!r}; "
                    f"kept it (the file says {record.entity_type!r})",
                )
            unique = _unique(record.observations)
            lacking = [o for o in unique if o not in observations]
            self.report.observations_present += len(unique) - len(lacking)
            if lacking:
                additions.append((record, lacking))
            else:
                self.advance(1)
        return additions

    def _create_entities(self, batch: list[EntityRecord]) -> list[tuple[EntityRecord, list[str]]]:
        """Create a batch; returns the observations of entities someone else created meanwhile."""
        command = CreateEntities(
            entities=[EntityInput(e.name, e.entity_type, list(e.observations)) for e in batch]
        )
        result = self._execute(command, batch, "entities")
        if result is None:
            return []
        assert isinstance(result, EntitiesCreated)
        self.report.entities_created += len(result.created)
        self.report.observations_added += sum(len(e.observations) for e in result.created)
        skipped = set(result.skipped)
        self.report.entities_present += len(skipped)
        return [(e, _unique(e.observations)) for e in batch if e.name in skipped and e.observations]

    def _add_observations(self, batch: list[tuple[EntityRecord, list[str]]]) -> None:
        command = AddObservations(
            observations=[ObservationInput(record.name, contents) for record, contents in batch]
        )
        result = self._execute(command, [record for record, _ in batch], "observations of")
        if result is None:
            return
        assert isinstance(result, ObservationsAdded)
        added = sum(len(r.added_observations) for r in result.results)
        self.report.observations_added += added
        self.report.observations_present += sum(len(c) for _, c in batch) - added

    def _import_relations(self, present: _Present) -> None:
        # Asked after the entities were created: an entity whose batch was rejected is missing.
        exists = self.gateway.query_blocking(
            lambda graph: {
                n for r in self.parsed.relations for n in r.key[:2] if graph.has_entity(n)
            }
        )
        wanted: list[RelationRecord] = []
        for record in self.parsed.relations:
            missing = [n for n in _unique(record.key[:2]) if n not in exists]
            if record.key in present.relations:
                self.report.relations_present += 1
            elif missing:
                shown = " and ".join(repr(n) for n in missing)
                self._problem(record, f"relation to missing entity {shown}; not imported")
            else:
                wanted.append(record)
                continue
            self.advance(1)
        for batch in _batches(wanted, self.batch_size):
            command = CreateRelations(relations=[RelationInput(*r.key) for r in batch])
            result = self._execute(command, batch, "relations")
            if result is not None:
                assert isinstance(result, RelationsCreated)
                self.report.relations_created += len(result.created)
                self.report.relations_present += len(result.skipped)
            self.advance(len(batch))

    def _execute(
        self, command: Command, records: Sequence[EntityRecord | RelationRecord], what: str
    ) -> CommandResult | None:
        """Run one batch; a rejected batch is reported as a problem and the import goes on."""
        try:
            return self.gateway.execute_blocking(command, IMPORT_CAUSE)
        except CommandRejectedError as rejection:
            first, last = records[0], records[-1]
            span = first.where if first is last else f"{first.where} to {last.where}"
            self.report.problems.append(
                Problem(span, f"{what} {len(records)} record(s) rejected: {rejection}", first.line)
            )
            return None

    def _problem(self, record: EntityRecord | RelationRecord, reason: str) -> None:
        self.report.problems.append(Problem(record.where, reason, record.line))


def _batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _no_progress(done: int, total: int) -> None:
    pass


def import_memory(
    gateway: GraphGateway,
    parsed: ParsedMemory,
    *,
    batch_size: int = 1000,
    progress: Progress | None = None,
) -> ImportReport:
    """Add to the graph what `parsed` holds and the graph lacks; idempotent.

    Entities are created in file order (so the graph lists them as the file did), entities
    the graph already has get only the observations they lack, and relations are created
    when both endpoints exist and the graph lacks them. Relations to missing entities, and
    batches the graph rejects, are reported as problems rather than failing the import.
    """
    return _Importer(gateway, parsed, batch_size, progress or _no_progress).run()


# --- exporting ------------------------------------------------------------------------------


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def export_jsonl(graph: GraphProjection) -> bytes:
    """The graph as the official server's `saveGraph` writes it, byte for byte.

    Run it inside one `query_blocking` so the export is one consistent snapshot. Like the
    official server (2026.8.31 `lines.join("\\n")`), there is no newline after the last line
    and an empty graph is an empty file.
    """
    # The value helpers build keys in the official order: name, entityType, observations /
    # from, to, relationType.
    lines = [_line({"type": "entity", **entity_value(e)}) for e in graph.entities()]
    lines.extend(_line({"type": "relation", **relation_value(r)}) for r in graph.relations())
    text = "\n".join(lines)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # JSON.stringify writes a lone surrogate as an escape; UTF-8 cannot carry it raw.
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace `path` with `data` all at once: a temp file beside it, fsync, then rename.

    A file that already exists keeps its permission bits (the official server loses them).
    """
    target = Path(path)
    temp = target.with_name(f"{target.name}.{secrets.token_hex(16)}.tmp")
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
