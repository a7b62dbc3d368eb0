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
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from actors.graph_reader import GraphReader
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import EntityView, RelationKey, RelationView

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

    def __init__(self, graph: GraphReader) -> None:
        self._graph = graph
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
            case EntityUpdated(name=name, entity_type=entity_type):
                view = self.entity(name)
                if view is not None and entity_type is not None:
                    self._entities[name] = EntityView(name, entity_type, list(view.observations))
            case EntityDeleted(name=name):
                self._hide_relations_of(name)
                self._entities[name] = None
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
            case RelationDeleted(from_entity=from_entity, to_entity=to_entity):
                self._relations[(from_entity, to_entity, event.relation_type)] = None
            case _:
                pass

    def _hide_relations_of(self, name: str) -> None:
        # A deletion hides the relations; a creation too, as they are older than it.
        for relation in self.relations_of(name):
            self._relations[relation_key(relation)] = None

    def _relation_created(self, event: RelationCreated) -> None:
        key = (event.from_entity, event.to_entity, event.relation_type)
        alive = self.has_entity(key[0]) and self.has_entity(key[1])
        self._relations[key] = _created_view(event) if alive else None
        self._creations += 1
        self._created_seq[key] = self._creations
        for end in (key[0], key[1]):
            self._created_by_end.setdefault(end, {})[key] = None

    def _relation_updated(self, event: RelationUpdated) -> None:
        view = self.relation(event.from_entity, event.to_entity, event.relation_type)
        if view is None:
            return  # an invisible relation only shows again through a newer creation
        written = {f: getattr(event, f) for f in _ATTRIBUTES if getattr(event, f) is not None}
        if "properties" in written:
            written["properties"] = dict(written["properties"])
        self._relations[relation_key(view)] = msgspec.structs.replace(view, **written)

    # --- writes: record the event, then fold it -----------------------------------------------

    def record(self, event: AnyEvent) -> None:
        self.events.append(event)
        self.apply(event)

    def note(self, event: AnyEvent) -> None:
        """Record a marker event (it changes nothing the graph shows)."""
        self.record(event)

    def create_entity(self, name: str, entity_type: str) -> None:
        self.record(EntityCreated(name=name, entity_type=entity_type))

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

    def create_relation(self, like: RelationView, key: RelationKey) -> RelationView:
        """Create relation `key` with the attributes of `like` (an edit keeps weight,
        validity, properties and provenance)."""
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
        )
        self.record(event)
        return _created_view(event)

    def delete_relation(self, relation: RelationView) -> None:
        key = relation_key(relation)
        self.record(RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2]))
