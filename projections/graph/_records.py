"""GraphProjection's fold records: stamps, entities, relations and their adjacency."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

from eventstore.events import DecayApplied, EntityCreated, RelationCreated

RelationKey = tuple[str, str, str]
"""(from_entity, to_entity, relation_type)"""


# Fold records are invisible to the cycle collector (gc=False): a replay creates millions of
# them, and full collections over them would cost more than the fold itself. They must never
# form a cycle, so a relation names its endpoints instead of pointing at their records.


class FoldStamp(msgspec.Struct, frozen=True, order=True, gc=False, array_like=True):
    """A stamp `(hlc, origin, origin_seq)`, ordered like the tuple; as an untracked object it
    keeps the dicts it keys untracked too."""

    hlc: int
    origin: str
    origin_seq: int


ZERO = FoldStamp(0, "", 0)


class EntityRecord(msgspec.Struct, gc=False, array_like=True):
    """Fold state of one entity name, alive or not (tombstones are kept for LWW)."""

    created: FoldStamp
    entity_type: str
    type_stamp: FoldStamp
    # The newest stamp of anything that gates or orders occurrences (creation, deletion, content
    # deletions, stored occurrences): an occurrence newer than it is visible while the entity
    # is alive, and is simply appended, which keeps `occ` in stamp order.
    watermark: FoldStamp
    alive: bool = False  # created > deleted, kept as a flag so checks need not touch stamps
    deleted: FoldStamp = ZERO
    # Stored occurrences, stamp -> content. Invariant: each is newer than `created`, `deleted`
    # and its content's latest deletion, so it is visible exactly while the entity is alive.
    # None while there are none outside `packed`: an empty dict per record (64 bytes) was a
    # fifteenth of a restored graph, where every record's occurrences are packed.
    occ: dict[FoldStamp, str] | None = None
    occ_unsorted: bool = False
    content_deleted: dict[str, FoldStamp] | None = None
    # Occurrences restored from a snapshot and not needed since (an encoded Occurrences): all
    # are at or below the watermark, so they precede every one in `occ`, where in-order adds
    # still go. Anything else that touches `occ` unpacks them first (GraphProjection._unpack);
    # reads of the contents decode them without unpacking; a snapshot packs `occ` into them.
    packed: bytes | None = None
    # Incident relations: a small tuple while there are few (cheap to build during a replay),
    # then an insertion-ordered set; after a restore, those it restored packed, then the rest.
    # Only tombstone collection (projections.graph._collect) removes relation records.
    edges: tuple[RelationRecord, ...] | dict[RelationRecord, None] | PackedEdges | None = None
    # The graph attributes (ENTITY_ATTRIBUTES) as LWW registers, field -> (stamp, value), only
    # those written since the latest creation (which writes its own at `created`); a value of
    # None is a write that cleared the attribute. None: every attribute at its default.
    attrs: dict[str, tuple[FoldStamp, Any]] | None = None
    # The record's own key in GraphState.entities: relation keys share this string instead of
    # each holding its event's copy of the name (a tenth of a fold's memory). Not in snapshots:
    # a restore sets it from the names column.
    name: str = ""


# --- records a restore made: stamps kept in the snapshot's columns until read ---------------

# What a restored record's stamp field holds until its first read: the stamp itself is in the
# restore's columns (RestoredColumns). Never compared: readers go through the properties below.
LAZY = FoldStamp(-1, "", -1)


class RestoredColumns:
    """A restore's stamp table kept as the snapshot's columns, with a stamp object made only
    when a record's is read. Index 0 is the zero stamp; then each entity's `created`, each
    entity's `watermark`, each relation's `created` (see projections.graph._codec._SnapshotV3).
    A stamp object and its sequence's int were 80 bytes each, three an entity: a fifth of a
    restored graph, mostly never read. The columns are as narrow as their values allow: a
    stamp of an import or of batched writes takes 7 bytes (a clock index, an origin index, a
    sequence), not 24."""

    __slots__ = (
        "clocks",
        "edges",
        "entities",
        "from_entities",
        "hlc",
        "names",
        "origin",
        "origins",
        "relation_types",
        "seq",
        "strings",
        "to_entities",
    )

    def __init__(
        self, hlc: array[int], origin: array[int], seq: array[int], origins: list[str], n: int
    ) -> None:
        # A relation's key, made when first read (see RestoredRelationRecord): its endpoints
        # index `names` (the entities dict's own strings), its type `strings`. Set by the
        # restore once the relations are read.
        # Tuples: untracked by the collector once seen, where a list of a million names was
        # walked by every full collection (and first reads make objects that set them off).
        self.names: tuple[str, ...] = ()
        self.strings: tuple[str, ...] = ()
        self.from_entities = self.to_entities = self.relation_types = array("I")
        # Each entity's incident relations (see RestoredEntityRecord.edges): set by the restore.
        self.edges: RestoredEdges | None = None
        # A transaction's events share one clock reading, so an import's stamps hold ~100
        # distinct ones: `hlc` indexes them (which equal stamps made later share, as the
        # fold shares a transaction's), unless they are too many for that to be smaller.
        distinct = list(dict.fromkeys(hlc))
        self.clocks: list[int] | None = None
        if len(distinct) <= 0xFFFF and len(distinct) < len(hlc) // 4:
            at = {clock: i for i, clock in enumerate(distinct)}
            self.clocks = distinct
            hlc = array("H", map(at.__getitem__, hlc))
        self.hlc = hlc
        self.origin = array("B", origin) if len(origins) <= 0x100 else origin
        self.seq = array("I", seq) if seq and min(seq) >= 0 and max(seq) <= 0xFFFFFFFF else seq
        self.origins = origins  # the GraphState's own strings, so stamps share them
        self.entities = n

    def columns(self, index: int) -> tuple[int, str, int]:
        """The stamp at `index` (not 0) as its three values, no stamp made."""
        k = index - 1
        clocks = self.clocks
        hlc = self.hlc[k] if clocks is None else clocks[self.hlc[k]]
        return hlc, self.origins[self.origin[k]], self.seq[k]

    def at(self, index: int) -> FoldStamp:
        """The stamp at `index` of the table, made now."""
        return ZERO if index == 0 else self.stamp(index - 1)

    def stamp(self, k: int) -> FoldStamp:
        """Row `k` of the columns (the table's index `k + 1`) as a stamp, made now. A first
        read of a restored record's stamp: one call, the columns read inline (random reads
        of a large graph are nearly all first reads)."""
        clocks = self.clocks
        return FoldStamp(
            self.hlc[k] if clocks is None else clocks[self.hlc[k]],
            self.origins[self.origin[k]],
            self.seq[k],
        )

    def relation_key(self, row: int) -> RelationKey:
        """Relation `row`'s key, made now."""
        names = self.names
        return (
            names[self.from_entities[row]],
            names[self.to_entities[row]],
            self.strings[self.relation_types[row]],
        )


