"""Importing a memory file into an empty store: the bulk path (actors.bulk_import).

Into an empty graph, the importer's commands would create every entity of the file with its
observations and every relation whose endpoints the file creates, and reject nothing; the bulk
path appends those same events without deciding or folding them, then writes the read
models' checkpoints directly. What it reports is what the importer would: the same counts and
the same problems, in the same order. A file the bulk path cannot take as it is (MemoryMesh
edges with weights) goes to the importer.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter, itemgetter

from actors.bulk_import import PlainEntityInput, PlainRelationInput, bulk_import
from eventstore.log import EventLog
from graphmem.memory_file import ParsedMemory, Problem, RelationRecord, unique_in_order
from graphmem.migration import IMPORT_CAUSE, ImportReport

__all__ = ["import_into_empty"]

_OBSERVATIONS = itemgetter(2)
_ENTITY = attrgetter("name", "entity_type", "observations")
_SOURCE = attrgetter("from_entity")
_TARGET = attrgetter("to_entity")
_KIND = attrgetter("relation_type")


def import_into_empty(
    event_log: EventLog,
    parsed: ParsedMemory,
    *,
    batch_size: int,
    progress: Callable[[int, int], None],
    checkpoint: bool,
    image: bool = True,
) -> ImportReport | None:
    """Import `parsed` into the empty `event_log` by the bulk path, with its one checkpoint at
    the end (unless `checkpoint` is False); None when the bulk path does not apply (a file with
    edge weights, or a log that is not empty, or another writer appended meanwhile) and the
    importer must do the rest: it adds only what the log lacks."""
    # Only MemoryMesh's edges carry a weight: an official file is not scanned for one.
    if parsed.format == "memorymesh" and any(r.weight is not None for r in parsed.relations):
        return None
    total = len(parsed.entities) + len(parsed.relations)
    report = ImportReport(format=parsed.format, problems=list(parsed.problems))
    # Whole columns through C-level maps: at a million records a loop in Python over the
    # parsed heap cost about 2 s here, mostly cache misses.
    entities: list[PlainEntityInput] = list(map(_ENTITY, parsed.entities))
    relations, named = _joined(parsed, report)
    # Relations to missing entities are counted done from the start: the bar then reaches its
    # end when the last batch is committed, before the checkpoint is written.
    skipped = len(parsed.relations) - len(relations)
    done = bulk_import(
        event_log,
        entities,
        relations,
        batch_size=batch_size,
        cause=IMPORT_CAUSE,
        progress=lambda records: progress(records + skipped, total),
        checkpoint=checkpoint,
        image=image,
        # The reader's names are its dict's keys, its relations its unique keys joined to
        # them: nothing for bulk_import to check (a ParsedMemory made otherwise is checked).
        checked=len(parsed.entity_index) == len(parsed.entities),
        named=named,
    )
    if not done.complete:
        return None
    report.entities_created = done.entities
    report.observations_added = sum(map(len, map(_OBSERVATIONS, entities)))
    report.relations_created = done.relations
    return report


def _joined(
    parsed: ParsedMemory, report: ImportReport
) -> tuple[list[PlainRelationInput], list[RelationRecord]]:
    """The relations whose endpoints the file creates, by their entities' indexes and as
    their records; each other one is reported (in file order) and left out."""
    index = parsed.entity_index
    if len(index) != len(parsed.entities):  # a ParsedMemory made by hand
        index = {record.name: i for i, record in enumerate(parsed.entities)}
    records = parsed.relations
    sources = list(map(index.get, map(_SOURCE, records)))
    targets = list(map(index.get, map(_TARGET, records)))
    if None not in sources and None not in targets:
        joined = list(zip(sources, targets, map(_KIND, records), strict=True))
        return joined, records  # type: ignore[return-value]
    return _joined_reporting(records, index, report)


def _joined_reporting(
    records: list[RelationRecord], index: dict[str, int], report: ImportReport
) -> tuple[list[PlainRelationInput], list[RelationRecord]]:
    find = index.get
    relations: list[PlainRelationInput] = []
    kept: list[RelationRecord] = []
    for record in records:
        source, target = find(record.from_entity), find(record.to_entity)
        if source is not None and target is not None:
            relations.append((source, target, record.relation_type))
            kept.append(record)
            continue
        missing = [n for n in unique_in_order(record.key[:2]) if find(n) is None]
        shown = " and ".join(repr(n) for n in missing)
        report.problems.append(
            Problem(record.where, f"relation to missing entity {shown}; not imported", record.line)
        )
    return relations, kept
