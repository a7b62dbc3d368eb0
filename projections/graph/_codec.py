"""The graph snapshot codec: a GraphState as columnar msgpack, and back."""

from __future__ import annotations

import gc
import sys
from array import array
from collections.abc import Callable, Iterable
from itertools import accumulate, chain, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

from eventstore.events import DecayApplied, RelationCreated
from projections.graph._records import (
    LAZY,
    LAZY_EDGES,
    LAZY_KEY,
    OCCURRENCES_DECODER,
    OCCURRENCES_V3_DECODER,
    PLAIN,
    PLAIN_TAIL,
    ZERO,
    EntityRecord,
    FoldStamp,
    GraphState,
    Occurrences,
    RelationKey,
    RelationRecord,
    RestoredColumns,
    RestoredEdges,
    RestoredEntityRecord,
    RestoredRelationRecord,
)
from projections.heap import return_freed_heap

__all__ = ["SnapshotError", "decode_snapshot", "encode_snapshot"]


class SnapshotError(ValueError):
    """A snapshot could not be restored (damaged, or not a graph snapshot of this version)."""


# --- the snapshot format ------------------------------------------------------------------
# Restoring is the start-up and as-of path, so a snapshot is laid out for few decoded objects
# and C-level passes over them: columns of integers are packed arrays; every stamp is an index
# into one stamp table whose origins index a sorted origin table (so stamps share their
# origin's string); types index a string table; relation endpoints index the entity names (so
# keys share the names' strings). What is usually a default (a relation's base that is the
# plain creation of its key, tombstones, hidden relations, ...) is listed only where it is not.
# Occurrences, most of a graph, and adjacency stay packed per entity until something needs
# them: building stamp-keyed dicts (hashing every stamp) and edge tuples was most of a restore.


class _Stamps(msgspec.Struct, gc=False, array_like=True):
    """Stamps as columns: int64 arrays, and uint32 indexes into the origin table."""

    hlc: bytes
    origin: bytes
    seq: bytes


class _SnapshotV3(msgspec.Struct, gc=False, array_like=True):
    """The complete fold state as a snapshot holds it (see GraphProjection.to_snapshot).

    `stamps` is a table: index 0 the zero stamp (implied), then each entity's `created`, each
    entity's `watermark`, each relation's `created`, then the rest; any other stamp is an
    index into it. Entities and relations are in their dicts' own order: listing order, or
    insertion order while marked unsorted. Columns of indexes are uint32 arrays; lists of
    pairs name an entity or relation by index and hold what differs from the default (see
    _restore_entities, _restore_relations).
    """

    position: int
    entities_last: int
    entities_unsorted: bool
    alive: int
    relations_last: int
    relations_unsorted: bool
    visible: int
    origins: list[str]
    strings: list[str]
    stamps: _Stamps
    # entities
    names: list[str]
    types: bytes
    type_stamps: list[tuple[int, int]]  # where not `created`
    dead: list[int]
    deleted: list[tuple[int, int]]  # where not zero
    unsorted: list[int]
    content_deleted: list[tuple[int, dict[str, int]]]
    packed_at: bytes  # the entities with stored occurrences, and those (each an Occurrences)
    packed: list[bytes]
    edge_counts: bytes
    edges: bytes  # each entity's `edges` in turn, as relation indexes
    # relations
    from_entities: bytes
    to_entities: bytes
    relation_types: bytes
    hidden: list[int]
    bases: list[tuple[int, RelationCreated | None]]  # where not the key's plain creation
    relation_deleted: list[tuple[int, int]]  # where not zero
    updates: list[tuple[int, dict[str, tuple[int, Any]]]]
    # entities' attribute registers, where any (version 3; required, so that a version 2
    # snapshot, which lacks it, is refused rather than taken for one without attributes)
    entity_attrs: list[tuple[int, dict[str, tuple[int, Any]]]]
    # decay runs (version 3), each with its stamp
    decay_runs: list[tuple[int, DecayApplied]]


class _Snapshot(_SnapshotV3, gc=False, array_like=True):
    """A version 4 snapshot: version 3's columns, each `packed` an Occurrences whose origins
    index `origins` (version 3's held every stamp's origin string: an OccurrencesV3)."""

    # Required, so that a version 3 snapshot, which lacks it, fails this decoder and is read
    # (and its occurrences converted) by version 3's; written as 4.
    layout: int


