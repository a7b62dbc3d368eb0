"""An entity's embed text (contract §7), and which entities an event touches."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
)
from projections.graph import GraphProjection

__all__ = ["EMBED_PROPERTIES", "EntityText", "embed_text", "entity_texts", "text_key", "touched"]

# After the name and type, these values, in this order, when they are non-empty strings.
EMBED_PROPERTIES = ("subtype", "description", "role", "category", "what", "specialty")
SEPARATOR = " — "
_ENTITY_EVENTS = (EntityCreated, EntityUpdated, EntityDeleted)
_OBSERVATION_EVENTS = (ObservationAdded, ObservationDeleted)

# (name, type, embed text) of an alive entity.
EntityText = tuple[str, str, str]


def embed_text(name: str, entity_type: str, subtype: str | None, properties: Any) -> str:
    """Name, type, then subtype, description, role, category, what, specialty (each when a
    non-empty string), joined with " — ". Upstream's comment says "first non-empty wins" but
    its code joins them all; so does graphmem."""
    parts = [name, entity_type]
    for key in EMBED_PROPERTIES:
        value = subtype if key == "subtype" else properties.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value)
    return SEPARATOR.join(parts)


def text_key(text: str) -> bytes:
    """The text half of a cache key: sha256 of its UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def entity_texts(
    graph: GraphProjection, names: Iterable[str] | None = None
) -> tuple[list[EntityText], list[str]]:
    """The embed texts of the alive entities among `names` (all alive entities: None), and
    the names that are not alive (gone: their vectors are dropped)."""
    wanted: Sequence[str] = graph.entity_names() if names is None else list(names)
    alive: list[EntityText] = []
    gone: list[str] = []
    for name in wanted:
        attrs = graph.entity_attributes(name)
        if attrs is None:
            gone.append(name)
            continue
        entity_type = graph.entity_type(name) or ""
        text = embed_text(name, entity_type, attrs.subtype, attrs.properties)
        alive.append((name, entity_type, text))
    return alive, gone


def touched(envelopes: Iterable[Envelope]) -> set[str]:
    """The entity names whose embed text these committed events may change (the same rule
    as the family index's: entity and observation events name the entity they change)."""
    names: set[str] = set()
    for envelope in envelopes:
        event = envelope.event
        kind = type(event)
        if kind in _ENTITY_EVENTS:
            names.add(event.name)  # type: ignore[union-attr]
        elif kind in _OBSERVATION_EVENTS:
            names.add(event.entity)  # type: ignore[union-attr]
    return names
