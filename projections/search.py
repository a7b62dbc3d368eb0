"""SearchProjection: the official `search_nodes` semantics, fast — a case-insensitive substring
of an entity's name, type or any observation.

Each alive entity has one lowercased text, `name \\0 type \\0 obs1 \\0 obs2 ...`; a query (which
cannot contain NUL: the edge refuses control characters) matches the entity iff it occurs in
that text, and can never match across a separator. Texts are packed into segments of a few
hundred entities joined by a separator, so one `str.find` rejects a whole segment at C speed;
only segments that contain a hit are walked entity by entity.

The index follows the graph projection: the writer tells it which entity names the applied
events touched, and those names are re-read from the graph lazily, on the next search. It keeps
entities in the graph's listing order (latest creation first-to-last); when an older creation
arrives late (replication), results are sorted by creation stamp before they are returned.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Protocol

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
)

SEGMENT_SIZE = 512
_FIELD = "\x00"
_ENTITY = "\x01"


class _Entity(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def entity_type(self) -> str: ...

    @property
    def observations(self) -> list[str]: ...


class EntitySource(Protocol):
    """What the index reads from the graph projection."""

    def entity(self, name: str) -> _Entity | None: ...

    def creation_key(self, name: str) -> object | None: ...


def _text(entity: _Entity) -> str:
    return _FIELD.join((entity.name, entity.entity_type, *entity.observations)).lower()


class _Segment:
    __slots__ = ("joined", "names", "starts", "texts")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.texts: list[str] = []
        self.joined: str | None = None
        self.starts: list[int] = []

    def pack(self) -> str:
        if self.joined is None:
            self.joined = _ENTITY.join(self.texts)
            starts, offset = [], 0
            for text in self.texts:
                starts.append(offset)
                offset += len(text) + 1
            self.starts = starts
        return self.joined

    def matches(self, needle: str) -> list[str]:
        joined = self.pack()
        at = joined.find(needle)
        if at < 0:
            return []
        found: list[str] = []
        starts, names, texts = self.starts, self.names, self.texts
        while at >= 0:
            index = bisect_right(starts, at) - 1
            found.append(names[index])
            nxt = starts[index] + len(texts[index]) + 1
            at = joined.find(needle, nxt)
        return found


class SearchProjection:
    """Substring search over alive entities, in listing order."""

    name = "search"
    version = 1

    _TOUCHING = (EntityCreated, EntityUpdated, EntityDeleted, ObservationAdded, ObservationDeleted)

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._where: dict[str, _Segment] = {}
        self._keys: dict[str, object] = {}
        self._dirty: set[str] = set()
        self._last_key: object | None = None
        self._maybe_unordered = False

    def note(self, envelopes: Iterable[Envelope]) -> None:
        """Remember which entities the applied envelopes touched (cheap; re-read later)."""
        dirty = self._dirty
        for envelope in envelopes:
            event = envelope.event
            if isinstance(event, ObservationAdded | ObservationDeleted):
                dirty.add(event.entity)
            elif isinstance(event, EntityCreated | EntityUpdated | EntityDeleted):
                dirty.add(event.name)

    def note_names(self, names: Iterable[str]) -> None:
        """Remember entities to (re-)read, e.g. every one of a graph restored from a snapshot:
        the index itself is never stored, it is rebuilt from the graph on the next search."""
        self._dirty.update(names)

    def reset(self) -> None:
        self._segments = []
        self._where = {}
        self._keys = {}
        self._dirty = set()
        self._last_key = None
        self._maybe_unordered = False

    def search(self, graph: EntitySource, query: str) -> list[str]:
        """Names of alive entities whose name, type or an observation contains `query`."""
        self._refresh(graph)
        needle = query.lower()
        found: list[str] = []
        for segment in self._segments:
            if segment.names:
                found.extend(segment.matches(needle))
        if self._maybe_unordered and len(found) > 1:
            found.sort(key=graph.creation_key)  # type: ignore[arg-type]
        return found

    def _refresh(self, graph: EntitySource) -> None:
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        added: list[tuple[object, str, _Entity]] = []
        for name in dirty:
            key = graph.creation_key(name)
            entity = graph.entity(name) if key is not None else None
            segment = self._where.get(name)
            if segment is not None and entity is not None and self._keys[name] == key:
                # Same incarnation (new observations, new type): its place does not change.
                index = segment.names.index(name)
                segment.texts[index] = _text(entity)
                segment.joined = None
                continue
            if segment is not None:
                self._remove(name)
            if entity is not None:
                added.append((key, name, entity))
        # New incarnations go last, in creation order, which is the graph's listing order.
        added.sort(key=lambda item: item[0])  # type: ignore[arg-type,return-value]
        for key, name, entity in added:
            self._append(name, _text(entity), key)

    def _remove(self, name: str) -> None:
        segment = self._where.pop(name, None)
        self._keys.pop(name, None)
        if segment is None:
            return
        index = segment.names.index(name)
        del segment.names[index]
        del segment.texts[index]
        segment.joined = None

    def _append(self, name: str, text: str, key: object) -> None:
        if self._last_key is not None and key < self._last_key:  # type: ignore[operator]
            self._maybe_unordered = True
        else:
            self._last_key = key
        segments = self._segments
        if not segments or len(segments[-1].names) >= SEGMENT_SIZE:
            segments.append(_Segment())
        segment = segments[-1]
        segment.names.append(name)
        segment.texts.append(text)
        segment.joined = None
        self._where[name] = segment
        self._keys[name] = key
