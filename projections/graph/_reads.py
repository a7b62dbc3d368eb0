"""GraphReads: what GraphProjection answers — its read methods over the fold's records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import Any, Protocol, TypeVar

import msgspec
from sortedcontainers import SortedList

from eventstore.events import DecayApplied, Stamp
from eventstore.hlc import ms_of
from projections.graph._records import (
    CONTENTS_DECODER,
    OCCURRENCES_DECODER,
    PLAIN,
    EntityRecord,
    FoldStamp,
    GraphState,
    RelationKey,
    RelationRecord,
    aliases_of,
)
from projections.naming import NameIndex, NameLookup, Resolution, resolve
from projections.restored_keys import listed_keys
from projections.views import (
    EntityAttributes,
    EntityView,
    GraphSnapshot,
    RelationDetails,
    RelationView,
)

_CREATED = attrgetter("created")

KEYS_SLICE = 4096
"""Restored relations listed a slice at a time by `relation_keys_read`: the slice's keys stay
in the CPU's caches while the answer is written, and no list of them all is made."""

# RelationView's attribute fields, and the defaults a cleared one reads as.
_VIEW_DEFAULTS: dict[str, Any] = {
    "weight": 1.0,
    "properties": {},
    "valid_at": None,
    "invalid_at": None,
    "source_session": None,
    "source_transcript": None,
    "source_type": None,
}

__all__ = ["FoldFollower", "GraphReads"]

F = TypeVar("F", bound="FoldFollower")


class FoldFollower(Protocol):
    """A derived index over the fold (built by a reader, see GraphReads.follower): the fold
    tells it of each event it folds, before folding it; it catches up at its next read."""

    def folded(self, event: Any) -> None: ...