NO_STAMPS = RestoredColumns(array("q"), array("I"), array("q"), [], 0)

_ENTITY_CREATED = EntityRecord.__dict__["created"]  # the slots themselves, under the properties
_ENTITY_EDGES = EntityRecord.__dict__["edges"]
_ENTITY_TYPE_STAMP = EntityRecord.__dict__["type_stamp"]
_ENTITY_WATERMARK = EntityRecord.__dict__["watermark"]


class RestoredEntityRecord(EntityRecord, gc=False, array_like=True):
    """An EntityRecord a restore made: `created`, `watermark` and `type_stamp` stay LAZY in
    their slots (row `row` of `stamps`) until first read, then are held as the fold's are.
    `type_stamp` LAZY means `created`'s, as a restore lists it only where it differs. `edges`
    holds LAZY_EDGES until a relation is added: each read makes the row's PackedEdges (or
    None, for none) and drops it, as a `PackedEdges` an entity, held, was 40 bytes of every
    restored entity, and reading an entity's relations does not call for keeping one."""

    row: int = 0
    stamps: RestoredColumns = NO_STAMPS

    @property  # type: ignore[misc]
    def edges(self) -> tuple[RelationRecord, ...] | dict[RelationRecord, None] | PackedEdges | None:
        edges: tuple[RelationRecord, ...] | dict[RelationRecord, None] | PackedEdges | None
        edges = _ENTITY_EDGES.__get__(self)
        if edges is LAZY_EDGES:
            restored = self.stamps.edges
            assert restored is not None, "a restore sets its columns' edges"
            row = self.row
            starts = restored.starts
            return PackedEdges(restored, row) if starts[row + 1] != starts[row] else None
        return edges

    @edges.setter
    def edges(
        self, edges: tuple[RelationRecord, ...] | dict[RelationRecord, None] | PackedEdges | None
    ) -> None:
        _ENTITY_EDGES.__set__(self, edges)

    @property  # type: ignore[misc]
    def created(self) -> FoldStamp:
        stamp: FoldStamp = _ENTITY_CREATED.__get__(self)
        if stamp is LAZY:
            stamp = self.stamps.stamp(self.row)
            _ENTITY_CREATED.__set__(self, stamp)
        return stamp

    @created.setter
    def created(self, stamp: FoldStamp) -> None:
        if _ENTITY_TYPE_STAMP.__get__(self) is LAZY:
            _ENTITY_TYPE_STAMP.__set__(self, self.created)  # it meant the old creation's
        _ENTITY_CREATED.__set__(self, stamp)

    @property  # type: ignore[misc]
    def type_stamp(self) -> FoldStamp:
        stamp: FoldStamp = _ENTITY_TYPE_STAMP.__get__(self)
        if stamp is LAZY:
            stamp = self.created
            _ENTITY_TYPE_STAMP.__set__(self, stamp)
        return stamp

    @type_stamp.setter
    def type_stamp(self, stamp: FoldStamp) -> None:
        _ENTITY_TYPE_STAMP.__set__(self, stamp)

    @property  # type: ignore[misc]
    def watermark(self) -> FoldStamp:
        stamp: FoldStamp = _ENTITY_WATERMARK.__get__(self)
        if stamp is LAZY:
            stamps = self.stamps
            stamp = stamps.stamp(stamps.entities + self.row)
            _ENTITY_WATERMARK.__set__(self, stamp)
        return stamp

    @watermark.setter
    def watermark(self, stamp: FoldStamp) -> None:
        _ENTITY_WATERMARK.__set__(self, stamp)


