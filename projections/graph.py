"""GraphProjection: the CRDT fold of the log into entities, observations and relations.

Every element is decided by last-writer-wins on the stamp `(hlc, origin, origin_seq)`, so the
read model depends only on the set of envelopes applied, never on their order, grouping or
repetition (ARCHITECTURE §3):

- an entity is alive iff its latest EntityCreated is newer than its latest EntityDeleted. Its
  type is an LWW register (EntityCreated, EntityUpdated). A creation starts it fresh: nothing
  stamped before it (observations, type writes, relations) shows through.
- each ObservationAdded is one occurrence, visible iff the entity is alive and the occurrence
  is newer than its latest creation and its content's latest ObservationDeleted.
- a relation (from, to, type) is visible iff its latest RelationCreated is newer than its latest
  RelationDeleted and than both endpoints' latest creations, and both endpoints are alive. Its
  attributes are per-field LWW registers (RelationCreated writes all, RelationUpdated some).

What can never become visible again is dropped; the newest stamps are kept, so late older
events are still rejected. Listings follow the latest creation stamp. Events almost always
arrive in stamp order, so records stay in insertion order and are re-sorted lazily, on the next
read, only after an out-of-order stamp: reads may reorganise internal dicts, so use one
projection from one thread at a time.
"""

from __future__ import annotations

import gc
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, chain, repeat
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    Stamp,
)
from projections.views import EntityView, GraphSnapshot, RelationView

__all__ = [
    "EntityView",
    "GraphProjection",
    "GraphSnapshot",
    "RelationKey",
    "RelationView",
    "SnapshotError",
]

RelationKey = tuple[str, str, str]
"""(from_entity, to_entity, relation_type)"""

_RELATION_ATTRIBUTES = (
    "weight",
    "properties",
    "valid_at",
    "invalid_at",
    "source_session",
    "source_transcript",
    "source_type",
)


# Fold records are invisible to the cycle collector (gc=False): a replay creates millions of
# them, and full collections over them would cost more than the fold itself. They must never
# form a cycle, so a relation names its endpoints instead of pointing at their records.


class _Stamp(msgspec.Struct, frozen=True, order=True, gc=False, array_like=True):
    """A stamp `(hlc, origin, origin_seq)`, ordered like the tuple; as an untracked object it
    keeps the dicts it keys untracked too."""

    hlc: int
    origin: str
    origin_seq: int


_ZERO = _Stamp(0, "", 0)


class _Entity(msgspec.Struct, gc=False, array_like=True):
    """Fold state of one entity name, alive or not (tombstones are kept for LWW)."""

    created: _Stamp
    entity_type: str
    type_stamp: _Stamp
    # The newest stamp of anything that gates or orders occurrences (creation, deletion, content
    # deletions, stored occurrences): an occurrence newer than it is visible while the entity
    # is alive, and is simply appended, which keeps `occ` in stamp order.
    watermark: _Stamp
    alive: bool = False  # created > deleted, kept as a flag so checks need not touch stamps
    deleted: _Stamp = _ZERO
    # Stored occurrences, stamp -> content. Invariant: each is newer than `created`, `deleted`
    # and its content's latest deletion, so it is visible exactly while the entity is alive.
    occ: dict[_Stamp, str] = {}
    occ_unsorted: bool = False
    content_deleted: dict[str, _Stamp] | None = None
    # Occurrences restored from a snapshot and not needed since (an encoded _Occurrences): all
    # are at or below the watermark, so they precede every one in `occ`, where in-order adds
    # still go. Anything else that touches `occ` unpacks them first (GraphProjection._unpack);
    # reads of the contents decode them without unpacking; a snapshot packs `occ` into them.
    packed: bytes | None = None
    # Incident relations: a small tuple while there are few (cheap to build during a replay),
    # then an insertion-ordered set; after a restore, those it restored packed, then the rest.
    # Relation records are never removed, so all only grow.
    edges: tuple[_Relation, ...] | dict[_Relation, None] | _PackedEdges | None = None


class _Relation(msgspec.Struct, gc=False, eq=False, array_like=True):
    """Fold state of one relation key; `visible` is kept current by every event touching it."""

    key: RelationKey
    created: _Stamp = _ZERO
    # The latest creation, which wrote every attribute at `created`.
    base: RelationCreated | None = None
    deleted: _Stamp = _ZERO
    visible: bool = False
    # Attributes written by a RelationUpdated newer than `created`: field -> (stamp, value).
    updates: dict[str, tuple[_Stamp, Any]] | None = None


_SMALL_EDGES = 8


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