_ENCODER = msgspec.msgpack.Encoder()
_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(_Snapshot)
_SNAPSHOT_V3_DECODER = msgspec.msgpack.Decoder(_SnapshotV3)
LAYOUT = 4
_LITTLE_ENDIAN = sys.byteorder == "little"

# Field getters for C-level passes over records and keys.
_HLC = attrgetter("hlc")
_ORIGIN = attrgetter("origin")
_SEQ = attrgetter("origin_seq")
_TYPE = attrgetter("entity_type")
_EDGES = attrgetter("edges")
_ATTRS = attrgetter("attrs")
_BASE = attrgetter("base")
_CREATED_SLOT = EntityRecord.__dict__["created"]
_TYPE_STAMP_SLOT = EntityRecord.__dict__["type_stamp"]
_WATERMARK_SLOT = EntityRecord.__dict__["watermark"]
_RELATION_CREATED_SLOT = RelationRecord.__dict__["created"]
_KEY_SLOT = RelationRecord.__dict__["key"]


# Where each part of a restore's stamp table begins (see RestoredColumns).
def _created_from(columns: RestoredColumns) -> int:
    return 1


def _watermarks_from(columns: RestoredColumns) -> int:
    return 1 + columns.entities


def _relations_created_from(columns: RestoredColumns) -> int:
    return 1 + 2 * columns.entities


_ROW = attrgetter("row")
_COLUMNS = attrgetter("stamps")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)


def _packed(values: array[int]) -> bytes:
    """`values` as little-endian bytes."""
    if not _LITTLE_ENDIAN:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _packed_ints(code: str, values: Iterable[int]) -> bytes:
    """`values` as a little-endian array of C type `code` (q: int64, I: uint32)."""
    return _packed(array(code, values))


def _ints(code: str, data: bytes) -> array[int]:
    """The array `_packed_ints` packed (ValueError if `data` is not one)."""
    packed = array(code)
    packed.frombytes(data)
    if not _LITTLE_ENDIAN:
        packed.byteswap()
    return packed


class _StampTable:
    """A snapshot's stamp table as it is written: stamps in, their indexes out."""

    def __init__(self, origins: list[str]) -> None:
        self.origin_index = {origin: i for i, origin in enumerate(origins)}
        # Index 0 is the zero stamp, left out of the columns.
        self.hlc = array("q")
        self.origin = array("I")
        self.seq = array("q")

    def extend(self, stamps: list[FoldStamp]) -> None:
        self.hlc.extend(map(_HLC, stamps))
        self.origin.extend(map(self.origin_index.__getitem__, map(_ORIGIN, stamps)))
        self.seq.extend(map(_SEQ, stamps))

    def extend_held(
        self, records: list[Any], slot: Any, first: Callable[[RestoredColumns], int]
    ) -> None:
        """The stamp each of `records` holds in `slot` (a field's own descriptor, under the
        restored records' properties), those still LAZY read from their restore's columns at
        `first(columns) + row` rather than made: read through the record, each would be made
        and kept, and a checkpoint would undo what a restore saves."""
        stamps: list[FoldStamp] = list(map(slot.__get__, records))
        if LAZY not in stamps:
            self.extend(stamps)
            return
        # Runs of held and of LAZY stamps, found in C: a restored graph is mostly one run of
        # LAZY ones in row order, copied from the columns as slices.
        lazy = bytes(map(LAZY.__eq__, stamps))
        at, end = 0, len(stamps)
        while at < end:
            stop = lazy.find(b"\x00" if lazy[at] else b"\x01", at)
            stop = end if stop < 0 else stop
            if lazy[at]:
                self._extend_lazy(records[at:stop], first)
            else:
                self.extend(stamps[at:stop])
            at = stop

    def _extend_lazy(self, records: list[Any], first: Callable[[RestoredColumns], int]) -> None:
        columns: RestoredColumns = records[0].stamps
        rows = list(map(_ROW, records))
        start = rows[0]
        if rows == list(range(start, start + len(rows))) and all(
            map(is_, repeat(columns), map(_COLUMNS, records))
        ):
            k = first(columns) + start - 1
            hlc = columns.hlc[k : k + len(rows)]
            clocks = columns.clocks
            # (an array extends only with one of its own type: hence the iterators)
            self.hlc.extend(iter(hlc) if clocks is None else map(clocks.__getitem__, hlc))
            origins = map(columns.origins.__getitem__, columns.origin[k : k + len(rows)])
            self.origin.extend(map(self.origin_index.__getitem__, origins))
            self.seq.extend(iter(columns.seq[k : k + len(rows)]))
            return
        for record in records:
            columns = record.stamps
            clock, name, number = columns.columns(first(columns) + record.row)
            self.hlc.append(clock)
            self.origin.append(self.origin_index[name])
            self.seq.append(number)

    def ref(self, stamp: FoldStamp) -> int:
        """The index of the zero stamp, or of `stamp` added."""
        if stamp == ZERO:
            return 0
        self.hlc.append(stamp.hlc)
        self.origin.append(self.origin_index[stamp.origin])
        self.seq.append(stamp.origin_seq)
        return len(self.hlc)

    def columns(self) -> _Stamps:
        return _Stamps(_packed(self.hlc), _packed(self.origin), _packed(self.seq))


