"""WorkingGraph: the graph as one command sees it — the read model plus the command's own events.

A batch command (rename a to b, then b to c; merge two duplicates into one target) decides each
item against the state the earlier items left. The read model is never touched: the events are
collected here, and a small overlay of the entities and relations they touched answers reads,
falling through to the projection for everything else. Every write goes through a method that
records its event, so the overlay and the events cannot disagree. Events are stamped in list
order, so a creation here is newer than everything the projection holds.
"""

from __future__ import annotations

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
)
from projections.graph import EntityView, GraphProjection, RelationKey, RelationView

__all__ = ["WorkingGraph", "relation_key"]


def relation_key(relation: RelationView) -> RelationKey:
    return (relation.from_entity, relation.to_entity, relation.relation_type)


class WorkingGraph:
    """Reads see the projection with `events` applied; writes append to `events`."""

    def __init__(self, graph: GraphProjection) -> None:
        self._graph = graph
        self.events: list[AnyEvent] = []
        # Touched elements: their state now (None: not alive / not visible).
        self._entities: dict[str, EntityView | None] = {}
        self._relations: dict[RelationKey, RelationView | None] = {}
        # Relation keys touched in this command, per endpoint name.
        self._touched_edges: dict[str, dict[RelationKey, None]] = {}

    # --- reads ------------------------------------------------------------------------------

    def entity(self, name: str) -> EntityView | None:
        if name in self._entities:
            return self._entities[name]
        return self._graph.entity(name)

    def has_entity(self, name: str) -> bool:
        return self.entity(name) is not None

    def relation(self, key: RelationKey) -> RelationView | None:
        if key in self._relations:
            return self._relations[key]
        return self._graph.relation(*key)

    def relations_of(self, name: str) -> list[RelationView]:
        """Visible relations with `name` at either end: the projection's (in creation order)
        not touched here, then those created here (in the order they were)."""
        touched = self._relations
        found = [r for r in self._graph.relations_of(name) if relation_key(r) not in touched]
        for key in self._touched_edges.get(name, ()):
            view = touched[key]
            if view is not None:
                found.append(view)
        return found

    # --- writes -----------------------------------------------------------------------------

    def create_entity(self, name: str, entity_type: str) -> None:
        self.events.append(EntityCreated(name=name, entity_type=entity_type))
        self._entities[name] = EntityView(name, entity_type, [])

    def retype_entity(self, view: EntityView, entity_type: str) -> None:
        self.events.append(EntityUpdated(name=view.name, entity_type=entity_type))
        self._entities[view.name] = EntityView(view.name, entity_type, list(view.observations))

    def delete_entity(self, name: str) -> list[RelationView]:
        """Delete an alive entity and every relation touching it (returned, as they were)."""
        incident = self.relations_of(name)
        self.events.append(EntityDeleted(name=name))
        self._entities[name] = None
        for relation in incident:
            self.delete_relation(relation)
        return incident

    def add_observation(self, name: str, content: str) -> None:
        view = self.entity(name)
        assert view is not None, "observations are added to alive entities only"
        self.events.append(ObservationAdded(entity=name, content=content))
        self._entities[name] = EntityView(name, view.entity_type, [*view.observations, content])

    def delete_observation(self, name: str, content: str) -> int:
        """Delete every occurrence of `content` on an alive entity; returns how many there were."""
        view = self.entity(name)
        assert view is not None, "observations are deleted from alive entities only"
        kept = [c for c in view.observations if c != content]
        self.events.append(ObservationDeleted(entity=name, content=content))
        self._entities[name] = EntityView(name, view.entity_type, kept)
        return len(view.observations) - len(kept)

    def create_relation(self, like: RelationView, key: RelationKey) -> RelationView:
        """Create relation `key` with the attributes of `like` (an edit keeps weight,
        validity, properties and provenance)."""
        from_entity, to_entity, relation_type = key
        self.events.append(
            RelationCreated(
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
        )
        view = RelationView(
            from_entity,
            to_entity,
            relation_type,
            like.weight,
            dict(like.properties),
            like.valid_at,
            like.invalid_at,
            like.source_session,
            like.source_transcript,
            like.source_type,
        )
        self._touch(key, view)
        return view

    def delete_relation(self, relation: RelationView) -> None:
        key = relation_key(relation)
        self.events.append(
            RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2])
        )
        self._touch(key, None)

    def note(self, event: AnyEvent) -> None:
        """Append a marker event (it changes nothing the graph shows)."""
        self.events.append(event)

    def _touch(self, key: RelationKey, view: RelationView | None) -> None:
        self._relations[key] = view
        for end in (key[0], key[1]):
            self._touched_edges.setdefault(end, {})[key] = None