class _Occurrences(msgspec.Struct, gc=False, array_like=True):
    """One entity's stored occurrences in `occ` order: encoded, and decoded, in one call each
    (a column of `_Stamp`s costs a few bytes more than origin indexes, far less time)."""

    contents: list[str]
    stamps: list[_Stamp]


class _Contents(msgspec.Struct, gc=False, array_like=True):
    """An _Occurrences' first column alone, all a read needs (the other columns are skipped)."""

    contents: list[str]


class _Snapshot(msgspec.Struct, gc=False, array_like=True):
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
    packed_at: bytes  # the entities with stored occurrences, and those (each an _Occurrences)
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


_ENCODER = msgspec.msgpack.Encoder()
_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(_Snapshot)
_OCCURRENCES_DECODER = msgspec.msgpack.Decoder(_Occurrences)
_CONTENTS_DECODER = msgspec.msgpack.Decoder(_Contents)
_LITTLE_ENDIAN = sys.byteorder == "little"

# The base of a restored relation that the plain creation of its key made: reads build the
# view from the key (the record never holds a RelationCreated whose strings are empty).
_PLAIN = RelationCreated(from_entity="", to_entity="", relation_type="")
# What a plain creation holds after its key, field by field.
_PLAIN_TAIL = astuple(_PLAIN)[3:]

# Field getters for C-level passes over records and keys.
_HLC = attrgetter("hlc")
_ORIGIN = attrgetter("origin")
_SEQ = attrgetter("origin_seq")
_TYPE = attrgetter("entity_type")
_EDGES = attrgetter("edges")
_BASE = attrgetter("base")
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


class _PackedEdges(msgspec.Struct, gc=False):
    """An entity's incident relations as a restore left them: indexes into the relations it
    restored, resolved only when iterated, then those added since, held as a fold holds them
    (see _add_edge). Resolving them on the first add instead cost a fold after a restore more
    than building them all cost the restore."""

    relations: tuple[_Relation, ...]  # shared by every entity of the restore, as is `indexes`
    indexes: array[int]
    start: int
    stop: int
    edges: tuple[_Relation, ...] | dict[_Relation, None] | None = None

    def __iter__(self) -> Iterator[_Relation]:
        restored = map(self.relations.__getitem__, self.indexes[self.start : self.stop])
        return chain(restored, self.edges) if self.edges else restored

    def __len__(self) -> int:
        return self.stop - self.start + (len(self.edges) if self.edges else 0)


class _StampTable:
    """A snapshot's stamp table as it is written: stamps in, their indexes out."""

    def __init__(self, origins: list[str]) -> None:
        self.origin_index = {origin: i for i, origin in enumerate(origins)}
        # Index 0 is the zero stamp, left out of the columns.
        self.hlc = array("q")
        self.origin = array("I")
        self.seq = array("q")

    def extend(self, stamps: list[_Stamp]) -> None:
        self.hlc.extend(map(_HLC, stamps))
        self.origin.extend(map(self.origin_index.__getitem__, map(_ORIGIN, stamps)))
        self.seq.extend(map(_SEQ, stamps))

    def ref(self, stamp: _Stamp) -> int:
        """The index of the zero stamp, or of `stamp` added."""
        if stamp == _ZERO:
            return 0
        self.hlc.append(stamp.hlc)
        self.origin.append(self.origin_index[stamp.origin])
        self.seq.append(stamp.origin_seq)
        return len(self.hlc)

    def columns(self) -> _Stamps:
        return _Stamps(_packed(self.hlc), _packed(self.origin), _packed(self.seq))


def _add_edge(holder: _Entity | _PackedEdges, relation: _Relation) -> None:
    edges = holder.edges
    if edges is None:
        holder.edges = (relation,)
    elif isinstance(edges, tuple):
        if len(edges) < _SMALL_EDGES:
            holder.edges = (*edges, relation)
        else:
            holder.edges = dict.fromkeys((*edges, relation))
    elif isinstance(edges, dict):
        edges[relation] = None
    else:  # restored ones: the new one joins those added since
        _add_edge(edges, relation)


