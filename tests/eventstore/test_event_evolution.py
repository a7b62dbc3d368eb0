"""Events evolve additively: a log written by an older graphmem decodes to the same facts."""

from __future__ import annotations

import msgspec
import pytest

from eventstore.events import (
    AnyEvent,
    DecayApplied,
    EntityCreated,
    EntityUpdated,
    Envelope,
    RelationCreated,
    RelationUpdated,
    decode_envelope,
    encode_envelope,
)
from tests.eventstore.stored_envelopes import ENVELOPES, STORED_BYTES


def test_the_fixture_holds_one_stored_record_per_envelope() -> None:
    assert len(STORED_BYTES) == len(ENVELOPES)


@pytest.mark.parametrize(("stored", "expected"), list(zip(STORED_BYTES, ENVELOPES, strict=True)))
def test_an_envelope_stored_by_an_older_version_decodes_to_the_same_fact(
    stored: bytes, expected: Envelope
) -> None:
    decoded = decode_envelope(stored)

    assert decoded == expected
    assert msgspec.to_builtins(decoded) == msgspec.to_builtins(expected)


@pytest.mark.parametrize(("stored", "expected"), list(zip(STORED_BYTES, ENVELOPES, strict=True)))
def test_an_older_envelope_re_encodes_to_the_bytes_it_was_stored_as(
    stored: bytes, expected: Envelope
) -> None:
    assert encode_envelope(decode_envelope(stored)) == stored
    assert encode_envelope(expected) == stored


def test_the_graph_familys_fields_default_to_unset_on_an_older_event() -> None:
    events = {type(envelope.event).__name__: envelope.event for envelope in ENVELOPES}
    created, updated = events["EntityCreated"], events["EntityUpdated"]
    assert isinstance(created, EntityCreated) and isinstance(updated, EntityUpdated)
    assert (created.confidence, created.times_mentioned, created.last_seen) == (None, None, None)
    assert (created.subtype, created.source_file, created.aliases, created.properties) == (
        None,
        None,
        [],
        {},
    )
    assert (updated.confidence, updated.aliases, updated.properties, updated.cleared) == (
        None,
        None,
        None,
        [],
    )
    relation = decode_envelope(STORED_BYTES[7]).event
    assert isinstance(relation, RelationCreated) and relation.weight == 0.7
    assert (relation.evidence, relation.ingested_at, relation.last_confirmed) == (None, None, None)
    update = decode_envelope(STORED_BYTES[9]).event
    assert isinstance(update, RelationUpdated)
    assert (update.evidence, update.last_confirmed, update.cleared) == (None, None, [])
    decay = events["DecayApplied"]
    assert isinstance(decay, DecayApplied)
    assert (decay.rates, decay.edge_rate, decay.floor) == ({}, None, None)


NEW_EVENTS = [
    EntityCreated(
        name="Zoë",
        entity_type="Person",
        confidence=0.7,
        times_mentioned=3,
        last_seen=1_700_000_000_000,
        subtype="rule",
        source_file="memory/zoe.md",
        aliases=["Zoe", "Z"],
        properties={"team": "core", "langs": ["fr", None]},
    ),
    EntityUpdated(name="Zoë", confidence=0.9, aliases=[], properties={}, cleared=["subtype"]),
    RelationCreated(
        from_entity="Zoë",
        to_entity="東京",
        relation_type="LIVES_IN",
        weight=0.5,
        evidence="said so on Monday",
        ingested_at=1_600_000_000_000,
        last_confirmed=1_700_000_000_000,
    ),
    RelationUpdated(
        from_entity="Zoë",
        to_entity="東京",
        relation_type="LIVES_IN",
        valid_at=1_735_689_600_000,
        last_confirmed=1_700_000_000_001,
        evidence="confirmed",
        cleared=["invalid_at"],
    ),
    DecayApplied(
        at=1_700_000_000_000,
        rate=0.996,
        rates={"person": 0.998},
        edge_rate=0.997,
        floor=0.01,
    ),
]


@pytest.mark.parametrize("event", NEW_EVENTS, ids=lambda event: type(event).__name__)
def test_the_graph_familys_fields_survive_a_round_trip(event: AnyEvent) -> None:
    envelope = Envelope(position=1, origin="n", origin_seq=1, hlc=1 << 16, tx=1, event=event)
    assert decode_envelope(encode_envelope(envelope)) == envelope


def test_an_event_with_a_field_this_version_does_not_know_still_decodes() -> None:
    # What lets an older node read a newer node's events: unknown fields are skipped.
    raw = msgspec.to_builtins(ENVELOPES[0])
    raw["e"]["a_later_field"] = {"any": [1, 2]}
    decoded = decode_envelope(msgspec.msgpack.encode(raw))
    assert decoded == ENVELOPES[0]
