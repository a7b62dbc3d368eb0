"""The bulk import into an empty store: plain creations appended a batch per transaction, and
the read models' checkpoints written straight from them, with no fold of the events.

A graph writer decides every command against its read model and folds every event it appends
(about 3 µs an event, most of an import). Into an empty log, the outcome of a file's creations
is known without either: each entity is created with its observations, each relation between
two of them is created, and the fold of that log is built directly
(projections.graph.plain_snapshot). Crash safety is the log's: every batch is one transaction,
all or nothing, and a later import of the same file adds only what the log lacks. The one
checkpoint is written at the end, at the last position appended; stopped short of it (a
crash), the next start folds the log like any other.

Whoever calls this is the only writer of the store (`graphmem import` starts no graph writer
while it runs). Another process appending meanwhile would make the log something else than
these creations: each transaction checks that the log ends where the last one left it, and
stops the bulk import (returning how far it came) when it does not.
"""

from __future__ import annotations

import contextlib
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from operator import itemgetter
from typing import Protocol

import structlog

from actors.graph_images import ImageInBackground, write_graph_image
from eventstore.events import Cause
from eventstore.log import Checkpoint, EventLog, LogTransaction
from eventstore.plain_events import PlainAppend, PlainEntity, PlainObservation, PlainRelation
from projections.graph import EntityView, GraphProjection, PlainGraph, RelationKey, plain_snapshot
from projections.schemas import SchemaProjection

__all__ = ["BulkImported", "NamedRelation", "PlainEntityInput", "bulk_import"]

log = structlog.get_logger(__name__)

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)

PlainEntityInput = tuple[str, str, Sequence[str]]
"""(name, entity type, observations in order, duplicates included)."""

PlainRelationInput = tuple[int, int, str]
"""(from, to, relation type), the endpoints by their index among the entities imported."""


class NamedRelation(Protocol):
    """A relation by its endpoints' names (graphmem.memory_file's records are ones)."""

    @property
    def from_entity(self) -> str: ...

    @property
    def to_entity(self) -> str: ...

    @property
    def relation_type(self) -> str: ...


@dataclass(frozen=True)
class BulkImported:
    """How far a bulk import came: the first `entities` entities and `relations` relations
    were appended (all of them when `complete`), and whether the checkpoint was saved."""

    entities: int
    relations: int
    complete: bool
    checkpointed: bool


class _Moved(Exception):
    """The log's end is not where the bulk import left it: another writer appended."""


class _Stamps:
    """The clock reading and origin_seq of every creation appended, as columns."""

    def __init__(self) -> None:
        self.hlc: array[int] = array("q")
        self.seq: array[int] = array("q")
        self.origin = ""
        self.position = 0

    def add(self, placed: PlainAppend, offsets: Sequence[int], events: int) -> None:
        self.hlc.extend(repeat(placed.hlc, len(offsets)))
        self.seq.extend(map(placed.first_seq.__add__, offsets))
        self.origin = placed.origin
        self.position = placed.first_position + events - 1


def bulk_import(
    event_log: EventLog,
    entities: Sequence[PlainEntityInput],
    relations: Sequence[PlainRelationInput],
    *,
    batch_size: int,
    cause: Cause | None = None,
    progress: Callable[[int], None] | None = None,
    checkpoint: bool = True,
    image: bool = True,
    checked: bool = False,
    named: Sequence[NamedRelation] | None = None,
) -> BulkImported:
    """Append the creations of `entities` (each name once) then `relations` (each key once,
    its endpoints indexes into `entities`) to an empty log, `batch_size` records a
    transaction, then (with `checkpoint`) save the read models' checkpoints at the last
    position.

    `progress` is told the records appended so far after every transaction. ValueError for
    a log that is not empty or inputs that are not plain creations (unless `checked`: the
    caller vouches for them, as graphmem.plain_import does, joining them from the reader's
    own dicts; at a million records the checks cost most of a second); a StorageError from
    the log ends it as it ends any write (what was committed stays).

    `named`: the same relations by name, in the same order, their events' strings taken from
    them. The caller's records hold their strings next to each other, in file order, where
    `names[index]` is a random read of a million entities' heap: a second of cache misses
    at a million relations."""
    names = [entity[0] for entity in entities]
    if not checked:
        _check_plain(names, relations)
    tell = progress or (lambda done: None)
    # The graph's read image is encoded beside the appends, by a child of this process (its
    # position, a placeholder there, stamped in once the log's end is known).
    reads = _PlainReads(entities, relations)
    background = (
        ImageInBackground.start(event_log, reads, len(names))
        if image and checkpoint and entities
        else None
    )
    with background if background is not None else contextlib.nullcontext():
        writer = _Writer(event_log, cause)
        entity_stamps, relation_stamps = _Stamps(), _Stamps()
        size = max(1, batch_size)
        done = 0
        try:
            for start in range(0, len(entities), size):
                batch = entities[start : start + size]
                events, offsets = _entity_events(batch)
                entity_stamps.add(writer.commit(events), offsets, len(events))
                done += len(batch)
                tell(done)
            for start in range(0, len(relations), size):
                chunk = relations[start : start + size]
                placed = writer.commit(
                    [PlainRelation(names[src], names[dst], kind) for src, dst, kind in chunk]
                    if named is None
                    else [
                        PlainRelation(r.from_entity, r.to_entity, r.relation_type)
                        for r in named[start : start + size]
                    ]
                )
                relation_stamps.add(placed, range(len(chunk)), len(chunk))
                done += len(chunk)
                tell(done)
        except _Moved:
            log.warning("bulk_import_interleaved", appended=done)
            return BulkImported(
                len(entity_stamps.seq), len(relation_stamps.seq), complete=False, checkpointed=False
            )
        saved = checkpoint and bool(entities)
        if saved:
            _save_checkpoints(
                event_log,
                PlainGraph(
                    position=writer.end,
                    origin=entity_stamps.origin,
                    names=names,
                    types=[entity[1] for entity in entities],
                    observations=[entity[2] for entity in entities],
                    entity_hlc=entity_stamps.hlc,
                    entity_seq=entity_stamps.seq,
                    relations=relations,
                    relation_hlc=relation_stamps.hlc,
                    relation_seq=relation_stamps.seq,
                ),
            )
            reads.position = writer.end
            if background is not None:
                background.finish(writer.end)
            elif image:
                write_graph_image(event_log, reads, len(names))
    return BulkImported(len(entities), len(relations), complete=True, checkpointed=saved)