def encode_snapshot(graph: GraphState) -> bytes:
    """The fold state `graph` as a snapshot (see GraphProjection.to_snapshot). Occurrences
    stored unpacked are packed in place on the way (the next snapshot reuses the bytes)."""
    # Every origin ever folded: a superset of those in use, the same for the same events.
    origins = sorted({"", *graph.origins})
    records = list(graph.entities.values())
    relations = graph.relation_records()
    table = _StampTable(origins)
    table.extend_held(records, _CREATED_SLOT, _created_from)
    table.extend_held(records, _WATERMARK_SLOT, _watermarks_from)
    table.extend_held(relations, _RELATION_CREATED_SLOT, _relations_created_from)
    strings: dict[str, int] = {}
    return _ENCODER.encode(
        _Snapshot(
            position=graph.position,
            entities_last=table.ref(graph.entities_last),
            entities_unsorted=graph.entities_unsorted,
            alive=graph.alive,
            relations_last=table.ref(graph.relations_last),
            relations_unsorted=graph.relations_unsorted,
            visible=graph.visible,
            origins=origins,
            names=list(graph.entities),
            **_entity_columns(records, relations, table, strings),
            **_occurrence_columns(graph, records, origins, table.origin_index),
            **_relation_columns(graph, relations, table, strings),
            decay_runs=[(table.ref(stamp), run) for stamp, run in sorted(graph.decay_runs.items())],
            strings=list(strings),  # last: the columns above fill it
            stamps=table.columns(),
            layout=LAYOUT,
        )
    )


def _entity_columns(
    records: list[EntityRecord],
    relations: list[RelationRecord],
    table: _StampTable,
    strings: dict[str, int],
) -> dict[str, Any]:
    ref = table.ref
    new = strings.setdefault
    index = dict(zip(relations, range(len(relations)), strict=True))
    # Two passes rather than a list of every record's edges: a restored record makes them
    # per read (RestoredEntityRecord.edges), and a list would hold them all at once.
    with_edges = filter(None, map(_EDGES, records))
    return {
        "types": _packed_ints("I", [new(t, len(strings)) for t in map(_TYPE, records)]),
        "type_stamps": [
            (i, ref(e.type_stamp))
            for i, e in enumerate(records)
            # LAZY: a restored record's `created`, not read since (reading it would make it).
            if _TYPE_STAMP_SLOT.__get__(e) is not LAZY
            and e.type_stamp is not e.created
            and e.type_stamp != e.created
        ],
        "dead": [i for i, e in enumerate(records) if not e.alive],
        "deleted": [(i, ref(e.deleted)) for i, e in enumerate(records) if e.deleted != ZERO],
        "unsorted": [i for i, e in enumerate(records) if e.occ_unsorted],
        "content_deleted": [
            (i, {content: ref(stamp) for content, stamp in e.content_deleted.items()})
            for i, e in enumerate(records)
            if e.content_deleted
        ],
        "entity_attrs": [
            (i, {field: (ref(stamp), value) for field, (stamp, value) in attrs.items()})
            for i, attrs in enumerate(map(_ATTRS, records))
            if attrs
        ],
        "edge_counts": _packed_ints("I", [len(e) if e else 0 for e in map(_EDGES, records)]),
        "edges": _packed_ints("I", map(index.__getitem__, chain.from_iterable(with_edges))),
    }


