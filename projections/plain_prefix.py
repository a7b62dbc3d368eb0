"""A rebuild's direct path: the checkpointed models of a log's plain prefix, without a fold.

Most of a real log is plain: entities created once, observations of them, relations between
them, one node's writes in stamp order. `PlainPrefix` reads stored records from the log's
start while each event is plain, and builds every checkpointed model's snapshot (graph,
schemas, conflicts) from columns (projections.graph.prefix_snapshot) instead of folding
records one by one: about a third of the fold's time. An event is plain when its stamp is
newer than every stamp before it (so nothing is concurrent or out of order) and it is

- an EntityCreated of a name not seen before (graph attributes allowed);
- an ObservationAdded (of an entity never created, it is kept hidden, as the fold keeps it);
- a RelationCreated (a key created again moves to the end of the listing, as in the fold;
  one with an endpoint never created is kept hidden);
- an event the graph keeps no element of: a schema event (folded into the schemas model as
  it comes), a marker (merge, split, rename, audit) or a decay run.

At the first event that is not (a deletion, an update, a re-creation, an unknown endpoint, an
older stamp, a record that does not decode), the prefix ends before it: the caller restores
the snapshots and folds the rest as always. tests/property/test_plain_prefix.py proves the
snapshots equal, byte for byte, to the fold's of the same prefix, for any log.

Records are read by projections._prefix_scan (C, from the raw msgpack, straight into the
columns) while it takes them for certain; it hands each record it does not take to the Python
path here, which decides. The Python path is also the whole of it where the C module is not
built, or GRAPHMEM_PURE_PYTHON=1 is set when this is imported: it decodes records by a decoder
of only the fields the plain events need (an event with any other field, or of another kind,
fails it and is decoded whole), a chunk at a time. Both give the same columns, property-tested.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Any, cast

import msgspec

from eventstore.events import (
    ENVELOPE_WIRE_NAMES,
    AuditRecorded,
    Cause,
    DecayApplied,
    EntitiesMerged,
    EntityCreated,
    EntityRenamed,
    EntitySplit,
    Envelope,
    ObservationAdded,
    RelationCreated,
    SchemaRegistered,
    SchemaRetired,
)
from eventstore.records import decode_record
from projections.accelerators import accelerator
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection, PrefixGraph, prefix_snapshot
from projections.prefix_conflicts import conflicts_snapshot
from projections.schemas import SchemaProjection

__all__ = ["COMPILED", "PLAIN_DECODER", "PlainPrefix", "PrefixSnapshots"]

_Scan = Callable[..., tuple[int, int, tuple[int, str, int], tuple[bytes, ...]]]
_scan_module = accelerator("_prefix_scan")  # read once: the suite and bench compare both
_compiled_scan: _Scan | None = None if _scan_module is None else _scan_module.scan
COMPILED = _compiled_scan is not None
"""Whether feed runs the C kernel (projections._prefix_scan) by default."""


class _Entity(msgspec.Struct, tag_field="type", tag="EntityCreated", gc=False,
              forbid_unknown_fields=True):  # fmt: skip
    name: str
    entity_type: str


class _Observation(msgspec.Struct, tag_field="type", tag="ObservationAdded", gc=False,
                   forbid_unknown_fields=True):  # fmt: skip
    entity: str
    content: str


class _Relation(msgspec.Struct, tag_field="type", tag="RelationCreated", gc=False,
                forbid_unknown_fields=True):  # fmt: skip
    from_entity: str
    to_entity: str
    relation_type: str


class _Record(msgspec.Struct, gc=False, rename=ENVELOPE_WIRE_NAMES):
    """A stored envelope of a plain creation: an Envelope's fields, its event one of the
    three plain kinds with no other field."""

    position: int
    origin: str
    origin_seq: int
    hlc: int
    tx: int
    event: _Entity | _Observation | _Relation
    # Decoded (not skipped) so that a record the full decoder refuses is refused here too.
    cause: Cause | None = None


_decode = msgspec.msgpack.Decoder(_Record).decode
PLAIN_DECODER = _decode
"""The plain decoder (a stored record to its plain event's fields, or DecodeError): for the
benchmark's per-phase figures."""
_UNDECODABLE = (msgspec.DecodeError, RecursionError)
# What the graph keeps no element of (the fold only advances its position and notes the
# origin); schema events are folded into the schemas model.
_NEUTRAL = (SchemaRegistered, SchemaRetired, EntitiesMerged, EntitySplit, EntityRenamed,
            AuditRecorded)  # fmt: skip
_OTHER_PLAIN = (RelationCreated, ObservationAdded, DecayApplied, *_NEUTRAL)
_POSITION = attrgetter("position")
_ORIGIN = attrgetter("origin")
_HLC = attrgetter("hlc")
_SEQ = attrgetter("origin_seq")
_EVENT = attrgetter("event")
_NAME = attrgetter("name")
_ENTITY_TYPE = attrgetter("entity_type")
_ENTITY = attrgetter("entity")
_CONTENT = attrgetter("content")
_FROM = attrgetter("from_entity")
_TO = attrgetter("to_entity")
_RELATION_TYPE = attrgetter("relation_type")
_CODES: dict[type, int] = {_Entity: 0, _Observation: 1, _Relation: 2}  # as PrefixGraph.kinds


@dataclass(frozen=True)
class PrefixSnapshots:
    """The plain prefix's end (its last position; 0: no event was plain) and, by projection
    name, each model's snapshot there."""

    position: int
    snapshots: dict[str, bytes]


class PlainPrefix:
    """Reads a log's records from position 1 (`feed`, chunk by chunk) while they are plain,
    then writes every model's snapshot of what it read (`snapshots`)."""

    # The projections whose snapshots it writes (any other is folded from the start).
    BUILDS = frozenset((GraphProjection.name, SchemaProjection.name, ConflictsProjection.name))

    def __init__(self, path: str | None = None, *, compiled: bool = COMPILED) -> None:
        self._path = path  # named in a DamagedLogError
        if compiled and _compiled_scan is None:
            raise ValueError("the C kernel projections._prefix_scan is not built")
        self._scan = _compiled_scan if compiled else None
        self.graph = PrefixGraph()
        self.ended = False  # an event that is not plain was met: the prefix ends before it
        self._schemas = SchemaProjection()
        self._origin_ids: dict[str, int] = {"": 0}  # as graph.origins
        self._index: dict[str, int] = {}  # entity name -> index
        self._last: tuple[int, str, int] = (0, "", 0)  # the newest stamp read

    @property
    def position(self) -> int:
        return self.graph.position

    def feed(self, raws: Sequence[bytes]) -> int:
        """Read the next stored records (the first at `position` + 1) up to the first that is
        not plain; returns how many were plain (all of them, unless `ended`)."""
        if self.ended:
            return 0
        start = self.graph.position
        if self._scan is None:
            self._feed(raws)
            return self.graph.position - start
        raws = raws if type(raws) is list else list(raws)
        at = 0
        while at < len(raws):
            at += self._compiled(raws, at)
            # The record the kernel did not take, if any: the Python path decides it.
            if at < len(raws) and not self._feed(raws[at : at + 1]):
                break
            at += 1
        return self.graph.position - start

    def snapshots(self, names: Iterable[str]) -> PrefixSnapshots:
        """Each of `names`' snapshot at the prefix's end (the graph's, schemas' or conflicts')."""
        position = self.graph.position
        made: dict[str, bytes] = {}
        for name in names:
            if name == GraphProjection.name:
                made[name] = prefix_snapshot(self.graph)
            elif name == SchemaProjection.name:
                self._schemas.position = position
                made[name] = self._schemas.to_snapshot()
            elif name == ConflictsProjection.name:
                made[name] = conflicts_snapshot(self.graph)
            else:
                raise ValueError(f"no direct path for the projection {name}")
        return PrefixSnapshots(position, made)

    # --- reading ----------------------------------------------------------------------

    def _compiled(self, raws: list[bytes], at: int) -> int:
        """Read raws[at:] in C while it takes them (see projections/_prefix_scan.c); returns
        how many it read. It appends to the lists and index itself, the arrays here."""
        assert self._scan is not None
        graph = self.graph
        read, graph.position, self._last, columns = self._scan(
            raws, at, self._index, self._origin_ids, graph.origins, graph.names, graph.types,
            graph.contents, graph.relation_types, graph.stubs, graph.position, self._last,
        )  # fmt: skip
        for column, rows in zip(_kernel_columns(graph), columns, strict=True):
            column.frombytes(rows)
        return read

    def _feed(self, raws: Sequence[bytes]) -> bool:
        """Read records in Python up to the first that is not plain; False if one is not."""
        for part in _parts(raws):
            if isinstance(part, list):
                if not (self._run(part) or self._plain(part)):
                    return False
            elif not self._other(decode_record(part, self.graph.position + 1, self._path)):
                return False
        return True

    def _run(self, records: list[_Record]) -> bool:
        """Read a run of records in C-level passes, column by column, if it is the usual
        case (one origin throughout the prefix, its seqs consecutive, its clock not going
        back, every name written to created before); False, having changed nothing, if it is
        not (`_plain` then reads it record by record, deciding where the prefix ends)."""
        import numpy as np  # noqa: PLC0415 (a rebuild's, not every server's)

        graph = self.graph
        k = len(records)
        position = graph.position
        origins = set(map(_ORIGIN, records))
        if len(origins) != 1 or list(map(_POSITION, records)) != list(
            range(position + 1, position + k + 1)
        ):
            return False
        origin = origins.pop()
        if graph.origins[1:] not in ([], [origin]):
            return False
        hlcs = list(map(_HLC, records))
        seqs = list(map(_SEQ, records))
        if (
            seqs != list(range(seqs[0], seqs[0] + k))
            or hlcs != sorted(hlcs)
            or (hlcs[0], origin, seqs[0]) <= self._last
        ):
            return False
        events = list(map(_EVENT, records))
        kinds = list(map(type, events))
        masks = [list(map(is_, kinds, repeat(kind))) for kind in (_Entity, _Observation, _Relation)]
        entities, observations, relations = (list(compress(events, mask)) for mask in masks)
        names = list(map(_NAME, entities))
        index = self._index
        n = len(graph.names)
        if len(set(names)) != len(names) or not index.keys().isdisjoint(names):
            return False
        index.update(zip(names, range(n, n + len(names)), strict=True))
        find = index.get
        observed = list(map(find, map(_ENTITY, observations)))
        sources = list(map(find, map(_FROM, relations)))
        targets = list(map(find, map(_TO, relations)))
        written = [*observed, *sources, *targets]
        # Each name written to must be created before the write (else the fold makes a stub
        # of it, and its creation is not plain): compare offsets in the run.
        made = np.full(n + len(names), -1, dtype=np.int64)
        made[n:] = list(compress(range(k), masks[0]))
        at = [*compress(range(k), masks[1]), *(list(compress(range(k), masks[2])) * 2)]
        if None in written or bool((made[np.array(written, dtype=np.int64)] >= at).any()):
            for name in names:  # as it was: the run is read record by record
                del index[name]
            return False
        if len(graph.origins) == 1:
            self._origin_ids[origin] = 1
            graph.origins.append(origin)
        oid = 1
        graph.names += names
        graph.observed.extend(cast(list[int], observed))  # None is not among them
        graph.sources.extend(cast(list[int], sources))
        graph.targets.extend(cast(list[int], targets))
        graph.kinds.extend(map(_CODES.__getitem__, kinds))
        graph.types += map(_ENTITY_TYPE, entities)
        graph.contents += map(_CONTENT, observations)
        graph.relation_types += map(_RELATION_TYPE, relations)
        for mask, columns in zip(masks, _stamp_columns(graph), strict=True):
            kind = list(compress(records, mask))
            columns[0].extend(map(_HLC, kind))
            columns[1].extend(repeat(oid, len(kind)))
            columns[2].extend(map(_SEQ, kind))
        graph.position = position + k
        self._last = (hlcs[-1], graph.origins[oid], seqs[-1])
        return True

    def _plain(self, records: list[_Record]) -> bool:
        """Read records one by one up to the first that is not plain; False if one is not."""
        for record in records:
            if record.position != self.graph.position + 1:
                break  # the fold names the damage
            hlc, origin, seq = record.hlc, record.origin, record.origin_seq
            if (hlc, origin, seq) <= self._last:
                break
            event: Any = record.event
            kind = type(event)
            if kind is _Entity:
                if event.name in self._index:
                    break
                self._entity(event.name, event.entity_type, record)
            elif kind is _Observation:
                self._observation(event.entity, event.content, record)
            else:
                self._relation(event.from_entity, event.to_entity, event.relation_type, record)
        else:
            return True
        self.ended = True
        return False

    def _other(self, envelope: Envelope) -> bool:
        """Read one envelope the plain decoder did not take (another kind, or a creation with
        other fields); False, and the prefix ends, unless it is plain."""
        event: Any = envelope.event
        plain = (envelope.hlc, envelope.origin, envelope.origin_seq) > self._last
        if plain and isinstance(event, EntityCreated):
            plain = event.name not in self._index
        elif plain:
            plain = isinstance(event, _OTHER_PLAIN)
        if not plain:
            self.ended = True
            return False
        graph = self.graph
        if isinstance(event, EntityCreated):
            graph.attributed.append((len(graph.names), event))
            self._entity(event.name, event.entity_type, envelope)
        elif isinstance(event, RelationCreated):
            graph.bases.append((len(graph.sources), event))
            self._relation(event.from_entity, event.to_entity, event.relation_type, envelope)
        elif isinstance(event, ObservationAdded):
            self._observation(event.entity, event.content, envelope)
        else:
            if isinstance(event, DecayApplied):
                oid = self._origin(envelope.origin)
                graph.decay_runs.append((envelope.hlc, oid, envelope.origin_seq, event))
            elif isinstance(event, SchemaRegistered | SchemaRetired):
                self._schemas.apply_all([envelope])
            self._stamped(envelope)
        return True

    # --- the columns, event by event ---------------------------------------------------

    def _entity(self, name: str, entity_type: str, record: _Record | Envelope) -> None:
        graph = self.graph
        self._index[name] = len(graph.names)
        graph.names.append(name)
        graph.types.append(entity_type)
        self._stamp(graph.entity_hlc, graph.entity_origin, graph.entity_seq, record)
        graph.kinds.append(0)

    def _observation(self, entity: str, content: str, record: _Record | Envelope) -> None:
        graph = self.graph
        graph.observed.append(self._found(entity))
        graph.contents.append(content)
        self._stamp(graph.observation_hlc, graph.observation_origin, graph.observation_seq, record)
        graph.kinds.append(1)

    def _relation(self, src: str, dst: str, relation_type: str, record: _Record | Envelope) -> None:
        graph = self.graph
        graph.sources.append(self._found(src))  # `from` first, as the fold makes stubs
        graph.targets.append(self._found(dst))
        graph.relation_types.append(relation_type)
        self._stamp(graph.relation_hlc, graph.relation_origin, graph.relation_seq, record)
        graph.kinds.append(2)

    def _stamp(
        self, hlcs: array[int], origins: array[int], seqs: array[int], record: _Record | Envelope
    ) -> None:
        hlcs.append(record.hlc)
        origins.append(self._origin(record.origin))
        seqs.append(record.origin_seq)
        self._stamped(record)

    def _stamped(self, record: _Record | Envelope) -> None:
        """The record read: the prefix reaches it, and its stamp is the newest."""
        self._origin(record.origin)  # every origin folded is in the graph's origin table
        self.graph.position = record.position
        self._last = (record.hlc, record.origin, record.origin_seq)

    def _origin(self, origin: str) -> int:
        oid = self._origin_ids.setdefault(origin, len(self._origin_ids))
        if oid == len(self.graph.origins):
            self.graph.origins.append(origin)
        return oid

    def _found(self, name: str) -> int:
        """The index of the entity `name`; a name never created is given a stub, as the
        fold gives it one (not alive, the zero stamp, no type): what is written to it is
        kept, hidden. A creation of it later ends the prefix."""
        i = self._index.get(name)
        if i is not None:
            return i
        graph = self.graph
        i = self._index[name] = len(graph.names)
        graph.names.append(name)
        graph.types.append("")
        graph.entity_hlc.append(0)
        graph.entity_origin.append(0)  # the origin "", first of graph.origins
        graph.entity_seq.append(0)
        graph.stubs.append(i)
        return i


def _stamp_columns(graph: PrefixGraph) -> list[tuple[array[int], ...]]:
    """Each kind's stamp columns, in the order entity, observation, relation."""
    return [
        (graph.entity_hlc, graph.entity_origin, graph.entity_seq),
        (graph.observation_hlc, graph.observation_origin, graph.observation_seq),
        (graph.relation_hlc, graph.relation_origin, graph.relation_seq),
    ]


def _kernel_columns(graph: PrefixGraph) -> list[array[int]]:
    """The arrays the C kernel returns rows of, in its order (_prefix_scan.c's C_ enum)."""
    return [
        graph.entity_hlc, graph.entity_origin, graph.entity_seq,
        graph.observed,
        graph.observation_hlc, graph.observation_origin, graph.observation_seq,
        graph.sources, graph.targets,
        graph.relation_hlc, graph.relation_origin, graph.relation_seq,
        graph.kinds,
    ]  # fmt: skip


def _parts(raws: Sequence[bytes]) -> Iterable[list[_Record] | bytes]:
    """`raws` as runs of plain records decoded in one go, and single records the plain
    decoder does not take (to be decoded whole)."""
    try:
        yield list(map(_decode, raws))
        return
    except _UNDECODABLE:
        pass
    run: list[_Record] = []
    for raw in raws:
        try:
            run.append(_decode(raw))
        except _UNDECODABLE:
            if run:
                yield run
                run = []
            yield raw
    if run:
        yield run
