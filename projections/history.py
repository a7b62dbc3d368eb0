"""HistoryProjection: per entity, the log positions of every event that touched it (provenance).

The index holds positions only, never the events: the log is the store, and the history of an
entity is read back from it by position when someone asks. Each entry is one integer, the
position shifted left by TAG_BITS plus the event's tag code, so filtering by kind or event type
needs no read. An entry is appended when an envelope beyond the projection's position arrives,
so entries stay in log order and applying the same envelopes again adds nothing.

What touches an entity (see `touched`): its own create/update/delete, its observations, the
relations it is an endpoint of, and the markers naming it (merges, renames, splits, audit notes
whose detail names it under "entity" or "entities"). Schema and decay events touch no entity.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Collection, Iterable
from typing import Any, ClassVar, get_args

import msgspec

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntitySplit,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)

__all__ = [
    "ENTITY",
    "EVENT_TAGS",
    "OBSERVATION",
    "RELATION",
    "HistoryProjection",
    "kind_of",
    "tag_of",
    "touched",
]

ENTITY, OBSERVATION, RELATION = "entity", "observation", "relation"

# Tag codes are part of the snapshot format: append new tags, never reorder (bump `version`).
EVENT_TAGS: tuple[str, ...] = (
    "EntityCreated",
    "EntityUpdated",
    "EntityDeleted",
    "ObservationAdded",
    "ObservationDeleted",
    "RelationCreated",
    "RelationUpdated",
    "RelationDeleted",
    "SchemaRegistered",
    "SchemaRetired",
    "EntitiesMerged",
    "EntitySplit",
    "EntityRenamed",
    "DecayApplied",
    "AuditRecorded",
)
TAG_BITS = 6
_TAG_MASK = (1 << TAG_BITS) - 1
_CODES = {tag: code for code, tag in enumerate(EVENT_TAGS)}
assert len(EVENT_TAGS) <= _TAG_MASK + 1
_CODE_OF_CLASS: dict[type[Any], int] = {
    cls: _CODES[cls.__struct_config__.tag] for cls in get_args(AnyEvent)
}


def tag_of(event: AnyEvent) -> str:
    """The event's type tag (its class name, as stored)."""
    return EVENT_TAGS[_CODE_OF_CLASS[type(event)]]


def kind_of(tag: str) -> str:
    """Which of an entity's flags an event type falls under: observation, relation or entity."""
    if tag.startswith("Observation"):
        return OBSERVATION
    if tag.startswith("Relation"):
        return RELATION
    return ENTITY


def _named(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


def touched(event: AnyEvent) -> tuple[str, ...]:
    """The entity names `event` touched, each once, in the order the event names them."""
    match event:
        case ObservationAdded() | ObservationDeleted():
            return (event.entity,)
        case EntityCreated() | EntityUpdated() | EntityDeleted():
            return (event.name,)
        case RelationCreated() | RelationUpdated() | RelationDeleted():
            if event.from_entity == event.to_entity:
                return (event.from_entity,)
            return (event.from_entity, event.to_entity)
        case EntitiesMerged():
            return tuple(dict.fromkeys((*event.sources, event.target)))
        case EntityRenamed():
            return tuple(dict.fromkeys((event.old_name, event.new_name)))
        case EntitySplit():
            return tuple(dict.fromkeys((event.source, *event.targets)))
        case AuditRecorded():
            detail = event.detail
            names = [*_named(detail.get("entity")), *_named(detail.get("entities"))]
            return tuple(dict.fromkeys(names))
        case _:
            return ()


_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(tuple[int, dict[str, bytes]])


def _entries() -> array[int]:
    return array("q")


class HistoryProjection:
    """Entity name -> entries (position << TAG_BITS | tag code), in log order.

    A Projection (projections.projection), but not a registered one: it is not checkpointed,
    only folded on its first use from the log's committed events (actors.read_models)."""

    name: ClassVar[str] = "history"
    version: ClassVar[int] = 1
    readable_versions: ClassVar[frozenset[int]] = frozenset()

    def __init__(self) -> None:
        self.position = 0
        self._index: dict[str, array[int]] = {}

    # --- folding --------------------------------------------------------------------------

    def apply(self, envelope: Envelope) -> None:
        self.apply_all((envelope,))

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:
        """Index envelopes fed in log order; those at or before `position` are already in."""
        index = self._index
        position = self.position
        for envelope in envelopes:
            if envelope.position <= position:
                continue
            position = envelope.position
            event = envelope.event
            names = touched(event)
            if not names:
                continue
            entry = (position << TAG_BITS) | _CODE_OF_CLASS[type(event)]
            for name in names:
                found = index.get(name)
                if found is None:
                    found = index[name] = _entries()
                found.append(entry)
        self.position = position

    # --- reading --------------------------------------------------------------------------

    def knows(self, name: str) -> bool:
        """True if any event ever touched `name` (a deleted entity is still known)."""
        return name in self._index

    def name_count(self) -> int:
        return len(self._index)

    def positions(
        self,
        name: str,
        *,
        observations: bool = True,
        relations: bool = True,
        event_types: Collection[str] | None = None,
    ) -> list[int]:
        """Positions of the events that touched `name`, in log order: without `observations`
        or `relations`, leaving out those kinds; with `event_types`, only those tags."""
        found = self._index.get(name)
        if found is None:
            return []
        codes = self._codes(observations, relations, event_types)
        if len(codes) == len(EVENT_TAGS):
            return [entry >> TAG_BITS for entry in found]
        return [entry >> TAG_BITS for entry in found if (entry & _TAG_MASK) in codes]

    @staticmethod
    def _codes(
        observations: bool, relations: bool, event_types: Collection[str] | None
    ) -> frozenset[int]:
        left_out = set()
        if not observations:
            left_out.add(OBSERVATION)
        if not relations:
            left_out.add(RELATION)
        return frozenset(
            code
            for code, tag in enumerate(EVENT_TAGS)
            if kind_of(tag) not in left_out and (event_types is None or tag in event_types)
        )

    # --- checkpoints ----------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        index = {name: _little_endian(entries) for name, entries in self._index.items()}
        return msgspec.msgpack.encode((self.position, index))

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> HistoryProjection:
        """The projection `to_snapshot` captured. Raises ValueError if `data` is not one."""
        try:
            position, index = _SNAPSHOT_DECODER.decode(data)
        except msgspec.DecodeError as error:
            raise ValueError(f"not a history snapshot: {error}") from None
        projection = cls()
        projection.position = position
        for name, raw in index.items():
            if len(raw) % 8:
                raise ValueError(f"not a history snapshot: {name!r} has a partial entry")
            entries = _entries()
            entries.frombytes(raw)
            if sys.byteorder == "big":
                entries.byteswap()
            projection._index[name] = entries
        return projection


def _little_endian(entries: array[int]) -> bytes:
    if sys.byteorder == "big":
        swapped = array("q", entries)
        swapped.byteswap()
        return swapped.tobytes()
    return entries.tobytes()