def _occurrence_columns(
    graph: GraphState, records: list[EntityRecord], origins: list[str], index: dict[str, int]
) -> dict[str, Any]:
    packed_at: list[int] = []
    packed: list[bytes] = []
    encode = _ENCODER.encode
    renumbered = _renumbering(graph.packed_origins, index)
    graph.packed_origins = origins
    for i, entity in enumerate(records):
        occ = entity.occ
        if entity.packed is not None:
            if occ or renumbered is not None:
                # Packed anew with the occurrences added since (no stamp hashed): it stays
                # packed, and its next snapshot reuses these bytes.
                both = OCCURRENCES_DECODER.decode(entity.packed)
                if renumbered is not None:
                    both.origins = list(map(renumbered.__getitem__, both.origins))
                if occ:
                    _extend(both, occ, index)
                entity.packed = encode(both)
                entity.occ = None
            packed_at.append(i)
            packed.append(entity.packed)
        elif occ:
            # Kept packed from now on, as a restore would hold it: a long-running process
            # holds no more per occurrence than a fresh one (a stamp object and a dict slot
            # each, otherwise), and its next snapshot reuses these bytes.
            fresh = Occurrences([], [], [], [])
            _extend(fresh, occ, index)
            entity.packed = encode(fresh)
            entity.occ = None
            packed_at.append(i)
            packed.append(entity.packed)
    return {"packed_at": _packed_ints("I", packed_at), "packed": packed}


def _renumbering(before: list[str], index: dict[str, int]) -> list[int] | None:
    """New origin indexes for the old ones (`before` the table the packed ones index, `index`
    the new table's), or None where none changes: a new origin that sorts before one in use
    moves the later ones, which happens once per new node, not per snapshot."""
    renumbered = list(map(index.__getitem__, before))
    return None if renumbered == list(range(len(before))) else renumbered


def _extend(packed: Occurrences, occ: dict[FoldStamp, str], index: dict[str, int]) -> None:
    """`occ`'s occurrences appended to `packed`, in `occ` order."""
    stamps = list(occ)
    packed.contents += occ.values()
    packed.hlcs += map(_HLC, stamps)
    packed.origins += map(index.__getitem__, map(_ORIGIN, stamps))
    packed.seqs += map(_SEQ, stamps)


def _relation_columns(
    graph: GraphState, relations: list[RelationRecord], table: _StampTable, strings: dict[str, int]
) -> dict[str, Any]:
    ref = table.ref
    at = {name: i for i, name in enumerate(graph.entities)}.__getitem__
    keys = _held_keys(relations)
    new = strings.setdefault
    plain_tail = PLAIN_TAIL
    return {
        "from_entities": _packed_ints("I", map(at, map(_FIRST, keys))),
        "to_entities": _packed_ints("I", map(at, map(_SECOND, keys))),
        "relation_types": _packed_ints("I", [new(t, len(strings)) for t in map(_THIRD, keys)]),
        "hidden": [j for j, r in enumerate(relations) if not r.visible],
        # Those that are not their key's plain creation, by value (as the log would give it).
        "bases": [
            (j, base)
            for j, base in enumerate(map(_BASE, relations))
            if base is not PLAIN and (base is None or astuple(base)[3:] != plain_tail)
        ],
        "relation_deleted": [
            (j, ref(r.deleted)) for j, r in enumerate(relations) if r.deleted != ZERO
        ],
        "updates": [
            (j, {field: (ref(stamp), value) for field, (stamp, value) in r.updates.items()})
            for j, r in enumerate(relations)
            if r.updates
        ],
    }


def _held_keys(relations: list[RelationRecord]) -> list[RelationKey]:
    """Every relation's key, as _held_key: for a restore's relations untouched and in row
    order, made from its columns in one pass."""
    held: list[RelationKey] = list(map(_KEY_SLOT.__get__, relations))
    if not any(map(is_, repeat(LAZY_KEY), held)):
        return held  # a fold's, or all read since the restore
    if held[0] is LAZY_KEY:
        columns: RestoredColumns = relations[0].stamps  # type: ignore[attr-defined]
        if (
            all(map(is_, repeat(LAZY_KEY), held))
            and all(map(is_, repeat(columns), map(_COLUMNS, relations)))
            and list(map(_ROW, relations)) == list(range(len(relations)))
        ):
            names = columns.names
            return list(
                zip(
                    map(names.__getitem__, columns.from_entities[: len(relations)]),
                    map(names.__getitem__, columns.to_entities[: len(relations)]),
                    map(columns.strings.__getitem__, columns.relation_types[: len(relations)]),
                    strict=True,
                )
            )
    return list(map(_held_key, relations))


