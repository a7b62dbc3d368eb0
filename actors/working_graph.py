"""WorkingGraph: a graph as a command sees it — any GraphReader plus events decided on top of it.

A batch command (rename a to b, then b to c) decides each item against the state the earlier
items left, and a transaction decides each step against the state the earlier steps left. The
underlying reader is never touched: a small overlay of the entities and relations the new events
touched answers reads, falling through to the reader for everything else. It wraps any
GraphReader, another WorkingGraph included.

`apply` folds any event into the overlay with the graph projection's rules (docs/
architecture.md §3),
for events stamped after everything the reader holds: a creation starts an entity fresh and,
like a deletion, hides every relation touching it; a relation is visible only if both ends are
alive when it is created. The writing methods record their event in `events` and apply it, so
the overlay and the events cannot disagree.

The graph family's attributes (entity confidence, mentions, aliases ...; relation evidence and
confirmation times) and name resolution are overlaid the same way. A creation that leaves a
time unset (last_seen, ingested_at, last_confirmed: "this event's stamp") reads as `now_ms`,
the time the command is decided at.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from actors.graph_reader import GraphReader
from eventstore.events import (
    AnyEvent,
    DecayApplied,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import (
    EntityAttributes,
    EntityView,
    RelationDetails,
    RelationKey,
    RelationView,
)
from projections.graph_decay import newest_run
from projections.naming import NameIndex, NameLookup, Resolution, resolve

__all__ = ["WorkingGraph", "relation_key"]

_ATTRIBUTES = (
    "weight",
    "properties",
    "valid_at",
    "invalid_at",
    "source_session",
    "source_transcript",
    "source_type",
)
# What a cleared relation attribute reads as (the fold's defaults).
_RELATION_DEFAULTS: dict[str, Any] = {
    "weight": 1.0,
    "properties": {},
    "valid_at": None,
    "invalid_at": None,
    "source_session": None,
    "source_transcript": None,
    "source_type": None,
}
_ENTITY_ATTRIBUTES = (
    "confidence",
    "times_mentioned",
    "last_seen",
    "subtype",
    "source_file",
    "aliases",
    "properties",
)
_ENTITY_DEFAULTS = EntityAttributes("")


def relation_key(relation: RelationView) -> RelationKey:
    return (relation.from_entity, relation.to_entity, relation.relation_type)


def _created_view(event: RelationCreated) -> RelationView:
    return RelationView(
        event.from_entity,
        event.to_entity,
        event.relation_type,
        event.weight,
        dict(event.properties),
        event.valid_at,
        event.invalid_at,
        event.source_session,
        event.source_transcript,
        event.source_type,
    )


class WorkingGraph:
    """Reads see `graph` with the applied events on top; writes record into `events`."""

    def __init__(self, graph: GraphReader, now_ms: int = 0) -> None:
        self._graph = graph
        self._now_ms = now_ms
        # The graph family's attributes of touched entities and relations (None: not there).
        self._attrs: dict[str, EntityAttributes | None] = {}
        self._details: dict[RelationKey, RelationDetails | None] = {}
        self._lookup: _OverlayNames | None = None
        self._runs: list[DecayApplied] | None = None
        self._newest: tuple[DecayApplied | None] | None = None
        self.events: list[AnyEvent] = []
        # Touched elements: their state now (None: not alive / not visible).
        self._entities: dict[str, EntityView | None] = {}
        self._relations: dict[RelationKey, RelationView | None] = {}
        # Relations created here, by latest creation (a later creation is listed later), per
        # endpoint: they come after every relation of the reader, which are all older.
        self._created_seq: dict[RelationKey, int] = {}
        self._creations = 0
        self._created_by_end: dict[str, dict[RelationKey, None]] = {}

    # --- reads (GraphReader, with GraphProjection's signatures) ------------------------------

    def entity(self, name: str) -> EntityView | None:
        if name in self._entities:
            return self._entities[name]
        return self._graph.entity(name)

    def has_entity(self, name: str) -> bool:
        if name in self._entities:
            return self._entities[name] is not None
        return self._graph.has_entity(name)

    def entity_type(self, name: str) -> str | None:
        if name in self._entities:
            view = self._entities[name]
            return None if view is None else view.entity_type
        return self._graph.entity_type(name)

    def observations(self, name: str) -> list[str]:
        if name in self._entities:
            view = self._entities[name]
            return [] if view is None else list(view.observations)
        return self._graph.observations(name)

    def relation(self, from_entity: str, to_entity: str, relation_type: str) -> RelationView | None:
        key = (from_entity, to_entity, relation_type)
        if key in self._relations:
            return self._relations[key]
        return self._graph.relation(from_entity, to_entity, relation_type)

    def has_relation(self, from_entity: str, to_entity: str, relation_type: str) -> bool:
        key = (from_entity, to_entity, relation_type)
        if key in self._relations:
            return self._relations[key] is not None
        return self._graph.has_relation(from_entity, to_entity, relation_type)

    def relations_of(self, name: str) -> list[RelationView]:
        """Visible relations with `name` at either end, in creation order."""
        return self.relations_of_any((name,))

    def relations_of_any(self, names: Iterable[str]) -> list[RelationView]:
        """Visible relations touching any of `names`, each once, in creation order: the
        reader's (updated or hidden here as the case may be), then those created here."""
        names = tuple(names)
        touched = self._relations
        created = self._created_seq
        found: list[RelationView] = []
        for relation in self._graph.relations_of_any(names):
            key = relation_key(relation)
            if key in created:
                continue  # re-created here: listed with the newer relations below
            if key in touched:
                view = touched[key]
                if view is not None:
                    found.append(view)
            else:
                found.append(relation)
        mine: dict[RelationKey, None] = {}
        for name in names:
            mine.update(self._created_by_end.get(name, {}))
        for key in sorted(mine, key=created.__getitem__):
            view = touched[key]
            if view is not None:
                found.append(view)
        return found

    # --- the graph family's reads --------------------------------------------------------------

    def entity_attributes(self, name: str) -> EntityAttributes | None:
        if not self.has_entity(name):
            return None
        if name in self._attrs:
            return self._attrs[name]
        return self._graph.entity_attributes(name)

    def relation_details(
        self, from_entity: str, to_entity: str, relation_type: str
    ) -> RelationDetails | None:
        key = (from_entity, to_entity, relation_type)
        if not self.has_relation(*key):
            return None
        if key in self._details:
            return self._details[key]
        return self._graph.relation_details(*key)

    def name_lookup(self) -> NameLookup:
        return self._names()

    def _names(self) -> _OverlayNames:
        # Built on first use: commands that never resolve a name never read the base index.
        if self._lookup is None:
            lookup = _OverlayNames(self._graph.name_lookup())
            # What was applied before the first use (afterwards, apply keeps it current).
            for name in dict.fromkeys((*self._entities, *self._attrs)):
                attributes = self.entity_attributes(name)
                if attributes is None:
                    lookup.set_gone(name)
                else:
                    lookup.set_alive(name, attributes.aliases)
            self._lookup = lookup
        return self._lookup

    def resolve_name(self, reference: str) -> Resolution:
        return resolve(reference, self.name_lookup())

    def decay_runs(self) -> list[DecayApplied]:
        if self._runs is None:
            self._runs = list(self._graph.decay_runs())
        return list(self._runs)

    def newest_decay_run(self) -> DecayApplied | None:
        """The run decayed values are read through (kept: a batch reads it per element)."""
        if self._newest is None:
            self._newest = (newest_run(self.decay_runs()),)
        return self._newest[0]

    def details_of(self, relations: Iterable[RelationView]) -> dict[RelationKey, RelationDetails]:
        """The details of visible `relations`, by key (read them before a move deletes them)."""
        found: dict[RelationKey, RelationDetails] = {}
        for relation in relations:
            key = relation_key(relation)
            details = self.relation_details(*key)
            if details is not None:
                found[key] = details
        return found

    # --- folding events ---------------------------------------------------------------------

    def apply_all(self, events: Iterable[AnyEvent]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: AnyEvent) -> None:
        """Fold one event, stamped after everything seen so far, into the overlay. Schema and
        marker events change nothing the graph shows."""
        match event:
            case EntityCreated(name=name, entity_type=entity_type):
                self._hide_relations_of(name)
                self._entities[name] = EntityView(name, entity_type, [])
                self._attrs[name] = self._created_attributes(event)
                if self._lookup is not None:
                    self._lookup.set_alive(name, event.aliases)
            case EntityUpdated(name=name, entity_type=entity_type):
                view = self.entity(name)
                if view is not None and entity_type is not None:
                    self._entities[name] = EntityView(name, entity_type, list(view.observations))
                if view is not None:
                    self._entity_updated(event)
            case EntityDeleted(name=name):
                self._hide_relations_of(name)
                self._entities[name] = None
                self._attrs[name] = None
                if self._lookup is not None:
                    self._lookup.set_gone(name)
            case ObservationAdded(entity=name, content=content):
                view = self.entity(name)
                if view is not None:
                    observations = [*view.observations, content]
                    self._entities[name] = EntityView(name, view.entity_type, observations)
            case ObservationDeleted(entity=name, content=content):
                view = self.entity(name)
                if view is not None:
                    kept = [c for c in view.observations if c != content]
                    self._entities[name] = EntityView(name, view.entity_type, kept)
            case RelationCreated():
                self._relation_created(event)
            case RelationUpdated():
                self._relation_updated(event)
            case DecayApplied():
                self.decay_runs()
                assert self._runs is not None
                self._runs.append(event)  # stamped after everything beneath: the newest
                self._newest = None
            case RelationDeleted(from_entity=from_entity, to_entity=to_entity):
                self._relations[(from_entity, to_entity, event.relation_type)] = None
            case _:
                pass

    def _created_attributes(self, event: EntityCreated) -> EntityAttributes:
        return EntityAttributes(
            event.name,
            confidence=0.5 if event.confidence is None else event.confidence,
            times_mentioned=1 if event.times_mentioned is None else event.times_mentioned,
            last_seen=self._now_ms if event.last_seen is None else event.last_seen,
            subtype=event.subtype,
            source_file=event.source_file,
            aliases=list(event.aliases),
            properties=dict(event.properties),
        )

    def _entity_updated(self, event: EntityUpdated) -> None:
        current = self.entity_attributes(event.name)
        if current is None:
            return
        written: dict[str, Any] = {
            field: getattr(event, field)
            for field in _ENTITY_ATTRIBUTES
            if getattr(event, field) is not None
        }
        for field in event.cleared:
            if field in _ENTITY_ATTRIBUTES:
                written[field] = getattr(_ENTITY_DEFAULTS, field)
        if written:
            updated = msgspec.structs.replace(current, **written)
            self._attrs[event.name] = updated
            if self._lookup is not None and "aliases" in written:
                self._lookup.set_alive(event.name, updated.aliases)

    def _hide_relations_of(self, name: str) -> None:
        # A deletion hides the relations; a creation too, as they are older than it.
        for relation in self.relations_of(name):
            self._relations[relation_key(relation)] = None

    def _relation_created(self, event: RelationCreated) -> None:
        key = (event.from_entity, event.to_entity, event.relation_type)
        alive = self.has_entity(key[0]) and self.has_entity(key[1])
        self._relations[key] = _created_view(event) if alive else None
        now = self._now_ms
        self._details[key] = RelationDetails(
            *key,
            evidence=event.evidence,
            ingested_at=now if event.ingested_at is None else event.ingested_at,
            last_confirmed=now if event.last_confirmed is None else event.last_confirmed,
        )
        self._creations += 1
        self._created_seq[key] = self._creations
        for end in (key[0], key[1]):
            self._created_by_end.setdefault(end, {})[key] = None

    def _relation_updated(self, event: RelationUpdated) -> None:
        view = self.relation(event.from_entity, event.to_entity, event.relation_type)
        if view is None:
            return  # an invisible relation only shows again through a newer creation
        written = {f: getattr(event, f) for f in _ATTRIBUTES if getattr(event, f) is not None}
        for field in event.cleared:
            if field in _RELATION_DEFAULTS:
                written[field] = _RELATION_DEFAULTS[field]
        if "properties" in written:
            written["properties"] = dict(written["properties"])
        key = relation_key(view)
        self._relations[key] = msgspec.structs.replace(view, **written)
        details = self.relation_details(*key)
        if details is not None and (event.evidence is not None or event.last_confirmed is not None):
            self._details[key] = msgspec.structs.replace(
                details,
                evidence=details.evidence if event.evidence is None else event.evidence,
                last_confirmed=(
                    details.last_confirmed if event.last_confirmed is None else event.last_confirmed
                ),
            )

    # --- writes: record the event, then fold it -----------------------------------------------

    def record(self, event: AnyEvent) -> None:
        self.events.append(event)
        self.apply(event)

    def note(self, event: AnyEvent) -> None:
        """Record a marker event (it changes nothing the graph shows)."""
        self.record(event)

    def create_entity(
        self, name: str, entity_type: str, like: EntityAttributes | None = None
    ) -> None:
        """Create an entity; with `like`, carrying the graph attributes it has (a move keeps
        them). An entity with every attribute at its default (one the memory family made)
        is created plain: its last_seen is then the move's time, as for any other write that
        touches it; one with attributes keeps its last_seen too, the reference its decay
        counts from."""
        carried: dict[str, Any] = {}
        if like is not None:
            carried = {
                field: getattr(like, field)
                for field in _ENTITY_ATTRIBUTES
                if field != "last_seen" and getattr(like, field) != getattr(_ENTITY_DEFAULTS, field)
            }
            if carried:
                carried["last_seen"] = like.last_seen
        self.record(EntityCreated(name=name, entity_type=entity_type, **carried))

    def retype_entity(self, view: EntityView, entity_type: str) -> None:
        self.record(EntityUpdated(name=view.name, entity_type=entity_type))

    def delete_entity(self, name: str) -> list[RelationView]:
        """Delete an alive entity and every relation touching it (returned, as they were),
        with an explicit tombstone for each."""
        incident = self.relations_of(name)
        self.record(EntityDeleted(name=name))
        for relation in incident:
            self.delete_relation(relation)
        return incident

    def add_observation(self, name: str, content: str) -> None:
        assert self.has_entity(name), "observations are added to alive entities only"
        self.record(ObservationAdded(entity=name, content=content))

    def delete_observation(self, name: str, content: str) -> int:
        """Delete every occurrence of `content` on an alive entity; returns how many there were."""
        view = self.entity(name)
        assert view is not None, "observations are deleted from alive entities only"
        self.record(ObservationDeleted(entity=name, content=content))
        return view.observations.count(content)

    def create_relation(
        self, like: RelationView, key: RelationKey, details: RelationDetails | None = None
    ) -> RelationView:
        """Create relation `key` with the attributes of `like` (an edit keeps weight,
        validity, properties and provenance) and, given its `details` (read before the old
        relation was deleted), its evidence, ingestion and confirmation times."""
        from_entity, to_entity, relation_type = key
        event = RelationCreated(
            from_entity=from_entity,
            to_entity=to_entity,
            relation_type=relation_type,
            weight=like.weight,
            properties=dict(like.properties),
            valid_at=like.valid_at,
            invalid_at=like.invalid_at,
            source_session=like.source_session,
            source_transcript=like.source_transcript,
            source_type=like.source_type,
            evidence=None if details is None else details.evidence,
            ingested_at=None if details is None else details.ingested_at,
            last_confirmed=None if details is None else details.last_confirmed,
        )
        self.record(event)
        return _created_view(event)

    def delete_relation(self, relation: RelationView) -> None:
        key = relation_key(relation)
        self.record(RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2]))