ENTITY_ATTRIBUTES = (
    "confidence",
    "times_mentioned",
    "last_seen",
    "subtype",
    "source_file",
    "aliases",
    "properties",
)
"""The entity attributes EntityCreated and EntityUpdated write (see eventstore.events)."""


def creation_attrs(event: EntityCreated, stamp: FoldStamp) -> dict[str, tuple[FoldStamp, Any]]:
    """The registers a creation writes: its attributes not at their defaults."""
    written: dict[str, tuple[FoldStamp, Any]] = {}
    for name in ENTITY_ATTRIBUTES:
        value = getattr(event, name)
        if value is not None and value not in ([], {}):
            written[name] = (stamp, value)
    return written


def aliases_of(entity: EntityRecord) -> list[str]:
    """The entity's aliases register: [] when unset or cleared."""
    written = entity.attrs.get("aliases") if entity.attrs else None
    return [] if written is None or written[1] is None else list(written[1])


def has_attributes(event: EntityCreated) -> bool:
    """Whether a creation sets any attribute (rarely: most leave them all at defaults)."""
    return (
        event.confidence is not None
        or event.times_mentioned is not None
        or event.last_seen is not None
        or event.subtype is not None
        or event.source_file is not None
        or bool(event.aliases)
        or bool(event.properties)
    )


class RelationRecord(msgspec.Struct, gc=False, eq=False, array_like=True):
    """Fold state of one relation key; `visible` is kept current by every event touching it."""

    key: RelationKey
    created: FoldStamp = ZERO
    # The latest creation, which wrote every attribute at `created`.
    base: RelationCreated | None = None
    deleted: FoldStamp = ZERO
    visible: bool = False
    # Attributes written by a RelationUpdated newer than `created`: field -> (stamp, value).
    updates: dict[str, tuple[FoldStamp, Any]] | None = None


_RELATION_CREATED = RelationRecord.__dict__["created"]
_RELATION_KEY = RelationRecord.__dict__["key"]
# What a restored relation's `key` holds until its first read (compared by identity).
LAZY_KEY: RelationKey = ("", "", "")


