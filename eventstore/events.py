"""The event vocabulary: past-tense facts about one element each, and the envelope around them.

Tags are explicit and equal to the class name; they are part of the storage format and never
change. Evolution is additive only: a new field always has a default (see docs/architecture.md §2).
Storage metadata (position, origin, clock, transaction, cause) lives in the envelope, never in
an event.
"""

from __future__ import annotations

from typing import Any

import msgspec

# Observation contents and relation properties are arbitrary JSON values at the edges; inside
# events they are kept as plain msgpack-able values.
JsonValue = Any


class Event(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True, tag_field="type"
):
    """Base of every event; never stored on its own."""


# --- entities -------------------------------------------------------------------------------


# The graph family's entity attributes ride on EntityCreated and EntityUpdated as absolute
# values decided where the command ran (so each is a last-writer-wins register in the fold):
# confidence in [0, 1]; times_mentioned, a count; last_seen, wall milliseconds of the clock that
# stamps the log; subtype and source_file, optional strings; aliases, the whole list; properties,
# the whole object after the write's merge. Times are wall milliseconds since the epoch.


class EntityCreated(Event, frozen=True, tag="EntityCreated"):
    """An entity came into existence (or was re-created, starting fresh).

    The graph attributes left at their defaults mean: confidence 0.5, mentioned once, last seen
    at this event's stamp, no subtype, source file, aliases or properties. A move (rename,
    merge) carries them over by setting them here."""

    name: str
    entity_type: str
    confidence: float | None = None
    times_mentioned: int | None = None
    last_seen: int | None = None
    subtype: str | None = None
    source_file: str | None = None
    aliases: list[str] = []
    properties: dict[str, JsonValue] = {}


class EntityUpdated(Event, frozen=True, tag="EntityUpdated"):
    """An entity's attributes were set; fields left at None are unchanged.

    `cleared` names attributes set back to "not set" (subtype, source_file), since None here
    means unchanged; an attribute is never both given and cleared by one event."""

    name: str
    entity_type: str | None = None
    confidence: float | None = None
    times_mentioned: int | None = None
    last_seen: int | None = None
    subtype: str | None = None
    source_file: str | None = None
    aliases: list[str] | None = None
    properties: dict[str, JsonValue] | None = None
    cleared: list[str] = []


class EntityDeleted(Event, frozen=True, tag="EntityDeleted"):
    """An entity was deleted, hiding everything written to it before."""

    name: str


# --- observations ---------------------------------------------------------------------------


class ObservationAdded(Event, frozen=True, tag="ObservationAdded"):
    """One occurrence of an observation content was added to an entity."""

    entity: str
    content: str


class ObservationDeleted(Event, frozen=True, tag="ObservationDeleted"):
    """Every earlier occurrence of a content on an entity was deleted."""

    entity: str
    content: str


# --- relations ------------------------------------------------------------------------------


class RelationCreated(Event, frozen=True, tag="RelationCreated"):
    """A directed, typed relation was created between two entities."""

    from_entity: str
    to_entity: str
    relation_type: str
    weight: float = 1.0
    properties: dict[str, JsonValue] = {}
    # Temporal validity in wall milliseconds since the epoch (None: open-ended).
    valid_at: int | None = None
    invalid_at: int | None = None
    # Provenance: where the fact came from (the names the graph family uses).
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None
    # Why the edge exists, in the writer's words.
    evidence: str | None = None
    # When graphmem first learned the fact and when it was last reinforced, wall milliseconds;
    # None: this event's stamp. A move (rename, merge) keeps the original by setting them.
    ingested_at: int | None = None
    last_confirmed: int | None = None


class RelationUpdated(Event, frozen=True, tag="RelationUpdated"):
    """A relation's attributes were set; fields left at None are unchanged.

    `cleared` names attributes set back to "not set", since None here means unchanged:
    `["invalid_at"]` re-opens a superseded edge. An attribute is never both given and cleared
    by one event."""

    from_entity: str
    to_entity: str
    relation_type: str
    weight: float | None = None
    properties: dict[str, JsonValue] | None = None
    valid_at: int | None = None
    invalid_at: int | None = None
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None
    evidence: str | None = None
    last_confirmed: int | None = None
    cleared: list[str] = []


class RelationDeleted(Event, frozen=True, tag="RelationDeleted"):
    """A relation was deleted."""

    from_entity: str
    to_entity: str
    relation_type: str


# --- schemas --------------------------------------------------------------------------------


