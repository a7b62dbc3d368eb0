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
from operator import itemgetter

from actors.bulk_import import PlainEntityInput, PlainRelationInput, bulk_import
from eventstore.log import EventLog
from graphmem.memory_file import ParsedMemory, Problem, unique_in_order
from graphmem.migration import IMPORT_CAUSE, ImportReport

__all__ = ["import_into_empty"]

_OBSERVATIONS = itemgetter(2)


def import_into_empty(
    event_log: EventLog,
    parsed: ParsedMemory,
    *,
    batch_size: int,
    progress: Callable[[int, int], None],
    checkpoint: bool,
) -> ImportReport | None:
    """Import `parsed` into the empty `event_log` by the bulk path, with its one checkpoint at
    the end (unless `checkpoint` is False); None when the bulk path does not apply (a file with
    edge weights, or a log that is not empty, or another writer appended meanwhile) and the
    importer must do the rest: it adds only what the log lacks."""
    if any(record.weight is not None for record in parsed.relations):
        return None
    total = len(parsed.entities) + len(parsed.relations)
    report = ImportReport(format=parsed.format, problems=list(parsed.problems))
    entities: list[PlainEntityInput] = [
        (record.name, record.entity_type, record.observations) for record in parsed.entities
    ]
    index = {record.name: i for i, record in enumerate(parsed.entities)}.get
    relations: list[PlainRelationInput] = []
    for record in parsed.relations:
        source, target = index(record.from_entity), index(record.to_entity)
        if source is not None and target is not None:
            relations.append((source, target, record.relation_type))
            continue
        missing = [n for n in unique_in_order(record.key[:2]) if index(n) is None]
        shown = " and ".join(repr(n) for n in missing)
        report.problems.append(
            Problem(record.where, f"relation to missing entity {shown}; not imported", record.line)
        )
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
    )
    if not done.complete:
        return None
    report.entities_created = done.entities
    report.observations_added = sum(map(len, map(_OBSERVATIONS, entities)))
    report.relations_created = done.relations
    return report
