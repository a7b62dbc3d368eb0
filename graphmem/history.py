"""Events as history records, for people and machines: shared by read_history and the CLI.

A record is one envelope as a plain dict: where it sits in the log (position), when and where
it was written (time from its hybrid clock, node, seq), the transaction it belongs to and that
transaction's cause (tool, client, session), the event type and the event's fields. Causes are
stored on the first envelope of a transaction only (see Envelope), so they are looked up here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, assert_never

import msgspec

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    Cause,
    DecayApplied,
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
    SchemaRegistered,
    SchemaRetired,
)
from eventstore.hlc import ms_of
from projections.graph_time import iso_ms
from projections.history import HistoryProjection, tag_of

__all__ = [
    "Causes",
    "EnvelopeSource",
    "HistoryPage",
    "entity_history",
    "event_fields",
    "iso_time",
    "read_page",
    "read_positions",
    "record",
    "summary",
    "transaction_id",
]


class EnvelopeSource(Protocol):
    """What history reads from: an event log (EventLog satisfies it)."""

    def read_from(self, position: int) -> Iterator[Envelope]: ...

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]: ...


# --- one envelope as a record ------------------------------------------------------------------


def iso_time(hlc: int) -> str:
    """The wall time of a hybrid clock stamp, ISO 8601 in UTC to the millisecond."""
    return iso_ms(ms_of(hlc))


def transaction_id(envelope: Envelope) -> str:
    """`<origin>:<tx>`: names a transaction on every node."""
    return f"{envelope.origin}:{envelope.tx}"


# The official tools' names for the fields they share with events; others become camelCase.
_WIRE_NAMES = {"entity": "entityName", "from_entity": "from", "to_entity": "to"}
_SNAKE = re.compile(r"_([a-z0-9])")


@functools.cache  # a few dozen field names in all
def _wire_name(field: str) -> str:
    return _WIRE_NAMES.get(field) or _SNAKE.sub(lambda m: m.group(1).upper(), field)


def event_fields(event: AnyEvent) -> dict[str, Any]:
    """The event's fields under wire names; None (unchanged, unknown) and empty collections are
    left out, as they say nothing."""
    fields: dict[str, Any] = {}
    for name in event.__struct_fields__:
        value = getattr(event, name)
        if value is None or (isinstance(value, dict | list | tuple) and not value):
            continue
        plain = isinstance(value, str | int | float)
        fields[_wire_name(name)] = value if plain else msgspec.to_builtins(value)
    return fields


def _cause(cause: Cause | None) -> dict[str, str | None] | None:
    if cause is None:
        return None
    return {"tool": cause.tool, "client": cause.client, "session": cause.session}


def record(envelope: Envelope, cause: Cause | None) -> dict[str, Any]:
    """One envelope as a record; `cause` is its transaction's (see Causes)."""
    event = envelope.event
    return {
        "position": envelope.position,
        "time": iso_time(envelope.hlc),
        "hlc": envelope.hlc,
        "node": envelope.origin,
        "seq": envelope.origin_seq,
        "transaction": transaction_id(envelope),
        "cause": _cause(cause),
        "event": tag_of(event),
        "fields": event_fields(event),
    }