class SchemaRegistered(Event, frozen=True, tag="SchemaRegistered"):
    """An entity-type schema came into force (new, or its file's content changed)."""

    type_name: str
    schema_json: str
    digest: str
    source: str = ""


class SchemaRetired(Event, frozen=True, tag="SchemaRetired"):
    """An entity-type schema went out of force."""

    type_name: str


# --- markers for composite operations (history and undo read them; the graph fold does not) --


class EntitiesMerged(Event, frozen=True, tag="EntitiesMerged"):
    """Entities were merged into a target; records what moved so it can be shown or undone."""

    sources: list[str]
    target: str
    # Contents added to the target (those it lacked), in order.
    moved_observations: list[str] = []
    # The sources' relations as they were, each re-created on the target.
    moved_relations: list[tuple[str, str, str]] = []
    # The sources' relations deleted without a counterpart: the target already had the
    # repointed relation, or it would have linked the target to itself by accident.
    dropped_relations: list[tuple[str, str, str]] = []


class EntitySplit(Event, frozen=True, tag="EntitySplit"):
    """A merge was undone or an entity was split into others."""

    source: str
    targets: list[str]


class EntityRenamed(Event, frozen=True, tag="EntityRenamed"):
    """An entity was renamed (written beside the tombstones and creations that do it)."""

    old_name: str
    new_name: str


class DecayApplied(Event, frozen=True, tag="DecayApplied"):
    """Confidence decay was evaluated at a point in time.

    One event per run, not one per element: the read model derives each decayed value from
    the newest run at or after the element's reference time, with the run's own rates, so
    the result is the same however often decay ran. `rate` applies to every entity type
    without an entry in `rates` (casefolded type -> daily rate); `edge_rate` to edges; no
    value goes below `floor`. None: the rate or floor does not apply (older runs)."""

    at: int
    rate: float
    affected: int = 0
    rates: dict[str, float] = {}
    edge_rate: float | None = None
    floor: float | None = None


class AuditRecorded(Event, frozen=True, tag="AuditRecorded"):
    """A free-form audit note about a command (who asked for what, and why)."""

    action: str
    detail: dict[str, JsonValue] = {}


AnyEvent = (
    EntityCreated
    | EntityUpdated
    | EntityDeleted
    | ObservationAdded
    | ObservationDeleted
    | RelationCreated
    | RelationUpdated
    | RelationDeleted
    | SchemaRegistered
    | SchemaRetired
    | EntitiesMerged
    | EntitySplit
    | EntityRenamed
    | DecayApplied
    | AuditRecorded
)


# --- the envelope ---------------------------------------------------------------------------


class Cause(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """Provenance of a command: which tool asked for it, from which client and session."""

    tool: str
    client: str | None = None
    session: str | None = None


# Short wire names: the envelope repeats on every stored event, so its keys are kept small.
ENVELOPE_WIRE_NAMES = {
    "position": "p",
    "origin": "o",
    "origin_seq": "s",
    "hlc": "h",
    "tx": "x",
    "event": "e",
    "cause": "c",
}


class Envelope(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    gc=False,
    omit_defaults=True,
    rename=ENVELOPE_WIRE_NAMES,
):
    """An event as stored: the fact plus where it sits in the log and who wrote it when.

    `position` orders this log; `(hlc, origin, origin_seq)` is the stamp every node agrees on,
    used by the fold for last-writer-wins. `tx` is the origin_seq of the first event appended
    by the same command, so `(origin, tx)` names the transaction everywhere. `cause` is stored
    on that first event only (the rest of the transaction shares it): repeating it on every
    event cost a quarter of the replay's decode time.
    """

    position: int
    origin: str
    origin_seq: int
    hlc: int
    tx: int
    event: AnyEvent
    cause: Cause | None = None

    @property
    def stamp(self) -> Stamp:
        return (self.hlc, self.origin, self.origin_seq)


Stamp = tuple[int, str, int]
"""Total order of events across nodes: hybrid clock, then origin, then the origin's sequence."""


_ENCODER = msgspec.msgpack.Encoder()
_ENVELOPE_DECODER = msgspec.msgpack.Decoder(Envelope)


def encode_envelope(envelope: Envelope) -> bytes:
    return _ENCODER.encode(envelope)


# The decoder's bound method itself: a replay decodes millions of envelopes, and a wrapper
# function's call frame cost about 7 % of decoding.
decode_envelope = _ENVELOPE_DECODER.decode
