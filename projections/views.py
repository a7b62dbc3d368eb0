"""Read-only values the graph projection hands out: entities, relations and whole snapshots."""

from __future__ import annotations

from typing import Any

import msgspec


class EntityView(msgspec.Struct, frozen=True):
    """An alive entity as readers see it; observations in stamp order, duplicates kept."""

    name: str
    entity_type: str
    observations: list[str]


class RelationView(msgspec.Struct, frozen=True):
    """A visible relation with its attribute registers' current values."""

    from_entity: str
    to_entity: str
    relation_type: str
    weight: float = 1.0
    properties: dict[str, Any] = {}
    valid_at: int | None = None
    invalid_at: int | None = None
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None


class GraphSnapshot(msgspec.Struct, frozen=True):
    """The whole visible graph in listing order: a canonical value, equal iff the graphs are."""

    entities: tuple[EntityView, ...]
    relations: tuple[RelationView, ...]