def _check_plain(names: list[str], relations: Sequence[PlainRelationInput]) -> None:
    if len(set(names)) != len(names):
        raise ValueError("a bulk import creates each entity once")
    ends = [*map(_FIRST, relations), *map(_SECOND, relations)]
    if ends and not 0 <= min(ends) <= max(ends) < len(names):
        raise ValueError("a bulk import's relations join its entities, by their index")
    if len(set(relations)) != len(relations):
        raise ValueError("a bulk import creates each relation once")


def _entity_events(
    batch: Sequence[PlainEntityInput],
) -> tuple[list[PlainEntity | PlainObservation], list[int]]:
    """A batch's creations, each followed by its observations, and each creation's offset
    among them."""
    events: list[PlainEntity | PlainObservation] = []
    add, extend = events.append, events.extend
    for name, entity_type, observations in batch:
        add(PlainEntity(name, entity_type))
        extend(map(PlainObservation, repeat(name), observations))
    sizes = [1 + len(entity[2]) for entity in batch]
    return events, list(accumulate(chain((0,), sizes[:-1])))


class _Writer:
    """Appends a batch per transaction, each where the previous one ended."""

    def __init__(self, event_log: EventLog, cause: Cause | None) -> None:
        self._log = event_log
        self._cause = cause
        self.end = 0  # the log's last position, as the bulk import left it

    def commit(
        self, events: Sequence[PlainEntity | PlainObservation | PlainRelation]
    ) -> PlainAppend:
        def append(txn: LogTransaction) -> PlainAppend:
            if txn.last_position() != self.end:
                raise _Moved()
            return txn.append_plain(events, self._cause)

        placed = self._log.transact(append)
        self.end = placed.first_position + len(events) - 1
        return placed


class _PlainReads:
    """A log of plain creations as an image reads a graph (projections.graph_image): entity
    i in listing order (their stamps increase), relation j likewise, each name and key once,
    as the fold of that log has them (tests/property/test_plain_snapshot.py). `position` is
    the log's end once appended (0 until then)."""

    def __init__(
        self, entities: Sequence[PlainEntityInput], relations: Sequence[PlainRelationInput]
    ) -> None:
        self.position = 0
        self._entities, self._relations = entities, relations

    def entities(self) -> Iterator[EntityView]:
        return (EntityView(name, kind, list(obs)) for name, kind, obs in self._entities)

    def relation_keys(self) -> list[RelationKey]:
        entities = self._entities
        return [(entities[f][0], entities[t][0], kind) for f, t, kind in self._relations]

    def relation_rows(self) -> tuple[array[int], array[int], list[str]]:
        """The relations as the image reads them (projections.graph_image.RelationRows): the
        endpoints' indexes are the entities' listing indexes already."""
        relations = self._relations
        return (
            array("I", map(itemgetter(0), relations)),
            array("I", map(itemgetter(1), relations)),
            list(map(itemgetter(2), relations)),
        )


def _save_checkpoints(event_log: EventLog, graph: PlainGraph) -> None:
    """The graph's checkpoint built from the creations, and the schemas' (which no creation
    changes), at the last position: a start restores them instead of folding the log."""
    started = time.perf_counter()
    payload = plain_snapshot(graph)
    schemas = SchemaProjection()
    schemas.position = graph.position
    written = event_log.checkpoints.save(
        Checkpoint(GraphProjection.name, GraphProjection.version, graph.position, payload),
        Checkpoint(
            SchemaProjection.name, SchemaProjection.version, graph.position, schemas.to_snapshot()
        ),
    )
    log.info(
        "checkpoint_saved",
        position=graph.position,
        checkpoints=2,
        bytes=written,
        seconds=round(time.perf_counter() - started, 3),
        built_from="bulk_import",
    )
