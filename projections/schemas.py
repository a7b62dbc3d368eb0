"""SchemaProjection: the entity-type schemas in force, folded from SchemaRegistered/Retired.

A schema is an element keyed by its type name, decided by last-writer-wins on the stamp like
every other element (ARCHITECTURE §3), so every process sharing a log, and every replica, agrees
on the schemas in force. A registered document that no longer parses (written by a newer
graphmem, say) is kept out of force rather than failing the fold.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eventstore.events import Envelope, SchemaRegistered, SchemaRetired, Stamp
from projections.entity_schema import EntitySchema, SchemaFileError, parse_schema

__all__ = ["SchemaProjection", "SchemaRecord"]


class SchemaRecord(msgspec.Struct, frozen=True):
    """A type's latest registration or retirement; `schema` is None when retired."""

    type_name: str
    digest: str
    source: str
    schema: EntitySchema | None
    stamp: Stamp


class SchemaProjection:
    """Type name -> schema in force (pure, no I/O). `version` counts changes, so a reader can
    cache what it derives from the schemas (the dynamic tool list) and notice a change."""

    name = "schemas"

    def __init__(self) -> None:
        self.position = 0
        self.version = 0
        self._records: dict[str, SchemaRecord] = {}

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:
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
        else:
            record = SchemaRecord(
                event.type_name, event.digest, event.source, _parsed(event.schema_json), stamp
            )
        self._records[event.type_name] = record
        self.version += 1

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
    try:
        schema = parse_schema(msgspec.json.decode(schema_json))
    except (msgspec.DecodeError, SchemaFileError):
        return None
    return schema