class _OverlayNames:
    """NameLookup of a WorkingGraph: names whose aliveness or aliases changed here are
    answered from its own index, every other name from the underlying graph's lookup. Both
    are kept current as events are applied, so one instance serves a whole command."""

    def __init__(self, base: NameLookup) -> None:
        self._base = base
        self.touched: set[str] = set()
        self.own = NameIndex()

    def set_alive(self, name: str, aliases: Iterable[str]) -> None:
        self.touched.add(name)
        self.own.add(name, aliases)

    def set_gone(self, name: str) -> None:
        self.touched.add(name)
        self.own.remove(name)

    def _merge(self, base: Sequence[str], mine: Sequence[str]) -> Sequence[str]:
        kept = [name for name in base if name not in self.touched]
        return sorted({*kept, *mine}) if kept and mine else kept or list(mine)

    def has_name(self, name: str) -> bool:
        if name in self.touched:
            return self.own.has_name(name)
        return self._base.has_name(name)

    def names_folded(self, folded: str) -> Sequence[str]:
        return self._merge(self._base.names_folded(folded), self.own.names_folded(folded))

    def names_with_alias(self, folded: str) -> Sequence[str]:
        return self._merge(self._base.names_with_alias(folded), self.own.names_with_alias(folded))

    def names_with_slug(self, key: str) -> Sequence[str]:
        return self._merge(self._base.names_with_slug(key), self.own.names_with_slug(key))
