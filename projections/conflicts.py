"""ConflictsProjection: the elements more than one node has written, and which write won.

The graph fold settles concurrent writes by last-writer-wins, silently; this read model makes
the settlement visible. An element is an entity (by name), an observation content on an entity,
or a relation (by from, to, type) — the units the fold decides. For each, the projection keeps
the latest write of every origin that wrote it (its stamp and event type); an element with
writes from two or more origins is a conflict, and the write with the highest stamp is the one
the fold kept. Like the graph it is pure and depends only on the set of envelopes applied.

Almost every element has a single writer, so that case is stored as one small tuple; the
per-origin dict is made only once a second origin shows up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import msgspec

from eventstore.events import (
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

__all__ = ["Conflict", "ConflictWrite", "ConflictsProjection"]

ElementKey = tuple[str, ...]
"""("entity", name) | ("observation", entity, content) | ("relation", from, to, type)"""

# (hlc, origin, origin_seq, event type): ordered like the stamp, which is unique per event.
_Write = tuple[int, str, int, str]


class ConflictWrite(msgspec.Struct, frozen=True):
    """One origin's latest write to an element."""

    origin: str
    hlc: int
    origin_seq: int
    event: str


class Conflict(msgspec.Struct, frozen=True):
    """An element written by several origins: each origin's latest write, oldest first, and the
    write the fold kept (the highest stamp)."""

    kind: str
    key: tuple[str, ...]
    writes: tuple[ConflictWrite, ...]
    kept: ConflictWrite

    def touches(self, entity: str) -> bool:
        """True if this element is the entity, one of its observations, or one of its relations."""
        if self.kind == "relation":
            return entity in (self.key[0], self.key[1])
        return self.key[0] == entity


_OBSERVATION_ADDED = ObservationAdded
_OBSERVATION_DELETED = ObservationDeleted
_ENTITY_EVENTS = frozenset((EntityCreated, EntityUpdated, EntityDeleted))
_RELATION_EVENTS = frozenset((RelationCreated, RelationUpdated, RelationDeleted))


_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(
    tuple[
        int, dict[tuple[str, ...], tuple[int, str, int, str] | dict[str, tuple[int, str, int, str]]]
    ]
)


def _view(write: _Write) -> ConflictWrite:
    return ConflictWrite(write[1], write[0], write[2], write[3])


class ConflictsProjection:
    """Per element, the latest write of each origin; conflicts are elements with several."""

    name: ClassVar[str] = "conflicts"
    version: ClassVar[int] = 1  # as GraphProjection.version
    readable_versions: ClassVar[frozenset[int]] = (
        frozenset()
    )  # as GraphProjection.readable_versions

    def __init__(self) -> None:
        self.position = 0
        self._writes: dict[ElementKey, _Write | dict[str, _Write]] = {}
        self._conflicted: set[ElementKey] = set()

    def to_snapshot(self) -> bytes:
        return msgspec.msgpack.encode((self.position, self._writes))

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> ConflictsProjection:
        """The projection `to_snapshot` captured. Raises ValueError if `data` is not one."""
        try:
            position, writes = _SNAPSHOT_DECODER.decode(data)
        except msgspec.DecodeError as error:
            raise ValueError(f"not a conflicts snapshot: {error}") from None
        projection = cls()
        projection.position = position
        projection._writes = writes
        # An element is conflicted exactly when a second origin has written it.
        projection._conflicted = {key for key, known in writes.items() if type(known) is dict}
        return projection

    def apply(self, envelope: Envelope) -> None:
        self.apply_all((envelope,))

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:
        # A rebuild folds every event of the log through here: the element key is built inline
        # (a call per event cost a tenth of the fold), and so is the position's maximum.
        writes = self._writes
        known_write = writes.get
        position = self.position
        for envelope in envelopes:
            if envelope.position > position:  # noqa: PLR1730 (a call costs more, per event)
                position = envelope.position
            event: Any = envelope.event
            kind = type(event)
            key: ElementKey
            if kind is _OBSERVATION_ADDED or kind is _OBSERVATION_DELETED:
                key = ("observation", event.entity, event.content)
            elif kind in _ENTITY_EVENTS:
                key = ("entity", event.name)
            elif kind in _RELATION_EVENTS:
                key = ("relation", event.from_entity, event.to_entity, event.relation_type)
            else:
                continue  # schema events and markers write no graph element
            write = (envelope.hlc, envelope.origin, envelope.origin_seq, kind.__name__)
            known = known_write(key)
            if known is None:
                writes[key] = write
            elif isinstance(known, tuple):
                if known[1] == write[1]:
                    if write > known:
                        writes[key] = write
                else:
                    writes[key] = {known[1]: known, write[1]: write}
                    self._conflicted.add(key)
            else:
                mine = known.get(write[1])
                known[write[1]] = write if mine is None else max(mine, write)
        self.position = position

    def count(self) -> int:
        return len(self._conflicted)

    def conflicts(self, entity: str | None = None, limit: int | None = None) -> list[Conflict]:
        """Conflicts, most recently settled first (by the kept write's stamp); with `entity`,
        only those about that entity, its observations or its relations."""
        found: list[Conflict] = []
        for key in self._conflicted:
            by_origin = self._writes[key]
            assert isinstance(by_origin, dict), "a conflicted element has several writers"
            writes = sorted(by_origin.values())
            conflict = Conflict(key[0], key[1:], tuple(map(_view, writes)), _view(writes[-1]))
            if entity is None or conflict.touches(entity):
                found.append(conflict)
        found.sort(key=lambda c: (c.kept.hlc, c.kept.origin, c.kept.origin_seq), reverse=True)
        return found if limit is None else found[:limit]
