"""GraphProjection's fold records: stamps, entities, relations and their adjacency."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
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


SMALL_EDGES = 8
"""Incident relations held as a tuple up to this many, then as a dict."""


class PackedEdges(msgspec.Struct, gc=False):
    """An entity's incident relations as a restore left them: indexes into the relations it
    restored, resolved only when iterated, then those added since, held as a fold holds them
    (see add_edge). Resolving them on the first add instead cost a fold after a restore more
    than building them all cost the restore."""

    relations: tuple[RelationRecord, ...]  # shared by every entity of the restore, as is `indexes`
    indexes: array[int]
    start: int
    stop: int
    edges: tuple[RelationRecord, ...] | dict[RelationRecord, None] | None = None

    def __iter__(self) -> Iterator[RelationRecord]:
        restored = map(self.relations.__getitem__, self.indexes[self.start : self.stop])
        return chain(restored, self.edges) if self.edges else restored

    def __len__(self) -> int:
        return self.stop - self.start + (len(self.edges) if self.edges else 0)


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
    relations: dict[RelationKey, RelationRecord] = field(default_factory=dict)
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