def _held_key(relation: RelationRecord) -> RelationKey:
    """The relation's key, made for the moment where a restore left it unmade (read through
    the record, it would be kept: the key tuples a restore saves)."""
    key = _KEY_SLOT.__get__(relation)
    if key is LAZY_KEY:
        restored: RestoredRelationRecord = relation  # type: ignore[assignment]
        return restored.stamps.relation_key(restored.row)
    return key  # type: ignore[no-any-return]


def decode_snapshot(data: bytes | memoryview) -> GraphState:
    """The fold state `data` holds (see GraphProjection.from_snapshot)."""
    state = _decoded(data)
    # The decoded snapshot is freed by now: its pages go back rather than stay counted.
    return_freed_heap()
    return state


def _decoded(data: bytes | memoryview) -> GraphState:
    # It makes a few hundred thousand tuples that live on: collections would only scan them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        state: _SnapshotV3
        try:
            current = _SNAPSHOT_DECODER.decode(data)
        except msgspec.DecodeError:
            # Version 3 (a checkpoint from before the upgrade): its occurrences converted.
            state = _SNAPSHOT_V3_DECODER.decode(data)
            state.packed = _converted(state.packed, state.origins)
        else:
            if current.layout != LAYOUT:
                raise SnapshotError(f"a snapshot of layout {current.layout}, not {LAYOUT}")
            state = current
        return _restored(state)
    except msgspec.DecodeError as error:
        raise SnapshotError(f"not a graph snapshot: {error}") from None
    except (IndexError, KeyError, ValueError) as error:
        if isinstance(error, SnapshotError):
            raise
        raise SnapshotError(f"the snapshot does not hold together: {error}") from None
    finally:
        if collecting:
            gc.enable()


def _converted(packed: list[bytes], origins: list[str]) -> list[bytes]:
    """Version 3's packed occurrences (stamps whole) as version 4 packs them (origin indexes
    into `origins`, the snapshot's origin table): once per upgraded checkpoint."""
    index = {origin: i for i, origin in enumerate(origins)}
    encode = _ENCODER.encode
    converted = []
    for raw in packed:
        old = OCCURRENCES_V3_DECODER.decode(raw)
        stamps = old.stamps
        converted.append(
            encode(
                Occurrences(
                    old.contents,
                    list(map(_HLC, stamps)),
                    list(map(index.__getitem__, map(_ORIGIN, stamps))),
                    list(map(_SEQ, stamps)),
                )
            )
        )
    return converted