class GraphProjection:
    """Entities, observations, relations and adjacency, folded from envelopes (pure, no I/O)."""

    name = "graph"
    version = 2  # of the snapshot format: bump on any change to the records or _Snapshot

    def __init__(self) -> None:
        self.position = 0
        self._entities: dict[str, _Entity] = {}
        self._entities_last = _ZERO
        self._entities_unsorted = False
        self._alive = 0
        self._relations: dict[RelationKey, _Relation] = {}
        self._relations_last = _ZERO
        self._relations_unsorted = False
        self._visible = 0
        self._origins: dict[str, str] = {}

    # --- snapshots ------------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        """The complete fold state (tombstones, stamps, registers, order) as msgpack: restored
        by `from_snapshot`, it answers and folds further events exactly as this one does. Equal
        states give equal bytes, however they were reached (folded, or restored then folded)."""
        # Every origin ever folded: a superset of those in use, the same for the same events.
        origins = sorted({"", *self._origins})
        records = list(self._entities.values())
        relations = list(self._relations.values())
        table = _StampTable(origins)
        table.extend([entity.created for entity in records])
        table.extend([entity.watermark for entity in records])
        table.extend([relation.created for relation in relations])
        strings: dict[str, int] = {}
        return _ENCODER.encode(
            _Snapshot(
                position=self.position,
                entities_last=table.ref(self._entities_last),
                entities_unsorted=self._entities_unsorted,
                alive=self._alive,
                relations_last=table.ref(self._relations_last),
                relations_unsorted=self._relations_unsorted,
                visible=self._visible,
                origins=origins,
                names=list(self._entities),
                **self._entity_columns(records, relations, table, strings),
                **self._occurrence_columns(records),
                **self._relation_columns(relations, table, strings),
                strings=list(strings),  # last: the columns above fill it
                stamps=table.columns(),
            )
        )

    def _entity_columns(
        self,
        records: list[_Entity],
        relations: list[_Relation],
        table: _StampTable,
        strings: dict[str, int],
    ) -> dict[str, Any]:
        ref = table.ref
        new = strings.setdefault
        index = dict(zip(relations, range(len(relations)), strict=True))
        with_edges = [edges for edges in map(_EDGES, records) if edges]
        return {
            "types": _packed_ints("I", [new(t, len(strings)) for t in map(_TYPE, records)]),
            "type_stamps": [
                (i, ref(e.type_stamp))
                for i, e in enumerate(records)
                if e.type_stamp is not e.created and e.type_stamp != e.created
            ],
            "dead": [i for i, e in enumerate(records) if not e.alive],
            "deleted": [(i, ref(e.deleted)) for i, e in enumerate(records) if e.deleted != _ZERO],
            "unsorted": [i for i, e in enumerate(records) if e.occ_unsorted],
            "content_deleted": [
                (i, {content: ref(stamp) for content, stamp in e.content_deleted.items()})
                for i, e in enumerate(records)
                if e.content_deleted
            ],
            "edge_counts": _packed_ints("I", [len(e.edges) if e.edges else 0 for e in records]),
            "edges": _packed_ints("I", map(index.__getitem__, chain.from_iterable(with_edges))),
        }

    @staticmethod
    def _occurrence_columns(records: list[_Entity]) -> dict[str, Any]:
        packed_at: list[int] = []
        packed: list[bytes] = []
        encode = _ENCODER.encode
        for i, entity in enumerate(records):
            occ = entity.occ
            if entity.packed is not None:
                if occ:
                    # Packed anew with the occurrences added since (no stamp hashed): it stays
                    # packed, and its next snapshot reuses these bytes.
                    both = _OCCURRENCES_DECODER.decode(entity.packed)
                    both.contents += occ.values()
                    both.stamps += occ
                    entity.packed = encode(both)
                    entity.occ = {}
                packed_at.append(i)
                packed.append(entity.packed)
            elif occ:
                packed_at.append(i)
                packed.append(encode(_Occurrences(list(occ.values()), list(occ))))
        return {"packed_at": _packed_ints("I", packed_at), "packed": packed}

    def _relation_columns(
        self, relations: list[_Relation], table: _StampTable, strings: dict[str, int]
    ) -> dict[str, Any]:
        ref = table.ref
        at = {name: i for i, name in enumerate(self._entities)}.__getitem__
        keys = list(self._relations)
        new = strings.setdefault
        plain_tail = _PLAIN_TAIL
        return {
            "from_entities": _packed_ints("I", map(at, map(_FIRST, keys))),
            "to_entities": _packed_ints("I", map(at, map(_SECOND, keys))),
            "relation_types": _packed_ints("I", [new(t, len(strings)) for t in map(_THIRD, keys)]),
            "hidden": [j for j, r in enumerate(relations) if not r.visible],
            # Those that are not their key's plain creation, by value (as the log would give it).
            "bases": [
                (j, base)
                for j, base in enumerate(map(_BASE, relations))
                if base is not _PLAIN and (base is None or astuple(base)[3:] != plain_tail)
            ],
            "relation_deleted": [
                (j, ref(r.deleted)) for j, r in enumerate(relations) if r.deleted != _ZERO
            ],
            "updates": [
                (j, {field: (ref(stamp), value) for field, (stamp, value) in r.updates.items()})
                for j, r in enumerate(relations)
                if r.updates
            ],
        }

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> GraphProjection:
        """The projection `to_snapshot` captured. Raises SnapshotError if `data` does not
        have a snapshot's shape; its meaning is not checked, nor are the packed occurrences
        decoded until needed (a checkpoint's checksum is what catches damage), which keeps
        this, the start-up and as-of path, as fast as decoding."""
        # It makes a few hundred thousand tuples that live on: collections would only scan them.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return cls._restored(_SNAPSHOT_DECODER.decode(data))
        except msgspec.DecodeError as error:
            raise SnapshotError(f"not a graph snapshot: {error}") from None
        except (IndexError, ValueError) as error:
            if isinstance(error, SnapshotError):
                raise
            raise SnapshotError(f"the snapshot does not hold together: {error}") from None
        finally:
            if collecting:
                gc.enable()

    @classmethod
    def _restored(cls, state: _Snapshot) -> GraphProjection:
        graph = cls()
        origins = state.origins
        columns = state.stamps
        hlc, origin, seq = (
            _ints("q", columns.hlc),
            _ints("I", columns.origin),
            _ints("q", columns.seq),
        )
        # A short table shows as records missing, caught where they are paired with their keys.
        if not len(hlc) == len(origin) == len(seq):
            raise SnapshotError("the snapshot's stamp columns do not line up")
        # One object per stamp, sharing their origin's string (often all have the same one).
        if origin and columns.origin == columns.origin[:4] * len(origin):
            origin_of: Iterator[str] = repeat(origins[origin[0]])
        else:
            origin_of = map(origins.__getitem__, origin)
        table = [_ZERO, *map(_Stamp, hlc, origin_of, seq)]
        relations = graph._restore_relations(state, table)
        graph._restore_entities(state, table, relations)
        graph.position = state.position
        graph._entities_last = table[state.entities_last]
        graph._entities_unsorted = state.entities_unsorted
        graph._alive = state.alive
        graph._relations_last = table[state.relations_last]
        graph._relations_unsorted = state.relations_unsorted
        graph._visible = state.visible
        graph._origins = dict(zip(origins, origins, strict=True))
        return graph

    def _restore_entities(
        self, state: _Snapshot, table: list[_Stamp], relations: tuple[_Relation, ...]
    ) -> None:
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
        starts = list(accumulate(counts, initial=0))
        created = table[1 : n + 1]
        records = list(
            map(
                _Entity,
                created,
                map(state.strings.__getitem__, types),
                created,  # the type's stamp, but where listed
                table[n + 1 : 2 * n + 1],
                repeat(True),  # alive
                repeat(_ZERO),  # deleted
                iter(dict, None),  # a fresh `occ` each
                repeat(False),  # occ_unsorted
                repeat(None),  # content_deleted
                packed,
                map(_PackedEdges, repeat(relations), repeat(indexes), starts, starts[1:]),
            )
        )
        for i, at in state.type_stamps:
            records[i].type_stamp = table[at]
        for i in state.dead:
            records[i].alive = False
        for i, at in state.deleted:
            records[i].deleted = table[at]
        for i in state.unsorted:
            records[i].occ_unsorted = True
        for i, deletions in state.content_deleted:
            records[i].content_deleted = {content: table[at] for content, at in deletions.items()}
        self._entities = dict(zip(names, records, strict=True))
        if len(self._entities) != n:
            raise SnapshotError("the snapshot holds an entity twice")

    def _restore_relations(self, state: _Snapshot, table: list[_Stamp]) -> tuple[_Relation, ...]:
        names = state.names
        n = len(names)
        from_entities = _ints("I", state.from_entities)
        to_entities = _ints("I", state.to_entities)
        relation_types = _ints("I", state.relation_types)
        m = len(from_entities)
        if len(to_entities) != m or len(relation_types) != m:
            raise SnapshotError("the snapshot's relation columns do not line up")
        keys = list(
            zip(
                map(names.__getitem__, from_entities),
                map(names.__getitem__, to_entities),
                map(state.strings.__getitem__, relation_types),
                strict=True,
            )
        )
        relations = list(
            map(
                _Relation,
                keys,
                table[2 * n + 1 : 2 * n + m + 1],
                repeat(_PLAIN),  # base, but where listed
                repeat(_ZERO),  # deleted
                repeat(True),  # visible
            )
        )
        for j in state.hidden:
            relations[j].visible = False
        for j, base in state.bases:
            relations[j].base = base
        for j, at in state.relation_deleted:
            relations[j].deleted = table[at]
        for j, updates in state.updates:
            relations[j].updates = {
                field: (table[at], value) for field, (at, value) in updates.items()
            }
        self._relations = dict(zip(keys, relations, strict=True))
        if len(self._relations) != m:
            raise SnapshotError("the snapshot holds a relation twice")
        return tuple(relations)  # untracked by the first collection: never scanned again

    def _unpack(self, entity: _Entity) -> None:
        """Move the entity's packed occurrences into `occ`, before those added since."""
        assert entity.packed is not None
        packed = _OCCURRENCES_DECODER.decode(entity.packed)
        occ = dict(zip(packed.stamps, packed.contents, strict=True))
        occ.update(entity.occ)
        entity.occ = occ
        entity.packed = None

    # --- applying -------------------------------------------------------------------------

    def apply(self, envelope: Envelope) -> None:
        self.apply_all((envelope,))

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:  # noqa: PLR0915 (one flat loop)
        # A rebuild folds the whole log, so this loop is kept tight and flat (a call costs more
        # than most events' work): the three most common cases, an in-order observation, a
        # new entity and a new relation, are inlined; everything else dispatches on the
        # event's type through a dict of handlers. Schema and marker events have none and only
        # advance the position.
        get_handler = _HANDLERS.get
        entities = self._entities
        get_entity = entities.get
        new_entity = entities.setdefault
        new_relation = self._relations.setdefault
        observation_added = ObservationAdded
        entity_created = EntityCreated
        relation_created = RelationCreated
        stamp_of = _Stamp
        # Every envelope brings its own copy of its origin's id: stamps share one instead, which
        # keeps a fold's memory (and cache misses) down and makes equal origins identical.
        same_origin = self._origins.setdefault
        position = self.position
        # Observations mostly follow their entity's creation or each other: remember the last
        # record looked up (a name's record never changes once made).
        last_name = ""
        last: _Entity | None = None
        try:
            for envelope in envelopes:
                event: Any = envelope.event
                kind = type(event)
                origin = envelope.origin
                stamp = stamp_of(envelope.hlc, same_origin(origin, origin), envelope.origin_seq)
                if envelope.position > position:  # noqa: PLR1730 (a call costs more, per event)
                    position = envelope.position
                if kind is observation_added:
                    if event.entity == last_name:
                        entity = last
                    else:
                        entity = get_entity(event.entity)
                        if entity is not None:
                            last_name = event.entity
                            last = entity
                    if entity is not None and stamp > entity.watermark:
                        entity.occ[stamp] = event.content
                        entity.watermark = stamp
                    else:
                        self._observation_added(event, stamp)
                    continue
                if kind is entity_created:
                    # A name's first creation; a record made in vain when there was one is
                    # cheaper than looking the name up twice.
                    entity = _Entity(stamp, event.entity_type, stamp, stamp, True)
                    if new_entity(event.name, entity) is entity:
                        last_name = event.name
                        last = entity
                        self._alive += 1
                        if stamp > self._entities_last:
                            self._entities_last = stamp
                        else:
                            self._entities_unsorted = True
                        continue
                elif (
                    kind is relation_created
                    and stamp > self._relations_last
                    and stamp > self._entities_last
                ):
                    # Newer than every creation: if the key is new and both endpoints are
                    # known, it is visible iff both are alive (see _relation_created).
                    key = (event.from_entity, event.to_entity, event.relation_type)
                    src = get_entity(key[0])
                    dst = get_entity(key[1])
                    if src is not None and dst is not None:
                        visible = src.alive and dst.alive
                        relation = _Relation(key, stamp, event, _ZERO, visible)
                        if new_relation(key, relation) is relation:
                            self._relations_last = stamp
                            if visible:
                                self._visible += 1
                            _add_edge(src, relation)
                            if dst is not src:
                                _add_edge(dst, relation)
                            continue
                handler = get_handler(kind)
                if handler is not None:
                    handler(self, event, stamp)
        finally:
            self.position = position

    # --- entities -------------------------------------------------------------------------

    def _entity_created(self, event: EntityCreated, stamp: _Stamp) -> None:
        # A new name is handled inline in apply_all: here the name has a record already.
        entities = self._entities
        entity = entities[event.name]
        if stamp <= entity.created:
            return  # an older creation loses every write to the newer one
        was_alive = entity.alive
        entity.created = stamp
        if stamp > entity.type_stamp:
            entity.entity_type = event.entity_type
            entity.type_stamp = stamp
        self._prune(entity, stamp)
        alive = entity.alive = stamp > entity.deleted
        if alive is not was_alive:
            self._alive += 1 if alive else -1
        del entities[event.name]  # listing order follows the latest creation: move to the end
        entities[event.name] = entity
        if stamp > self._entities_last:
            self._entities_last = stamp
        else:
            self._entities_unsorted = True
        if entity.edges:
            for relation in entity.edges:
                self._refresh(relation)

    def _entity_updated(self, event: EntityUpdated, stamp: _Stamp) -> None:
        if event.entity_type is None:
            return
        entity = self._entity_or_stub(event.name)
        if stamp > entity.type_stamp:
            entity.entity_type = event.entity_type
            entity.type_stamp = stamp

    def _entity_deleted(self, event: EntityDeleted, stamp: _Stamp) -> None:
        entity = self._entity_or_stub(event.name)
        if stamp <= entity.deleted:
            return
        entity.deleted = stamp
        self._prune(entity, stamp)
        if entity.alive and stamp > entity.created:
            entity.alive = False
            self._alive -= 1
            if entity.edges:
                for relation in entity.edges:
                    self._refresh(relation)

    def _entity_or_stub(self, name: str) -> _Entity:
        entity = self._entities.get(name)
        if entity is None:
            # Never created (yet): holds registers and tombstones; listings skip it.
            entity = self._entities[name] = _Entity(_ZERO, "", _ZERO, _ZERO)
        return entity

    def _prune(self, entity: _Entity, threshold: _Stamp) -> None:
        """Drop what nothing stamped before `threshold` (a creation or deletion) can revive."""
        entity.watermark = max(entity.watermark, threshold)
        if entity.packed is not None:
            self._unpack(entity)
        if entity.occ:
            entity.occ = {s: c for s, c in entity.occ.items() if s > threshold}
        if entity.content_deleted:
            # An add older than the threshold is rejected by the threshold itself.
            kept = {c: s for c, s in entity.content_deleted.items() if s > threshold}
            entity.content_deleted = kept or None

    # --- observations ---------------------------------------------------------------------

    def _observation_added(self, event: ObservationAdded, stamp: _Stamp) -> None:
        entity = self._entity_or_stub(event.entity)
        if stamp < entity.created or stamp < entity.deleted:
            return
        content = event.content
        if entity.content_deleted is not None:
            deleted_at = entity.content_deleted.get(content)
            if deleted_at is not None and stamp < deleted_at:
                return
        if stamp > entity.watermark:
            entity.occ[stamp] = content
            entity.watermark = stamp
            return
        if entity.packed is not None:
            self._unpack(entity)
        if stamp not in entity.occ:
            entity.occ[stamp] = content
            entity.occ_unsorted = True

    def _observation_deleted(self, event: ObservationDeleted, stamp: _Stamp) -> None:
        entity = self._entity_or_stub(event.entity)
        content = event.content
        content_deleted = entity.content_deleted
        if content_deleted is None:
            content_deleted = entity.content_deleted = {}
        elif stamp <= content_deleted.get(content, _ZERO):
            return
        content_deleted[content] = stamp
        entity.watermark = max(entity.watermark, stamp)
        if entity.packed is not None:
            self._unpack(entity)
        occ = entity.occ
        if content in occ.values():
            entity.occ = {s: c for s, c in occ.items() if c != content or s > stamp}

    # --- relations ------------------------------------------------------------------------

    def _relation_or_stub(self, key: RelationKey) -> _Relation:
        relation = self._relations.get(key)
        if relation is None:
            # Never created (yet): holds registers and tombstones; listings skip it.
            relation = self._relations[key] = _Relation(key)
            src = self._entity_or_stub(key[0])
            dst = self._entity_or_stub(key[1])
            _add_edge(src, relation)
            if dst is not src:
                _add_edge(dst, relation)
        return relation

    def _relation_created(self, event: RelationCreated, stamp: _Stamp) -> None:
        from_entity = event.from_entity
        to_entity = event.to_entity
        key = (from_entity, to_entity, event.relation_type)
        relations = self._relations
        relation = relations.get(key)
        if relation is None:
            src = self._entities.get(from_entity)
            dst = self._entities.get(to_entity)
            if (
                src is not None
                and dst is not None
                and stamp > self._relations_last
                and stamp > self._entities_last
            ):
                # The usual case: known endpoints, in order and newer than every creation, so
                # visible iff both endpoints are alive.
                visible = src.alive and dst.alive
                relation = relations[key] = _Relation(key, stamp, event, _ZERO, visible)
                _add_edge(src, relation)
                if dst is not src:
                    _add_edge(dst, relation)
                self._relations_last = stamp
                if visible:
                    self._visible += 1
                return
            relation = self._relation_or_stub(key)
        if stamp <= relation.created:
            return  # an older creation loses every write to the newer one
        relation.created = stamp
        relation.base = event
        if relation.updates:
            kept = {f: write for f, write in relation.updates.items() if write[0] > stamp}
            relation.updates = kept or None
        del relations[key]  # listing order follows the latest creation: move to the end
        relations[key] = relation
        if stamp > self._relations_last:
            self._relations_last = stamp
        else:
            self._relations_unsorted = True
        self._refresh(relation)

    def _relation_updated(self, event: RelationUpdated, stamp: _Stamp) -> None:
        relation = self._relation_or_stub((event.from_entity, event.to_entity, event.relation_type))
        if stamp < relation.created:
            return  # older than the latest creation, which wrote every field
        updates = relation.updates
        for field in _RELATION_ATTRIBUTES:
            value = getattr(event, field)
            if value is None:
                continue
            if updates is None:
                updates = relation.updates = {}
            written = updates.get(field)
            if written is None or stamp > written[0]:
                updates[field] = (stamp, value)

    def _relation_deleted(self, event: RelationDeleted, stamp: _Stamp) -> None:
        relation = self._relation_or_stub((event.from_entity, event.to_entity, event.relation_type))
        if stamp > relation.deleted:
            relation.deleted = stamp
            self._refresh(relation)

    def _refresh(self, relation: _Relation) -> None:
        from_entity, to_entity, _ = relation.key
        self._set_visible(relation, self._entities[from_entity], self._entities[to_entity])

    def _set_visible(self, relation: _Relation, src: _Entity, dst: _Entity) -> None:
        created = relation.created
        visible = (
            src.alive
            and dst.alive
            and created > relation.deleted
            # Newer than every creation (the usual case) spares reading the endpoints' stamps.
            and (created > self._entities_last or (created > src.created and created > dst.created))
        )
        if visible is not relation.visible:
            relation.visible = visible
            self._visible += 1 if visible else -1

    # --- reads ----------------------------------------------------------------------------

    def _alive_entity(self, name: str) -> _Entity | None:
        entity = self._entities.get(name)
        return entity if entity is not None and entity.alive else None

    def _contents(self, entity: _Entity) -> list[str]:
        if entity.packed is not None:
            if not entity.occ_unsorted:
                # A read decodes the contents alone and leaves the stamps packed.
                contents = _CONTENTS_DECODER.decode(entity.packed).contents
                contents += entity.occ.values()
                return contents
            self._unpack(entity)
        if entity.occ_unsorted:
            entity.occ = dict(sorted(entity.occ.items()))
            entity.occ_unsorted = False
        return list(entity.occ.values())

    @staticmethod
    def _relation_view(relation: _Relation) -> RelationView:
        base = relation.base
        assert base is not None, "a visible relation has been created"
        if base is _PLAIN:
            view = RelationView(*relation.key)
        else:
            view = RelationView(
                base.from_entity,
                base.to_entity,
                base.relation_type,
                base.weight,
                dict(base.properties) if base.properties else {},
                base.valid_at,
                base.invalid_at,
                base.source_session,
                base.source_transcript,
                base.source_type,
            )
        if relation.updates:
            written = {field: value for field, (_, value) in relation.updates.items()}
            if "properties" in written:
                written["properties"] = dict(written["properties"])
            view = msgspec.structs.replace(view, **written)
        return view

    def has_entity(self, name: str) -> bool:
        return self._alive_entity(name) is not None

    def entity(self, name: str) -> EntityView | None:
        entity = self._alive_entity(name)
        return (
            None if entity is None else EntityView(name, entity.entity_type, self._contents(entity))
        )

    def entity_type(self, name: str) -> str | None:
        entity = self._alive_entity(name)
        return None if entity is None else entity.entity_type

    def observations(self, name: str) -> list[str]:
        """The entity's visible observation contents in stamp order; [] if it is not alive."""
        entity = self._alive_entity(name)
        return [] if entity is None else self._contents(entity)

    def has_observation(self, name: str, content: str) -> bool:
        entity = self._alive_entity(name)
        if entity is None:
            return False
        return content in entity.occ.values() or (
            entity.packed is not None
            and content in _CONTENTS_DECODER.decode(entity.packed).contents
        )

    def creation_key(self, name: str) -> Stamp | None:
        """The stamp of an alive entity's latest creation (it orders listings); else None."""
        entity = self._alive_entity(name)
        if entity is None:
            return None
        created = entity.created
        return (created.hlc, created.origin, created.origin_seq)

    def entities_named(
        self, names: Iterable[str], *, listing_order: bool = False
    ) -> list[EntityView]:
        """The alive entities among `names`, each once: in the order given, or in listing
        order (as open_nodes answers); missing names are skipped."""
        found: dict[str, _Entity] = {}
        for name in names:
            entity = self._alive_entity(name)
            if entity is not None:
                found.setdefault(name, entity)
        items = (
            sorted(found.items(), key=lambda kv: kv[1].created) if listing_order else found.items()
        )
        return [
            EntityView(name, entity.entity_type, self._contents(entity)) for name, entity in items
        ]

    def entities(self) -> Iterator[EntityView]:
        """Alive entities in order of their latest creation stamp."""
        if self._entities_unsorted:
            self._entities = dict(sorted(self._entities.items(), key=lambda kv: kv[1].created))
            self._entities_unsorted = False
        for name, entity in tuple(self._entities.items()):
            if entity.alive:
                yield EntityView(name, entity.entity_type, self._contents(entity))

    def entity_names(self) -> list[str]:
        """Names of the alive entities (in no promised order: cheaper than `entities()`)."""
        return [name for name, entity in self._entities.items() if entity.alive]

    def entity_count(self) -> int:
        return self._alive

    def relations(self) -> Iterator[RelationView]:
        """Visible relations in order of their latest creation stamp."""
        if self._relations_unsorted:
            self._relations = dict(sorted(self._relations.items(), key=lambda kv: kv[1].created))
            self._relations_unsorted = False
        for relation in tuple(self._relations.values()):
            if relation.visible:
                yield self._relation_view(relation)

    def relation_count(self) -> int:
        return self._visible

    def has_relation(self, from_entity: str, to_entity: str, relation_type: str) -> bool:
        relation = self._relations.get((from_entity, to_entity, relation_type))
        return relation is not None and relation.visible

    def relation(self, from_entity: str, to_entity: str, relation_type: str) -> RelationView | None:
        """The visible relation with this key, with its attributes; else None."""
        relation = self._relations.get((from_entity, to_entity, relation_type))
        return self._relation_view(relation) if relation is not None and relation.visible else None

    def relations_of(self, name: str) -> list[RelationView]:
        """Visible relations with `name` as either endpoint, in creation order."""
        return self.relations_of_any((name,))

    def relation_keys(self) -> list[RelationKey]:
        """(from, to, type) of the visible relations in listing order: `relations()` without
        building attribute views, for readers that need only the keys."""
        if self._relations_unsorted:
            self._relations = dict(sorted(self._relations.items(), key=lambda kv: kv[1].created))
            self._relations_unsorted = False
        return [key for key, relation in self._relations.items() if relation.visible]

    def relation_keys_of_any(self, names: Iterable[str]) -> list[RelationKey]:
        """Keys of `relations_of_any(names)`, in the same order."""
        return [relation.key for relation in self._incident(names)]

    def relations_of_any(self, names: Iterable[str]) -> list[RelationView]:
        """Visible relations with either endpoint in `names`, each once, in creation order."""
        return [self._relation_view(relation) for relation in self._incident(names)]

    def _incident(self, names: Iterable[str]) -> list[_Relation]:
        found: dict[_Relation, None] = {}
        entities = self._entities
        for name in names:
            entity = entities.get(name)
            if entity is not None and entity.edges:
                for relation in entity.edges:
                    if relation.visible:
                        found[relation] = None
        return sorted(found, key=lambda relation: relation.created)

    def snapshot(self) -> GraphSnapshot:
        """The visible graph as one comparable value (used to compare folds for equality)."""
        return GraphSnapshot(tuple(self.entities()), tuple(self.relations()))


_HANDLERS: dict[type, Callable[[GraphProjection, Any, _Stamp], None]] = {
    EntityCreated: GraphProjection._entity_created,
    EntityUpdated: GraphProjection._entity_updated,
    EntityDeleted: GraphProjection._entity_deleted,
    ObservationAdded: GraphProjection._observation_added,
    ObservationDeleted: GraphProjection._observation_deleted,
    RelationCreated: GraphProjection._relation_created,
    RelationUpdated: GraphProjection._relation_updated,
    RelationDeleted: GraphProjection._relation_deleted,
}
