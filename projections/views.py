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


class EntityAttributes(msgspec.Struct, frozen=True):
    """An alive entity's graph attributes, unset ones at their defaults (times in wall ms)."""

    name: str
    confidence: float = 0.5
    times_mentioned: int = 1
    last_seen: int = 0  # unset: the latest creation's stamp time
    subtype: str | None = None
    source_file: str | None = None
    aliases: list[str] = []
    properties: dict[str, Any] = {}


class RelationDetails(msgspec.Struct, frozen=True):
    """A visible relation's graph-family attributes beyond RelationView's (times in wall ms;
    unset ones read as the latest creation's stamp time)."""

    from_entity: str
    to_entity: str
    relation_type: str
    evidence: str | None = None
    ingested_at: int = 0
    last_confirmed: int = 0


class GraphSnapshot(msgspec.Struct, frozen=True):
    """The whole visible graph in listing order: a canonical value, equal iff the graphs are."""

    entities: tuple[EntityView, ...]
    relations: tuple[RelationView, ...]