def _quoted(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _relation(event: RelationCreated | RelationUpdated | RelationDeleted) -> str:
    return f"{event.from_entity} -[{event.relation_type}]-> {event.to_entity}"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def summary(event: AnyEvent) -> str:
    """One line saying what the event did, for tables."""
    tag = tag_of(event)
    match event:
        case EntityCreated():
            return f"{tag} {event.name} ({event.entity_type})"
        case EntityUpdated():
            retyped = "" if event.entity_type is None else f" type={event.entity_type}"
            return f"{tag} {event.name}{retyped}"
        case EntityDeleted():
            return f"{tag} {event.name}"
        case ObservationAdded() | ObservationDeleted():
            return f"{tag} {event.entity}: {_quoted(event.content)}"
        case RelationCreated():
            return f"{tag} {_relation(event)} weight={event.weight:g}"
        case RelationUpdated():
            weight = "" if event.weight is None else f" weight={event.weight:g}"
            return f"{tag} {_relation(event)}{weight}"
        case RelationDeleted():
            return f"{tag} {_relation(event)}"
        case SchemaRegistered() | SchemaRetired():
            return f"{tag} {event.type_name}"
        case EntitiesMerged():
            return f"{tag} {_names(event.sources)} into {event.target}"
        case EntitySplit():
            return f"{tag} {event.source} into {_names(event.targets)}"
        case EntityRenamed():
            return f"{tag} {event.old_name} to {event.new_name}"
        case DecayApplied():
            return f"{tag} rate={event.rate:g} affected={event.affected}"
        case AuditRecorded():
            return f"{tag} {event.action}"
        case _:
            assert_never(event)


# --- causes ------------------------------------------------------------------------------------

_NO_CAUSE = Cause(tool="")  # cached "looked up, and there is none"
_CACHED_CAUSES = 4096


class Causes:
    """Looks up the cause of an envelope's transaction, reading the log as little as it can.

    The events of one transaction sit together in the log, first event first, so a reader
    going through the log in order (and `note`-ing every envelope) finds each cause on the way;
    otherwise the first event is read by its origin and seq, and remembered.
    """

    def __init__(self, source: EnvelopeSource) -> None:
        self._source = source
        self._last: tuple[str, int] | None = None
        self._last_cause: Cause | None = None
        self._cache: dict[tuple[str, int], Cause] = {}

    def note(self, envelope: Envelope) -> None:
        """Remember the cause if `envelope` opens its transaction."""
        if envelope.origin_seq == envelope.tx:
            self._last = (envelope.origin, envelope.tx)
            self._last_cause = envelope.cause

    def of(self, envelope: Envelope) -> Cause | None:
        if envelope.origin_seq == envelope.tx:
            return envelope.cause
        key = (envelope.origin, envelope.tx)
        if key == self._last:
            return self._last_cause
        cause = self._cache.get(key)
        if cause is None:
            first = self._source.read_origin(envelope.origin, envelope.tx, envelope.tx)
            cause = (first[0].cause if first else None) or _NO_CAUSE
            if len(self._cache) >= _CACHED_CAUSES:
                self._cache.clear()  # a stream moves on: old transactions rarely come back
            self._cache[key] = cause
        return None if cause is _NO_CAUSE else cause

    def prime(self, envelopes: Sequence[Envelope]) -> None:
        """Remember the causes of transactions whose first envelopes are among `envelopes`."""
        for envelope in envelopes:
            if envelope.origin_seq == envelope.tx:
                self._cache[(envelope.origin, envelope.tx)] = envelope.cause or _NO_CAUSE


# --- reading by position -----------------------------------------------------------------------

# Positions closer than this are read in one pass over the log rather than by a fresh read:
# skipping a few hundred records costs less than starting a read.
_SAME_READ_GAP = 256


def _runs(positions: list[int]) -> Iterator[list[int]]:
    run: list[int] = []
    for position in positions:
        if run and position - run[-1] > _SAME_READ_GAP:
            yield run
            run = []
        run.append(position)
    if run:
        yield run


def read_positions(source: EnvelopeSource, positions: Collection[int]) -> list[Envelope]:
    """The envelopes at `positions`, in log order, in as few reads as the gaps allow."""
    found: list[Envelope] = []
    for run in _runs(sorted(set(positions))):
        wanted = set(run)
        last = run[-1]
        for envelope in source.read_from(run[0]):
            if envelope.position in wanted:
                found.append(envelope)
            if envelope.position >= last:
                break
    return found


def _causes_for(source: EnvelopeSource, envelopes: Sequence[Envelope]) -> Causes:
    """Causes for `envelopes`, their transactions' first events read in one batch: a
    transaction's events are contiguous in the log, so its first sits `seq - tx` before."""
    causes = Causes(source)
    causes.prime(envelopes)
    openers = {
        e.position - (e.origin_seq - e.tx)
        for e in envelopes
        if e.origin_seq != e.tx and e.position - (e.origin_seq - e.tx) > 0
    }
    causes.prime(read_positions(source, openers))
    return causes


# --- an entity's history -----------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryPage:
    """What read_history answers: the events (log order, newest last) and how many matched."""

    name: str
    events: list[dict[str, Any]]
    total: int

    def to_value(self) -> dict[str, Any]:
        return {"name": self.name, "events": self.events, "total": self.total}


def read_page(
    source: EnvelopeSource, name: str, positions: Sequence[int], limit: int | None = None
) -> HistoryPage:
    """The page for `name` of the events at `positions` (log order): the last `limit` of them
    read from `source`, each with its cause; `total` counts them all."""
    shown = positions if limit is None else positions[-limit:] if limit > 0 else []
    envelopes = read_positions(source, shown)
    causes = _causes_for(source, envelopes)
    return HistoryPage(name, [record(e, causes.of(e)) for e in envelopes], len(positions))


def entity_history(
    index: HistoryProjection,
    source: EnvelopeSource,
    name: str,
    *,
    observations: bool = True,
    relations: bool = True,
    event_types: Collection[str] | None = None,
    limit: int | None = None,
) -> HistoryPage | None:
    """Every event that touched `name` (the last `limit` of them), or None if none ever did."""
    if not index.knows(name):
        return None
    positions = index.positions(
        name, observations=observations, relations=relations, event_types=event_types
    )
    return read_page(source, name, positions, limit)