class RestoredRelationRecord(RelationRecord, gc=False, eq=False, array_like=True):
    """A RelationRecord a restore made: `created` stays LAZY and `key` LAZY_KEY (row `row`
    of `stamps`' relations) until first read. The key tuple was 64 bytes a relation, and the
    dict keyed by it (GraphState.relations) is built only when a key is looked up."""

    row: int = 0
    stamps: RestoredColumns = NO_STAMPS

    @property  # type: ignore[misc]
    def key(self) -> RelationKey:
        key: RelationKey = _RELATION_KEY.__get__(self)
        if key is LAZY_KEY:
            # relation_key inline: the first read of a key is most of a first open_nodes.
            stamps, row = self.stamps, self.row
            names = stamps.names
            key = (
                names[stamps.from_entities[row]],
                names[stamps.to_entities[row]],
                stamps.strings[stamps.relation_types[row]],
            )
            _RELATION_KEY.__set__(self, key)
        return key

    @key.setter
    def key(self, key: RelationKey) -> None:
        _RELATION_KEY.__set__(self, key)

    @property  # type: ignore[misc]
    def created(self) -> FoldStamp:
        stamp: FoldStamp = _RELATION_CREATED.__get__(self)
        if stamp is LAZY:
            stamps = self.stamps
            stamp = stamps.stamp(2 * stamps.entities + self.row)
            _RELATION_CREATED.__set__(self, stamp)
        return stamp

    @created.setter
    def created(self, stamp: FoldStamp) -> None:
        _RELATION_CREATED.__set__(self, stamp)


SMALL_EDGES = 8
"""Incident relations held as a tuple up to this many, then as a dict."""


class RestoredEdges:
    """What every PackedEdges of one restore shares: the relations it restored, and each
    entity's incident ones as indexes into them (entity i's: `starts[i]` to `starts[i + 1]`)."""

    __slots__ = ("indexes", "relations", "starts")

    def __init__(
        self, relations: tuple[RelationRecord, ...], indexes: array[int], starts: array[int]
    ) -> None:
        self.relations = relations
        self.indexes = indexes
        self.starts = starts


class PackedEdges(msgspec.Struct, gc=False):
    """An entity's incident relations as a restore left them: its row's indexes into the
    relations it restored, resolved only when iterated, then those added since, held as a fold
    holds them (see add_edge). Resolving them on the first add instead cost a fold after a
    restore more than building them all cost the restore. Its row's offsets are in the shared
    `restored` (two int objects an entity, held here, were a twentieth of a restored graph)."""

    restored: RestoredEdges
    row: int  # the record's own `row` object
    edges: tuple[RelationRecord, ...] | dict[RelationRecord, None] | None = None

    def __iter__(self) -> Iterator[RelationRecord]:
        restored = self.restored
        starts = restored.starts
        row = self.row
        held = map(restored.relations.__getitem__, restored.indexes[starts[row] : starts[row + 1]])
        return chain(held, self.edges) if self.edges else held

    def __len__(self) -> int:
        starts = self.restored.starts
        row = self.row
        return starts[row + 1] - starts[row] + (len(self.edges) if self.edges else 0)


# What a restored record's `edges` holds until a relation is added (compared by identity).
LAZY_EDGES = PackedEdges(RestoredEdges((), array("I"), array("I", [0, 0])), 0)


def add_edge(holder: EntityRecord | PackedEdges, relation: RelationRecord) -> None:
    edges = holder.edges
    if edges is None:
        holder.edges = (relation,)
    elif isinstance(edges, tuple):
        if len(edges) < SMALL_EDGES:
            holder.edges = (*edges, relation)
        else:
            holder.edges = dict.fromkeys((*edges, relation))
    elif isinstance(edges, dict):
        edges[relation] = None
    else:  # restored ones: the new one joins those added since
        add_edge(edges, relation)
        # Kept from now on: a restored record's read made it (RestoredEntityRecord.edges).
        holder.edges = edges


# --- packed occurrences and relation bases, as restores and snapshots hold them ------------


class Occurrences(msgspec.Struct, gc=False, array_like=True):
    """One entity's stored occurrences in `occ` order, encoded and decoded in one call each:
    the contents, then the stamps as columns. An origin is an index into
    `GraphState.packed_origins`: the origin's string in every packed stamp was a fifth of a
    restored graph's packed bytes (version 4; see OccurrencesV3)."""

    contents: list[str]
    hlcs: list[int]
    origins: list[int]
    seqs: list[int]


class OccurrencesV3(msgspec.Struct, gc=False, array_like=True):
    """Occurrences as graph version 3 packed them (each stamp whole, its origin's string
    included): read only to convert a version 3 snapshot."""

    contents: list[str]
    stamps: list[FoldStamp]