def _restored(state: _SnapshotV3) -> GraphState:
    origins = state.origins
    columns = state.stamps
    hlc, origin, seq = (
        _ints("q", columns.hlc),
        _ints("I", columns.origin),
        _ints("q", columns.seq),
    )
    n = len(state.names)
    # Checked now, as the stamps are read later: every record's row is in the table, and
    # every origin index in the origin table.
    if not len(hlc) == len(origin) == len(seq):
        raise SnapshotError("the snapshot's stamp columns do not line up")
    if len(hlc) < 2 * n + len(state.from_entities) // 4:
        raise SnapshotError("the snapshot's stamp table is shorter than its records")
    if origin and max(origin) >= len(origins):
        raise SnapshotError("a stamp's origin is not in the snapshot's origin table")
    table = RestoredColumns(hlc, origin, seq, origins, n)
    # Entity i and relation i share their row's int (each held by its record and an entity's
    # by its PackedEdges): one int object of 32 bytes per row, not three.
    rows = list(range(max(n, len(state.from_entities) // 4)))
    relations = _restore_relations(state, table, rows)
    return GraphState(
        position=state.position,
        entities=_restore_entities(state, table, relations, rows),
        entities_last=table.at(state.entities_last),
        entities_unsorted=state.entities_unsorted,
        alive=state.alive,
        keyed=None,  # by key when first looked up by key
        unkeyed=relations,
        relations_last=table.at(state.relations_last),
        relations_unsorted=state.relations_unsorted,
        visible=state.visible,
        origins=dict(zip(origins, origins, strict=True)),
        packed_origins=origins,
        decay_runs={table.at(at): run for at, run in state.decay_runs},
    )


def _restore_entities(
    state: _SnapshotV3,
    table: RestoredColumns,
    relations: tuple[RelationRecord, ...],
    rows: list[int],
) -> dict[str, EntityRecord]:
    names = state.names
    n = len(names)
    types = _ints("I", state.types)
    counts = _ints("I", state.edge_counts)
    indexes = _ints("I", state.edges)
    if len(types) != n or len(counts) != n or sum(counts) != len(indexes):
        raise SnapshotError("the snapshot's entity columns do not line up")
    packed: list[bytes | None] = [None] * n
    for i, raw in zip(_ints("I", state.packed_at), state.packed, strict=True):
        packed[i] = raw
    starts = array("q", accumulate(counts, initial=0))
    if starts[-1] <= 0xFFFFFFFF:
        starts = array("I", starts)  # 4 bytes an entity where they fit, not 8
    # Each record's `edges` made from these when read (RestoredEntityRecord.edges).
    table.edges = RestoredEdges(relations, indexes, starts)
    records: list[EntityRecord] = list(
        map(
            RestoredEntityRecord,
            repeat(LAZY),  # created: row i of the table's entities
            map(state.strings.__getitem__, types),
            repeat(LAZY),  # the type's stamp: `created`, but where listed
            repeat(LAZY),  # watermark: row i of the table's watermarks
            repeat(True),  # alive
            repeat(ZERO),  # deleted
            repeat(None),  # occ: every occurrence restored is packed
            repeat(False),  # occ_unsorted
            repeat(None),  # content_deleted
            packed,
            repeat(LAZY_EDGES),  # edges: row i of the table's, read when read
            repeat(None),  # attrs, but where listed
            names,
            rows,
            repeat(table),
        )
    )
    at = table.at
    for i, k in state.type_stamps:
        records[i].type_stamp = at(k)
    for i in state.dead:
        records[i].alive = False
    for i, k in state.deleted:
        record = records[i]
        deleted = at(k)
        # A tombstone's watermark is its deletion, mostly (as the fold leaves it): one object
        # for both, where the table has two, keeps each deleted entity a stamp smaller.
        record.deleted = record.watermark if deleted == record.watermark else deleted
    for i in state.unsorted:
        records[i].occ_unsorted = True
    for i, deletions in state.content_deleted:
        records[i].content_deleted = {content: at(k) for content, k in deletions.items()}
    for i, attrs in state.entity_attrs:
        records[i].attrs = {field: (at(k), value) for field, (k, value) in attrs.items()}
    entities = dict(zip(names, records, strict=True))
    if len(entities) != n:
        raise SnapshotError("the snapshot holds an entity twice")
    return entities


def _restore_relations(
    state: _SnapshotV3, table: RestoredColumns, rows: list[int]
) -> tuple[RestoredRelationRecord, ...]:
    n = len(state.names)
    from_entities = _ints("I", state.from_entities)
    to_entities = _ints("I", state.to_entities)
    relation_types = _ints("I", state.relation_types)
    m = len(from_entities)
    if len(to_entities) != m or len(relation_types) != m:
        raise SnapshotError("the snapshot's relation columns do not line up")
    # Keys are made when first read: their indexes are checked now.
    if m and (
        max(from_entities) >= n
        or max(to_entities) >= n
        or max(relation_types) >= len(state.strings)
    ):
        raise SnapshotError("a relation's endpoint or type is not in the snapshot")
    table.names = tuple(state.names)
    table.strings = tuple(state.strings)
    table.from_entities = from_entities
    table.to_entities = to_entities
    table.relation_types = relation_types
    relations: list[RestoredRelationRecord] = list(
        map(
            RestoredRelationRecord,
            repeat(LAZY_KEY, m),  # key: made from row j's columns when first read
            repeat(LAZY),  # created: row j of the table's relations
            repeat(PLAIN),  # base, but where listed
            repeat(ZERO),  # deleted
            repeat(True),  # visible
            repeat(None),  # updates, but where listed
            rows,
            repeat(table),
        )
    )
    at = table.at
    for j in state.hidden:
        relations[j].visible = False
    for j, base in state.bases:
        relations[j].base = base
    for j, k in state.relation_deleted:
        relations[j].deleted = at(k)
    for j, updates in state.updates:
        relations[j].updates = {field: (at(k), value) for field, (k, value) in updates.items()}
    # The tuple is untracked by the first collection: never scanned again.
    return tuple(relations)
