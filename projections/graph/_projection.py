"""GraphProjection: the CRDT fold of the log into entities, observations and relations.

Every element is decided by last-writer-wins on the stamp `(hlc, origin, origin_seq)`, so the
read model depends only on the set of envelopes applied, never on their order, grouping or
repetition (docs/architecture.md §3):

- an entity is alive iff its latest EntityCreated is newer than its latest EntityDeleted. Its
  type is an LWW register (EntityCreated, EntityUpdated). A creation starts it fresh: nothing
  stamped before it (observations, type writes, relations) shows through. Its graph attributes
  (confidence, times_mentioned, last_seen, subtype, source_file, aliases, properties) are LWW
  registers too, each written by its creation and by EntityUpdated newer than it; a name in
  `cleared` is a write of "not set". Unset, they read as the defaults (last_seen: the creation's
  stamp time).
- each ObservationAdded is one occurrence, visible iff the entity is alive and the occurrence
  is newer than its latest creation and its content's latest ObservationDeleted.
- a relation (from, to, type) is visible iff its latest RelationCreated is newer than its latest
  RelationDeleted and than both endpoints' latest creations, and both endpoints are alive. Its
  attributes are per-field LWW registers (RelationCreated writes all, RelationUpdated some,
  `cleared` included); ingested_at and last_confirmed unset read as the creation's stamp time.

What can never become visible again is dropped; the newest stamps are kept, so late older
events are still rejected. Listings follow the latest creation stamp. Events almost always
arrive in stamp order, so records stay in insertion order and are re-sorted lazily, on the next
read, only after an out-of-order stamp: reads may reorganise internal dicts, so use one
projection from one thread at a time. The read methods live in projections.graph._reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from sys import intern
from typing import Any, ClassVar

from sortedcontainers import SortedList

from eventstore.events import (
    DecayApplied,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph._codec import decode_snapshot, encode_snapshot
from projections.graph._collect import Collected, collect_tombstones
from projections.graph._reads import FoldFollower, GraphReads
from projections.graph._records import (
    ENTITY_ATTRIBUTES,
    SMALL_EDGES,
    ZERO,
    EntityRecord,
    FoldStamp,
    GraphState,
    RelationKey,
    RelationRecord,
    add_edge,
    aliases_of,
    creation_attrs,
    has_attributes,
    held_base,
)
from projections.naming import NameIndex

__all__ = ["GraphProjection"]

_RELATION_ATTRIBUTES = (
    "weight",
    "properties",
    "valid_at",
    "invalid_at",
    "source_session",
    "source_transcript",
    "source_type",
    "evidence",
    "last_confirmed",
)


class GraphProjection(GraphReads):
    """Entities, observations, relations and adjacency, folded from envelopes (pure, no I/O)."""

    name: ClassVar[str] = "graph"
    # Bump on any change to what a log folds to, to the records or to _Snapshot: a checkpoint
    # of another version is never taken for a current one.
    version: ClassVar[int] = 4
    # Earlier versions whose snapshots from_snapshot still reads (the fold changed, the layout
    # did not): after an upgrade, a served process answers from one while it refolds the log
    # in the background (see actors.checkpointer). A layout change drops them.
    # Version 2 is not readable: its layout lacks the entity attribute column (its decoder
    # refuses such a snapshot), and its fold dropped attribute writes a version 3 fold keeps,
    # so a version 2 snapshot cannot stand for one; the log is refolded instead.
    # Version 3 is: its layout differs from 4's only in how packed occurrences hold their
    # stamps' origins (strings, not indexes), which from_snapshot converts; its fold is 4's.
    readable_versions: ClassVar[frozenset[int]] = frozenset({3})

    def __init__(self, state: GraphState | None = None) -> None:
        """An empty projection, or one holding `state` (a restored snapshot's)."""
        self._state = GraphState() if state is None else state
        # The alive names in name order, for paged listings (see GraphReads.entities_page):
        # built on the first paged read, then kept by every alive/dead transition, so a page
        # costs O(log n + page) in alive entities and nothing in dead ones. Not in snapshots.
        self._by_name: SortedList[str] | None = None
        # The alive names and their aliases for name resolution (see GraphReads.name_lookup):
        # built on the first lookup, then kept by every alive transition and alias write.
        # Not in snapshots.
        self._names: NameIndex | None = None
        # A derived index of the read side (see GraphReads.follower): told of every event
        # folded once it exists, so it can bring itself up to date at its next read. Not in
        # snapshots.
        self._follower: FoldFollower | None = None

    @property
    def position(self) -> int:
        """The position of the last envelope folded (0: none)."""
        return self._state.position

    @position.setter
    def position(self, position: int) -> None:
        self._state.position = position

    @property
    def state(self) -> GraphState:
        """The fold state itself (not a copy), as the snapshot codec encodes it."""
        return self._state

    # --- snapshots ------------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        """The complete fold state (tombstones, stamps, registers, order) as msgpack: restored
        by `from_snapshot`, it answers and folds further events exactly as this one does. Equal
        states give equal bytes, however they were reached (folded, or restored then folded)."""
        return encode_snapshot(self._state)

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> GraphProjection:
        """The projection `to_snapshot` captured. Raises SnapshotError if `data` does not
        have a snapshot's shape; its meaning is not checked, nor are the packed occurrences
        decoded until needed (a checkpoint's checksum is what catches damage), which keeps
        this, the start-up and as-of path, as fast as decoding."""
        return cls(decode_snapshot(data))

    def collect_tombstones(self, watermark: Mapping[str, int]) -> Collected:
        """Drop the invisible records every stamp of which `watermark` covers ({origin: seq};
        see projections.graph._collect): the caller vouches that every event folded later is
        newer than all of those. What reads answer does not change."""
        return collect_tombstones(self._state, watermark)

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
        state = self._state
        entities = state.entities
        get_entity = entities.get
        new_entity = entities.setdefault
        # None while a restore's relations are not keyed: keyed by the first relation folded.
        relations = state.keyed
        observation_added = ObservationAdded
        entity_created = EntityCreated
        relation_created = RelationCreated
        stamp_of = FoldStamp
        small_edges = SMALL_EDGES
        # Every envelope brings its own copy of its origin's id: stamps share one instead, which
        # keeps a fold's memory (and cache misses) down and makes equal origins identical.
        same_origin = state.origins.setdefault
        position = state.position
        follower = self._follower
        # Observations mostly follow their entity's creation or each other: remember the last
        # record looked up (a name's record never changes once made).
        last_name = ""
        last: EntityRecord | None = None
        last_hlc = -1
        try:
            for envelope in envelopes:
                event: Any = envelope.event
                if follower is not None:
                    follower.folded(event)
                kind = type(event)
                origin = envelope.origin
                hlc = envelope.hlc
                if hlc == last_hlc:
                    hlc = last_hlc  # a transaction's events share their clock reading's int
                else:
                    last_hlc = hlc
                stamp = stamp_of(hlc, same_origin(origin, origin), envelope.origin_seq)
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
                        occ = entity.occ
                        if occ is None:
                            entity.occ = {stamp: event.content}
                        else:
                            occ[stamp] = event.content
                        entity.watermark = stamp
                    else:
                        self._observation_added(event, stamp)
                    continue
                if kind is entity_created:
                    # A name's first creation; a record made in vain when there was one is
                    # cheaper than looking the name up twice.
                    name = event.name
                    entity = EntityRecord(
                        stamp, intern(event.entity_type), stamp, stamp, True, name=name
                    )
                    if new_entity(name, entity) is entity:
                        if has_attributes(event):
                            entity.attrs = creation_attrs(event, stamp)
                        if self._names is not None:
                            self._names.add(event.name, event.aliases)
                        last_name = event.name
                        last = entity
                        state.alive += 1
                        if self._by_name is not None:
                            self._by_name.add(event.name)
                        if stamp > state.entities_last:
                            state.entities_last = stamp
                        else:
                            state.entities_unsorted = True
                        continue
                elif (
                    kind is relation_created
                    and stamp > state.relations_last
                    and stamp > state.entities_last
                ):
                    # Newer than every creation: if the key is new and both endpoints are
                    # known, it is visible iff both are alive (see _relation_created).
                    src = get_entity(event.from_entity)
                    dst = get_entity(event.to_entity)
                    if src is not None and dst is not None:
                        # The key shares its strings with the endpoints' records and the other
                        # relations of its type, rather than holding the event's own copies.
                        key = (src.name, dst.name, intern(event.relation_type))
                        visible = src.alive and dst.alive
                        relation = RelationRecord(key, stamp, held_base(event), ZERO, visible)
                        if relations is None:
                            relations = state.relations
                        if relations.setdefault(key, relation) is relation:
                            state.relations_last = stamp
                            if visible:
                                state.visible += 1
                            # add_edge inlined for its usual case, a short tuple growing.
                            edges = src.edges
                            if edges is None:
                                src.edges = (relation,)
                            elif type(edges) is tuple and len(edges) < small_edges:
                                src.edges = (*edges, relation)
                            else:
                                add_edge(src, relation)
                            if dst is not src:
                                edges = dst.edges
                                if edges is None:
                                    dst.edges = (relation,)
                                elif type(edges) is tuple and len(edges) < small_edges:
                                    dst.edges = (*edges, relation)
                                else:
                                    add_edge(dst, relation)
                            continue
                handler = get_handler(kind)
                if handler is not None:
                    handler(self, event, stamp)
        finally:
            state.position = position

    # --- entities -------------------------------------------------------------------------

    def _entity_created(self, event: EntityCreated, stamp: FoldStamp) -> None:
        # A new name is handled inline in apply_all: here the name has a record already.
        entities = self._state.entities
        entity = entities[event.name]
        if stamp <= entity.created:
            return  # an older creation loses every write to the newer one
        was_alive = entity.alive
        entity.created = stamp
        if stamp > entity.type_stamp:
            entity.entity_type = intern(event.entity_type)
            entity.type_stamp = stamp
        self._prune(entity, stamp)
        # A creation starts the attributes fresh: only writes newer than it survive, and it
        # writes its own where none did.
        attrs = {f: w for f, w in entity.attrs.items() if w[0] > stamp} if entity.attrs else {}
        if has_attributes(event):
            for field, write in creation_attrs(event, stamp).items():
                attrs.setdefault(field, write)
        entity.attrs = attrs or None
        alive = entity.alive = stamp > entity.deleted
        if alive is not was_alive:
            self._state.alive += 1 if alive else -1
            if self._by_name is not None:
                if alive:
                    self._by_name.add(entity.name)
                else:
                    self._by_name.remove(event.name)
        del entities[event.name]  # listing order follows the latest creation: move to the end
        entities[entity.name] = entity  # the record's own name, which relation keys share
        if stamp > self._state.entities_last:
            self._state.entities_last = stamp
        else:
            self._state.entities_unsorted = True
        self._index_name(event.name, entity)
        if entity.edges:
            for relation in entity.edges:
                self._refresh(relation)

    def _entity_updated(self, event: EntityUpdated, stamp: FoldStamp) -> None:
        entity = self._entity_or_stub(event.name)
        if event.entity_type is not None and stamp > entity.type_stamp:
            entity.entity_type = intern(event.entity_type)
            entity.type_stamp = stamp
        if stamp < entity.created:
            return  # older than the latest creation, which wrote every attribute
        # Each attribute given, or cleared (written as None), is an LWW register.
        writes = [
            (f, getattr(event, f)) for f in ENTITY_ATTRIBUTES if getattr(event, f) is not None
        ]
        writes += [(f, None) for f in event.cleared if f in ENTITY_ATTRIBUTES]
        if writes:
            entity.attrs = _written(entity.attrs, writes, stamp)
            if event.aliases is not None or "aliases" in event.cleared:
                self._index_name(event.name, entity)

    def _entity_deleted(self, event: EntityDeleted, stamp: FoldStamp) -> None:
        entity = self._entity_or_stub(event.name)
        if stamp <= entity.deleted:
            return
        entity.deleted = stamp
        self._prune(entity, stamp)
        if entity.alive and stamp > entity.created:
            entity.alive = False
            self._state.alive -= 1
            if self._by_name is not None:
                self._by_name.remove(event.name)
            self._index_name(event.name, entity)
            if entity.edges:
                for relation in entity.edges:
                    self._refresh(relation)

    def _index_name(self, name: str, entity: EntityRecord) -> None:
        """Bring the name index, if built, up to date with the entity's liveness and aliases."""
        if self._names is None:
            return
        if entity.alive:
            self._names.add(entity.name, aliases_of(entity))
        else:
            self._names.remove(name)

    def _entity_or_stub(self, name: str) -> EntityRecord:
        entity = self._state.entities.get(name)
        if entity is None:
            # Never created (yet): holds registers and tombstones; listings skip it.
            entity = self._state.entities[name] = EntityRecord(ZERO, "", ZERO, ZERO, name=name)
        return entity

    def _prune(self, entity: EntityRecord, threshold: FoldStamp) -> None:
        """Drop what nothing stamped before `threshold` (a creation or deletion) can revive."""
        entity.watermark = max(entity.watermark, threshold)
        if entity.packed is not None:
            self._unpack(entity)
        if entity.occ:
            entity.occ = {s: c for s, c in entity.occ.items() if s > threshold} or None
        if entity.content_deleted:
            # An add older than the threshold is rejected by the threshold itself.
            kept = {c: s for c, s in entity.content_deleted.items() if s > threshold}
            entity.content_deleted = kept or None

    # --- observations ---------------------------------------------------------------------

    def _observation_added(self, event: ObservationAdded, stamp: FoldStamp) -> None:
        entity = self._entity_or_stub(event.entity)
        if stamp < entity.created or stamp < entity.deleted:
            return
        content = event.content
        if entity.content_deleted is not None:
            deleted_at = entity.content_deleted.get(content)
            if deleted_at is not None and stamp < deleted_at:
                return
        occ = entity.occ
        if stamp > entity.watermark:
            if occ is None:
                entity.occ = {stamp: content}
            else:
                occ[stamp] = content
            entity.watermark = stamp
            return
        if entity.packed is not None:
            self._unpack(entity)
            occ = entity.occ
        if occ is None:
            entity.occ = {stamp: content}
            entity.occ_unsorted = True
        elif stamp not in occ:
            occ[stamp] = content
            entity.occ_unsorted = True

    def _observation_deleted(self, event: ObservationDeleted, stamp: FoldStamp) -> None:
        entity = self._entity_or_stub(event.entity)
        content = event.content
        content_deleted = entity.content_deleted
        if content_deleted is None:
            content_deleted = entity.content_deleted = {}
        elif stamp <= content_deleted.get(content, ZERO):
            return
        content_deleted[content] = stamp
        entity.watermark = max(entity.watermark, stamp)
        if entity.packed is not None:
            self._unpack(entity)
        occ = entity.occ
        if occ and content in occ.values():
            entity.occ = {s: c for s, c in occ.items() if c != content or s > stamp} or None

    # --- relations ------------------------------------------------------------------------

    def _relation_or_stub(self, key: RelationKey) -> RelationRecord:
        relation = self._state.relations.get(key)
        if relation is None:
            # Never created (yet): holds registers and tombstones; listings skip it.
            src = self._entity_or_stub(key[0])
            dst = self._entity_or_stub(key[1])
            key = (src.name, dst.name, intern(key[2]))  # shared strings, as in apply_all
            relation = self._state.relations[key] = RelationRecord(key)
            add_edge(src, relation)
            if dst is not src:
                add_edge(dst, relation)
        return relation

    def _relation_created(self, event: RelationCreated, stamp: FoldStamp) -> None:
        from_entity = event.from_entity
        to_entity = event.to_entity
        key = (from_entity, to_entity, event.relation_type)
        relations = self._state.relations
        relation = relations.get(key)
        if relation is None:
            src = self._state.entities.get(from_entity)
            dst = self._state.entities.get(to_entity)
            if (
                src is not None
                and dst is not None
                and stamp > self._state.relations_last
                and stamp > self._state.entities_last
            ):
                # The usual case: known endpoints, in order and newer than every creation, so
                # visible iff both endpoints are alive.
                visible = src.alive and dst.alive
                key = (src.name, dst.name, intern(key[2]))  # shared strings, as in apply_all
                relation = relations[key] = RelationRecord(
                    key, stamp, held_base(event), ZERO, visible
                )
                add_edge(src, relation)
                if dst is not src:
                    add_edge(dst, relation)
                self._state.relations_last = stamp
                if visible:
                    self._state.visible += 1
                return
            relation = self._relation_or_stub(key)
        if stamp <= relation.created:
            return  # an older creation loses every write to the newer one
        relation.created = stamp
        relation.base = held_base(event)
        if relation.updates:
            kept = {f: write for f, write in relation.updates.items() if write[0] > stamp}
            relation.updates = kept or None
        del relations[key]  # listing order follows the latest creation: move to the end
        relations[relation.key] = relation  # the record's key: its strings are shared
        if stamp > self._state.relations_last:
            self._state.relations_last = stamp
        else:
            self._state.relations_unsorted = True
        self._refresh(relation)

    def _relation_updated(self, event: RelationUpdated, stamp: FoldStamp) -> None:
        relation = self._relation_or_stub((event.from_entity, event.to_entity, event.relation_type))
        if stamp < relation.created:
            return  # older than the latest creation, which wrote every field
        # Each attribute given, or cleared (written as None), is an LWW register.
        writes = [
            (f, getattr(event, f)) for f in _RELATION_ATTRIBUTES if getattr(event, f) is not None
        ]
        writes += [(f, None) for f in event.cleared if f in _RELATION_ATTRIBUTES]
        if writes:
            relation.updates = _written(relation.updates, writes, stamp)

    def _relation_deleted(self, event: RelationDeleted, stamp: FoldStamp) -> None:
        relation = self._relation_or_stub((event.from_entity, event.to_entity, event.relation_type))
        if stamp > relation.deleted:
            relation.deleted = stamp
            self._refresh(relation)

    # --- decay ----------------------------------------------------------------------------

    def _decay_applied(self, event: DecayApplied, stamp: FoldStamp) -> None:
        self._state.decay_runs.setdefault(stamp, event)

    def _refresh(self, relation: RelationRecord) -> None:
        from_entity, to_entity, _ = relation.key
        self._set_visible(
            relation, self._state.entities[from_entity], self._state.entities[to_entity]
        )

    def _set_visible(self, relation: RelationRecord, src: EntityRecord, dst: EntityRecord) -> None:
        created = relation.created
        visible = (
            src.alive
            and dst.alive
            and created > relation.deleted
            # Newer than every creation (the usual case) spares reading the endpoints' stamps.
            and (
                created > self._state.entities_last
                or (created > src.created and created > dst.created)
            )
        )
        if visible is not relation.visible:
            relation.visible = visible
            self._state.visible += 1 if visible else -1


def _written(
    registers: dict[str, tuple[FoldStamp, Any]] | None,
    writes: list[tuple[str, Any]],
    stamp: FoldStamp,
) -> dict[str, tuple[FoldStamp, Any]]:
    """`registers` with each write at `stamp` applied where it is the newest."""
    if registers is None:
        registers = {}
    for field, value in writes:
        written = registers.get(field)
        if written is None or stamp > written[0]:
            registers[field] = (stamp, value)
    return registers


_HANDLERS: dict[type, Callable[[GraphProjection, Any, FoldStamp], None]] = {
    DecayApplied: GraphProjection._decay_applied,
    EntityCreated: GraphProjection._entity_created,
    EntityUpdated: GraphProjection._entity_updated,
    EntityDeleted: GraphProjection._entity_deleted,
    ObservationAdded: GraphProjection._observation_added,
    ObservationDeleted: GraphProjection._observation_deleted,
    RelationCreated: GraphProjection._relation_created,
    RelationUpdated: GraphProjection._relation_updated,
    RelationDeleted: GraphProjection._relation_deleted,
}


def graph_neutral(event: object) -> bool:
    """True for an event the graph's fold only counts (schemas, markers): the graph before
    it and after it answer every read alike."""
    return type(event) not in _HANDLERS