class Contents(msgspec.Struct, gc=False, array_like=True):
    """An Occurrences' first column alone, all a read needs (the other columns are skipped)."""

    contents: list[str]


OCCURRENCES_DECODER = msgspec.msgpack.Decoder(Occurrences)
OCCURRENCES_V3_DECODER = msgspec.msgpack.Decoder(OccurrencesV3)
CONTENTS_DECODER = msgspec.msgpack.Decoder(Contents)

# The base of a restored relation that the plain creation of its key made: reads build the
# view from the key (the record never holds a RelationCreated whose strings are empty).
PLAIN = RelationCreated(from_entity="", to_entity="", relation_type="")
# What a plain creation holds after its key, field by field.
PLAIN_TAIL = astuple(PLAIN)[3:]


_PLAIN_CHECKED = (
    "weight",
    "properties",
    "valid_at",
    "invalid_at",
    "source_session",
    "source_transcript",
    "source_type",
    "evidence",
    "ingested_at",
    "last_confirmed",
)
# held_base tests these fields one by one: a field added to the event must be added there too.
assert RelationCreated.__struct_fields__[3:] == _PLAIN_CHECKED, "update held_base"


def held_base(event: RelationCreated) -> RelationCreated:
    """What a relation record holds as the base `event` wrote: for a plain creation (every
    attribute at its default, the usual case) the shared PLAIN, as a restore holds it, so a
    long-running fold keeps no event object (and its properties dict) per relation."""
    plain = (
        # Field by field: a third of the time astuple takes, on a fold's hot path.
        event.weight == 1.0
        and not event.properties
        and event.valid_at is None
        and event.invalid_at is None
        and event.source_session is None
        and event.source_transcript is None
        and event.source_type is None
        and event.evidence is None
        and event.ingested_at is None
        and event.last_confirmed is None
    )
    return PLAIN if plain else event


@dataclass(slots=True, eq=False)
class GraphState:
    """GraphProjection's complete fold state: what a snapshot encodes and a restore decodes.

    The projection holds one and folds into it; the snapshot codec reads and builds one, and
    never touches the projection. Derived indexes (the ordered name index) are not part of it.
    """

    position: int = 0
    # Listing order: by latest creation stamp, or insertion order while marked unsorted.
    entities: dict[str, EntityRecord] = field(default_factory=dict)
    entities_last: FoldStamp = ZERO  # the newest entity creation stamp folded
    entities_unsorted: bool = False
    alive: int = 0
    # By key, in listing order; None while a restore's relations are not looked up by key:
    # `relations` builds it from `unkeyed` on first use (a dict slot and a key tuple were
    # 116 bytes a relation, and a served graph that only reads or adds entities and
    # observations never needs it; whole-graph answers list the keys from the restore's
    # columns instead, projections.restored_keys).
    keyed: dict[RelationKey, RelationRecord] | None = field(default_factory=dict)
    unkeyed: tuple[RestoredRelationRecord, ...] = ()
    relations_last: FoldStamp = ZERO
    relations_unsorted: bool = False
    visible: int = 0
    # Every origin folded, each string once: stamps share it.
    origins: dict[str, str] = field(default_factory=dict)
    # The origin table the `packed` occurrences' origin indexes point into: the sorted origins
    # as of the last snapshot or restore (a snapshot renumbers the packed ones if it changed).
    packed_origins: list[str] = field(default_factory=list)
    # Every decay run folded, by stamp (a grow-only set: each run is kept, as reads derive a
    # decayed value from the newest run at or after an element's reference time).
    decay_runs: dict[FoldStamp, DecayApplied] = field(default_factory=dict)

    @property
    def relations(self) -> dict[RelationKey, RelationRecord]:
        """Every relation record by key, in listing order."""
        keyed = self.keyed
        if keyed is None:
            unkeyed = self.unkeyed
            keyed = self.keyed = dict(zip(map(_KEY_OF, unkeyed), unkeyed, strict=True))
            self.unkeyed = ()
        return keyed

    @relations.setter
    def relations(self, keyed: dict[RelationKey, RelationRecord]) -> None:
        self.keyed = keyed
        self.unkeyed = ()

    def relation_records(self) -> list[RelationRecord]:
        """Every relation record in listing order, without keying them."""
        return list(self.unkeyed if self.keyed is None else self.keyed.values())


_KEY_OF = attrgetter("key")
