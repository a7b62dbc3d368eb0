"""SchemaProjection: the entity-type schemas in force, folded from SchemaRegistered/Retired.

A schema is an element keyed by its type name, decided by last-writer-wins on the stamp like
every other element (architecture §3), so every process sharing a log, and every replica, agrees
on the schemas in force. A registered document that no longer parses (written by a newer
graphmem, say) or is nested too deep is kept out of force rather than failing the fold.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from typing import ClassVar

import msgspec

from eventstore.events import Envelope, SchemaRegistered, SchemaRetired, Stamp
from projections.bounded_json import exceeds_depth
from projections.entity_schema import EntitySchema, SchemaFileError, parse_schema

__all__ = ["SchemaProjection", "SchemaRecord"]


class SchemaRecord(msgspec.Struct, frozen=True):
    """A type's latest registration or retirement; `schema` is None when retired."""

    type_name: str
    digest: str
    source: str
    schema: EntitySchema | None
    stamp: Stamp


# A record as a snapshot holds it: the registered document itself (None when retired), so that
# restoring parses it exactly as folding the event did.
_SnapshotRecord = tuple[str, str, str, str | None, Stamp]
_SCHEMA_EVENTS = frozenset((SchemaRegistered, SchemaRetired))
_EVENT = attrgetter("event")
_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(tuple[int, int, list[_SnapshotRecord]])


class SchemaProjection:
    """Type name -> schema in force (pure, no I/O). `revision` counts changes, so a reader can
    cache what it derives from the schemas (the dynamic tool list) and notice a change;
    `version` is the snapshot format's, as in every projection."""

    name: ClassVar[str] = "schemas"
    version: ClassVar[int] = 1
    # Other format versions from_snapshot reads (see GraphProjection.readable_versions).
    readable_versions: ClassVar[frozenset[int]] = frozenset()

    def __init__(self) -> None:
        self.position = 0
        self.revision = 0
        self._records: dict[str, SchemaRecord] = {}
        self._documents: dict[str, str] = {}  # type name -> registered JSON, for snapshots

    def to_snapshot(self) -> bytes:
        records = [
            (r.type_name, r.digest, r.source, self._documents.get(r.type_name), r.stamp)
            for r in self._records.values()
        ]
        return msgspec.msgpack.encode((self.position, self.revision, records))

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> SchemaProjection:
        """The projection `to_snapshot` captured. Raises ValueError if `data` is not one."""
        try:
            position, revision, records = _SNAPSHOT_DECODER.decode(data)
        except msgspec.DecodeError as error:
            raise ValueError(f"not a schemas snapshot: {error}") from None
        projection = cls()
        projection.position = position
        projection.revision = revision
        for type_name, digest, source, document, stamp in records:
            if document is None:
                projection._records[type_name] = SchemaRecord(type_name, "", "", None, stamp)
            else:
                projection._records[type_name] = SchemaRecord(
                    type_name, digest, source, _parsed(document), stamp
                )
                projection._documents[type_name] = document
        return projection

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:
        if isinstance(envelopes, list | tuple) and _SCHEMA_EVENTS.isdisjoint(
            map(type, map(_EVENT, envelopes))
        ):
            # Schema events are rare: a chunk without one is looked through at C speed
            # rather than visited envelope by envelope.
            if envelopes:
                self.position = max(self.position, envelopes[-1].position)
            return
        position = self.position
        for envelope in envelopes:
            event = envelope.event
            if isinstance(event, SchemaRegistered | SchemaRetired):
                self._apply(event, envelope.stamp)
            position = max(position, envelope.position)
        self.position = position

    def _apply(self, event: SchemaRegistered | SchemaRetired, stamp: Stamp) -> None:
        current = self._records.get(event.type_name)
        if current is not None and stamp <= current.stamp:
            return
        if isinstance(event, SchemaRetired):
            record = SchemaRecord(event.type_name, "", "", None, stamp)
            self._documents.pop(event.type_name, None)
        else:
            record = SchemaRecord(
                event.type_name, event.digest, event.source, _parsed(event.schema_json), stamp
            )
            self._documents[event.type_name] = event.schema_json
        self._records[event.type_name] = record
        self.revision += 1

    def schemas(self) -> list[EntitySchema]:
        """The schemas in force, by type name."""
        return [r.schema for _, r in sorted(self._records.items()) if r.schema is not None]

    def schema(self, type_name: str) -> EntitySchema | None:
        record = self._records.get(type_name)
        return None if record is None else record.schema

    def record(self, type_name: str) -> SchemaRecord | None:
        return self._records.get(type_name)

    def records(self) -> list[SchemaRecord]:
        return [r for _, r in sorted(self._records.items())]


def _parsed(schema_json: str) -> EntitySchema | None:
    # A document nested too deep (registered before files were bounded, or by hand) stays out
    # of force like one that does not parse: the fold must not fail on it. The depth limit is
    # a fixed number, so every process decides alike; RecursionError only comes far past it.
    try:
        document = msgspec.json.decode(schema_json)
        if exceeds_depth(document):
            return None
        schema = parse_schema(document)
    except (msgspec.DecodeError, SchemaFileError, RecursionError):
        return None
    return schema
