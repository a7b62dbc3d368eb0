"""Events evolve additively: a log written by an older graphmem decodes to the same facts."""

from __future__ import annotations

import msgspec
import pytest

from eventstore.events import Envelope, decode_envelope, encode_envelope
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