class GraphReads:
    """The read side of GraphProjection (which holds and folds the records these read).

    Reads may reorganise internal dicts (a lazy re-sort, unpacking restored occurrences): use
    one projection from one thread at a time.
    """

    _state: GraphState
    _by_name: SortedList[str] | None
    _names: NameIndex | None
    _follower: FoldFollower | None

    def follower(self, kind: type[F], build: Callable[[GraphReads], F]) -> F:
        """The projection's derived index of `kind`: built by `build` on the first call (and
        again if another kind took the one slot), then told of every event folded from then
        on. Like the name indexes, it is never in snapshots."""
        found = self._follower
        if isinstance(found, kind):
            return found
        made = build(self)
        self._follower = made
        return made

    def followed_by(self) -> FoldFollower | None:
        """The derived index in the one slot (see `follower`), if any, of whatever kind."""
        return self._follower

    def _unpack(self, entity: EntityRecord) -> None:
        """Move the entity's packed occurrences into `occ`, before those added since."""
        assert entity.packed is not None
        packed = OCCURRENCES_DECODER.decode(entity.packed)
        origins = map(self._state.packed_origins.__getitem__, packed.origins)
        stamps = map(FoldStamp, packed.hlcs, origins, packed.seqs)
        occ = dict(zip(stamps, packed.contents, strict=True))
        if entity.occ:
            occ.update(entity.occ)
        entity.occ = occ
        entity.packed = None

    # --- reads ----------------------------------------------------------------------------

    def _alive_entity(self, name: str) -> EntityRecord | None:
        entity = self._state.entities.get(name)
        return entity if entity is not None and entity.alive else None

    def _contents(self, entity: EntityRecord) -> list[str]:
        if entity.packed is not None:
            if not entity.occ_unsorted:
                # A read decodes the contents alone and leaves the stamps packed.
                contents = CONTENTS_DECODER.decode(entity.packed).contents
                if entity.occ:
                    contents += entity.occ.values()
                return contents
            self._unpack(entity)
        occ = entity.occ
        if entity.occ_unsorted:
            if occ:
                occ = entity.occ = dict(sorted(occ.items()))
            entity.occ_unsorted = False
        return list(occ.values()) if occ else []

    @staticmethod
    def _relation_view(relation: RelationRecord) -> RelationView:
        base = relation.base
        assert base is not None, "a visible relation has been created"
        if base is PLAIN:
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
            defaults = _VIEW_DEFAULTS
            written = {
                field: defaults[field] if value is None else value
                for field, (_, value) in relation.updates.items()
                if field in defaults
            }
            if "properties" in written:
                written["properties"] = dict(written["properties"])
            if written:
                view = msgspec.structs.replace(view, **written)
        return view

    def entity_attributes(self, name: str) -> EntityAttributes | None:
        """The alive entity's graph attributes (confidence, mentions, ...); else None."""
        entity = self._alive_entity(name)
        if entity is None:
            return None
        # Observations and metadata from any family touch the entity too (contract §4.4):
        # the watermark is the newest stamp of its creation and its observation writes, so
        # last_seen is derived from it rather than written by every add_observations.
        touched = ms_of(entity.watermark.hlc)
        values: dict[str, Any] = {"last_seen": touched}
        if entity.attrs:
            for field, (_, value) in entity.attrs.items():
                if value is not None:
                    values[field] = list(value) if field == "aliases" else value
            if "properties" in values:
                values["properties"] = dict(values["properties"])
            values["last_seen"] = max(values["last_seen"], touched)
        return EntityAttributes(name, **values)

    def decay_runs(self) -> list[DecayApplied]:
        """Every decay run folded, in stamp order (each once, however often it was folded)."""
        return [run for _, run in sorted(self._state.decay_runs.items())]

    def name_lookup(self) -> NameLookup:
        """The alive names and aliases as name resolution asks about them (a NameIndex of
        them, built on the first call and kept current by the fold from then on)."""
        if self._names is None:
            entities = self._state.entities
            self._names = NameIndex(
                (name, aliases_of(entity)) for name, entity in entities.items() if entity.alive
            )
        return self._names

    def resolve_name(self, reference: str) -> Resolution:
        """The alive entities `reference` names: exact, case-insensitive, alias, then slug."""
        return resolve(reference, self.name_lookup())

    def relation_details(
        self, from_entity: str, to_entity: str, relation_type: str
    ) -> RelationDetails | None:
        """The visible relation's evidence, ingestion and confirmation times; else None."""
        relation = self._state.relations.get((from_entity, to_entity, relation_type))
        if relation is None or not relation.visible:
            return None
        base = relation.base
        assert base is not None, "a visible relation has been created"
        since = ms_of(relation.created.hlc)
        evidence = base.evidence
        ingested_at = since if base.ingested_at is None else base.ingested_at
        last_confirmed = since if base.last_confirmed is None else base.last_confirmed
        if relation.updates:
            written = relation.updates.get("evidence")
            if written is not None:
                evidence = written[1]
            written = relation.updates.get("last_confirmed")
            if written is not None:
                last_confirmed = since if written[1] is None else written[1]
        return RelationDetails(
            from_entity, to_entity, relation_type, evidence, ingested_at, last_confirmed
        )

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
        return (entity.occ is not None and content in entity.occ.values()) or (
            entity.packed is not None and content in CONTENTS_DECODER.decode(entity.packed).contents
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
        found: dict[str, EntityRecord] = {}
        for name in names:
            entity = self._alive_entity(name)
            if entity is not None:
                found.setdefault(name, entity)
        items = (
            # One alone needs no order (nor its creation stamp made, for a restored record).
            sorted(found.items(), key=lambda kv: kv[1].created)
            if listing_order and len(found) > 1
            else found.items()
        )
        return [
            EntityView(name, entity.entity_type, self._contents(entity)) for name, entity in items
        ]

    def entities(self) -> Iterator[EntityView]:
        """Alive entities in order of their latest creation stamp."""
        if self._state.entities_unsorted:
            self._state.entities = dict(
                sorted(self._state.entities.items(), key=lambda kv: kv[1].created)
            )
            self._state.entities_unsorted = False
        for name, entity in tuple(self._state.entities.items()):
            if entity.alive:
                yield EntityView(name, entity.entity_type, self._contents(entity))

    def entities_page(self, offset: int, limit: int | None) -> list[EntityView]:
        """The alive entities in name order, skipping `offset`, then at most `limit` (None: the
        rest): `sorted(entities(), key=name)[offset:offset + limit]`, at O(log n + page) once
        the name index is built (by the first call, in one sort of the alive names)."""
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = SortedList(self.entity_names())
        stop = None if limit is None else offset + limit
        entities = self._state.entities
        return [
            EntityView(name, entity.entity_type, self._contents(entity))
            for name in by_name.islice(offset, stop)
            for entity in (entities[name],)
        ]

    def entity_names(self) -> list[str]:
        """Names of the alive entities (in no promised order: cheaper than `entities()`)."""
        return [name for name, entity in self._state.entities.items() if entity.alive]

    def entity_count(self) -> int:
        return self._state.alive

    def relations(self) -> Iterator[RelationView]:
        """Visible relations in order of their latest creation stamp."""
        self._sort_relations()
        for relation in self._state.relation_records():
            if relation.visible:
                yield self._relation_view(relation)

    def relation_count(self) -> int:
        return self._state.visible

    def has_relation(self, from_entity: str, to_entity: str, relation_type: str) -> bool:
        relation = self._state.relations.get((from_entity, to_entity, relation_type))
        return relation is not None and relation.visible

    def relation(self, from_entity: str, to_entity: str, relation_type: str) -> RelationView | None:
        """The visible relation with this key, with its attributes; else None."""
        relation = self._state.relations.get((from_entity, to_entity, relation_type))
        return self._relation_view(relation) if relation is not None and relation.visible else None

    def relations_of(self, name: str) -> list[RelationView]:
        """Visible relations with `name` as either endpoint, in creation order."""
        return self.relations_of_any((name,))

    def relation_keys(self) -> list[RelationKey]:
        """(from, to, type) of the visible relations in listing order: `relations()` without
        building attribute views, for readers that need only the keys."""
        return list(self.relation_keys_read())

    def relation_keys_read(self) -> Iterator[RelationKey]:
        """`relation_keys()` as it is read: a restore's records are listed from its columns a
        slice at a time (projections.restored_keys), not keyed for good, so that a
        whole-graph answer holds neither a key per relation for as long as the process runs
        (116 bytes a relation with its dict slot) nor a list of them while it is written."""
        state = self._state
        # Listed in their order: one that needs sorting (a creation folded out of clock order,
        # as replication can) is keyed and sorted once, below.
        if state.keyed is None and not state.relations_unsorted:
            records = state.unkeyed
            if records:
                columns = records[0].stamps  # one restore made them all: they share its table
                for start in range(0, len(records), KEYS_SLICE):
                    yield from listed_keys(records[start : start + KEYS_SLICE], columns)
            return
        self._sort_relations()
        for key, relation in state.relations.items():
            if relation.visible:
                yield key

    def _sort_relations(self) -> None:
        """Puts the relations in listing order (latest creation stamp) where a creation folded
        out of clock order left them unsorted; keys them, as sorting needs the dict."""
        state = self._state
        if state.relations_unsorted:
            state.relations = dict(sorted(state.relations.items(), key=lambda kv: kv[1].created))
            state.relations_unsorted = False

    def incident_keys(self, name: str, *, hidden: bool = False) -> list[RelationKey]:
        """Keys of the visible relations touching `name` (either end), in no promised order:
        the adjacency a traversal walks, without building views or sorting. With `hidden`,
        also those not visible (deleted, or hidden by an endpoint's deletion or re-creation)."""
        entity = self._state.entities.get(name)
        # Read once: a restored record makes its edges per read.
        edges = None if entity is None else entity.edges
        if not edges:
            return []
        return [relation.key for relation in edges if hidden or relation.visible]

    def relation_keys_of_any(self, names: Iterable[str]) -> list[RelationKey]:
        """Keys of `relations_of_any(names)`, in the same order."""
        return [relation.key for relation in self._incident(names)]

    def relations_of_any(self, names: Iterable[str]) -> list[RelationView]:
        """Visible relations with either endpoint in `names`, each once, in creation order."""
        return [self._relation_view(relation) for relation in self._incident(names)]

    def _incident(self, names: Iterable[str]) -> list[RelationRecord]:
        found: dict[RelationRecord, None] = {}
        entities = self._state.entities
        for name in names:
            entity = entities.get(name)
            # Read once: a restored record makes its edges per read.
            edges = None if entity is None else entity.edges
            if edges:
                for relation in edges:
                    if relation.visible:
                        found[relation] = None
        # One alone needs no order (nor its creation stamp made, for a restored record).
        return sorted(found, key=_CREATED) if len(found) > 1 else list(found)

    def snapshot(self) -> GraphSnapshot:
        """The visible graph as one comparable value (used to compare folds for equality)."""
        return GraphSnapshot(tuple(self.entities()), tuple(self.relations()))
