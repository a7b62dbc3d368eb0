"""Plain creations, the events of a bulk import, stored without building an Envelope each.

An import into an empty store writes millions of EntityCreated, ObservationAdded and
RelationCreated events with every attribute at its default. Building each as an event and an
Envelope (two keyword-only structs), then encoding it, cost about 1 µs an event; these
positional mirrors encode, in half that, to the very bytes an Envelope of the event would
(msgpack maps in field order, the same tags and wire names, defaults omitted), so the log holds
ordinary envelopes and every reader decodes them as such. tests/eventstore/test_plain_events.py
holds them to that, byte for byte.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from eventstore.events import (
    ENVELOPE_WIRE_NAMES,
    AnyEvent,
    Cause,
    EntityCreated,
    ObservationAdded,
    RelationCreated,
)

__all__ = [
    "PlainAppend",
    "PlainEntity",
    "PlainEvent",
    "PlainObservation",
    "PlainRecord",
    "PlainRelation",
    "as_event",
    "encode_plain",
]


class PlainEntity(msgspec.Struct, tag_field="type", tag="EntityCreated", gc=False):
    """EntityCreated with every graph attribute at its default."""

    name: str
    entity_type: str


class PlainObservation(msgspec.Struct, tag_field="type", tag="ObservationAdded", gc=False):
    """ObservationAdded."""

    entity: str
    content: str


class PlainRelation(msgspec.Struct, tag_field="type", tag="RelationCreated", gc=False):
    """RelationCreated with weight 1 and no other attribute."""

    from_entity: str
    to_entity: str
    relation_type: str


PlainEvent = PlainEntity | PlainObservation | PlainRelation


class PlainRecord(msgspec.Struct, gc=False, omit_defaults=True, rename=ENVELOPE_WIRE_NAMES):
    """An Envelope of a plain event, as stored: the same fields in the same order."""

    position: int
    origin: str
    origin_seq: int
    hlc: int
    tx: int
    event: PlainEvent
    cause: Cause | None = None


encode_plain = msgspec.msgpack.Encoder().encode
"""A PlainRecord's stored bytes: its Envelope's."""


class PlainAppend(NamedTuple):
    """Where one append_plain put its events: positions and origin_seqs run on by one from
    these, all stamped with `hlc` by `origin`."""

    first_position: int
    first_seq: int
    hlc: int
    origin: str


def as_event(plain: PlainEvent) -> AnyEvent:
    """The event `plain` stands for."""
    match plain:
        case PlainEntity(name, entity_type):
            return EntityCreated(name=name, entity_type=entity_type)
        case PlainObservation(entity, content):
            return ObservationAdded(entity=entity, content=content)
        case PlainRelation(from_entity, to_entity, relation_type):
            return RelationCreated(
                from_entity=from_entity, to_entity=to_entity, relation_type=relation_type
            )
