"""Migration: read the official memory server's file into the graph, and write the graph back out.

The official file (as the official server writes it) is JSONL: one compact object per line, entities
(`type, name, entityType, observations`) then relations (`type, from, to, relationType`). The
oldest releases wrote one pretty-printed document `{"entities": [...], "relations": [...]}`
(`memory.json`); both are read (graphmem.memory_file), and so is MemoryMesh's JSONL of
`node` and `edge` records, which is also written back (export_memorymesh). Reading is
tolerant where the official loader is not: a bad line is reported with its line number and the
rest still imports.
Importing is idempotent: it only adds what the graph lacks, so running it twice changes nothing
the second time.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from actors.commands import (
    AddEdges,
    AddObservations,
    CommandOf,
    CreateEntities,
    CreateRelations,
    EdgeInput,
    EntityInput,
    ObservationInput,
    RelationInput,
)
from actors.errors import CommandRejectedError
from actors.gateway import GraphGateway
from eventstore.events import Cause
from graphmem.memory_file import (
    LONE_SURROGATE,
    EntityRecord,
    MemoryFileError,
    ParsedMemory,
    Problem,
    RelationKey,
    RelationRecord,
    parse_memory,
    read_memory_file,
    unique_in_order,
)
from graphmem.tools.graph_values import entity_value, relation_value
from graphmem.tools.mesh_values import edge_value, node_value
from projections.graph import GraphProjection

T = TypeVar("T")
R = TypeVar("R")

IMPORT_CAUSE = Cause(tool="import", client="graphmem-cli")

Progress = Callable[[int, int], None]
"""Called with (records done, records in total) as an import advances."""

__all__ = [
    "IMPORT_CAUSE",
    "ImportReport",
    "MemoryFileError",
    "ParsedMemory",
    "Problem",
    "Progress",
    "export_jsonl",
    "export_memorymesh",
    "import_memory",
    "parse_memory",
    "read_memory_file",
    "write_atomic",
]


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
        # Names the graph is known to hold: found present, created, or skipped as existing.
        self.existing: set[str] = set()

    def advance(self, count: int) -> None:
        if count:
            self.done = min(self.total, self.done + count)
            self.report_progress(self.done, self.total)

    def run(self) -> ImportReport:
        self.report_progress(0, self.total)
        present = self.gateway.query_blocking(lambda graph: _present(graph, self.parsed))
        self.existing.update(present.entities)
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
            unique = unique_in_order(record.observations)
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
            # The records' lists as they are: nothing changes them once the file is read.
            entities=[EntityInput(e.name, e.entity_type, e.observations) for e in batch]
        )
        result = self._execute(command, batch, "entities")
        if result is None:
            return []
        self.report.entities_created += len(result.created)
        self.existing.update(e.name for e in result.created)
        self.existing.update(result.skipped)
        self.report.observations_added += sum(len(e.observations) for e in result.created)
        skipped = set(result.skipped)
        self.report.entities_present += len(skipped)
        return [
            (e, unique_in_order(e.observations))
            for e in batch
            if e.name in skipped and e.observations
        ]

    def _add_observations(self, batch: list[tuple[EntityRecord, list[str]]]) -> None:
        command = AddObservations(
            observations=[ObservationInput(record.name, contents) for record, contents in batch]
        )
        result = self._execute(command, [record for record, _ in batch], "observations of")
        if result is None:
            return
        added = sum(len(r.added_observations) for r in result.results)
        self.report.observations_added += added
        self.report.observations_present += sum(len(c) for _, c in batch) - added

    def _import_relations(self, present: _Present) -> None:
        # Asked after the entities were created: an entity whose batch was rejected is missing.
        # Only names the import has not seen exist are looked up (a file's relations mostly
        # join its own entities): one set lookup each instead of a graph lookup each.
        known = self.existing
        unknown = {n for r in self.parsed.relations for n in r.key[:2] if n not in known}
        exists = known | self.gateway.query_blocking(
            lambda graph: {n for n in unknown if graph.has_entity(n)}
        )
        wanted: list[RelationRecord] = []
        for record in self.parsed.relations:
            missing = [n for n in unique_in_order(record.key[:2]) if n not in exists]
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
            if all(r.weight is None for r in batch):
                command = CreateRelations(relations=[RelationInput(*r.key) for r in batch])
                result = self._execute(command, batch, "relations")
                if result is not None:
                    self.report.relations_created += len(result.created)
                    self.report.relations_present += len(result.skipped)
            else:
                # MemoryMesh's edges keep their weight (1 where the file gives none).
                edges = AddEdges(
                    [EdgeInput(*r.key, 1.0 if r.weight is None else r.weight) for r in batch]
                )
                added = self._execute(edges, batch, "edges")
                if added is not None:
                    self.report.relations_created += len(added.edges)
            self.advance(len(batch))

    def _execute(
        self, command: CommandOf[R], records: Sequence[EntityRecord | RelationRecord], what: str
    ) -> R | None:
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
    return _utf8("\n".join(lines))


def export_memorymesh(graph: GraphProjection) -> bytes:
    """The graph as MemoryMesh's memory file: a `node` line per entity (`name, nodeType,
    metadata`), then an `edge` line per relation (`from, to, edgeType, weight`), each line
    ending in a newline. One consistent snapshot when run inside one `query_blocking`."""
    lines = [_line({"type": "node", **node_value(e)}) for e in graph.entities()]
    lines.extend(_line({"type": "edge", **edge_value(r)}) for r in graph.relations())
    return _utf8("".join(f"{line}\n" for line in lines))


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # JSON.stringify writes a lone surrogate as an escape; UTF-8 cannot carry it raw.
        return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


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
