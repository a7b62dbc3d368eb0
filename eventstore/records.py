"""Stored log records back to envelopes, strictly: a record that does not decode to the
envelope of its own position is a DamagedLogError naming that position, never a bare
msgspec error and never an envelope folded out of place."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from eventstore.events import Envelope, decode_envelope
from eventstore.log import DamagedLogError

# msgspec raises DecodeError (ValidationError is one) for bytes that are not an envelope, and
# RecursionError for nesting past its limit.
_UNDECODABLE = (msgspec.DecodeError, RecursionError)


def decode_record(raw: bytes, position: int, path: str | None = None) -> Envelope:
    """The envelope stored at `position`."""
    try:
        envelope = decode_envelope(raw)
    except _UNDECODABLE as error:
        raise DamagedLogError(position, f"it does not decode ({error})", path) from None
    if envelope.position != position:
        raise DamagedLogError(
            position, f"it holds the envelope of position {envelope.position}", path
        )
    return envelope


def decode_records(raws: Sequence[bytes], first: int, path: str | None = None) -> list[Envelope]:
    """The envelopes of consecutive records, the first at position `first`.

    Decoded at C speed in one go (a replay decodes millions); the positions are checked at
    both ends of the run, and record by record only once something is wrong, to name it.
    """
    try:
        envelopes = list(map(decode_envelope, raws))
    except _UNDECODABLE:
        envelopes = []
    if len(envelopes) == len(raws) and (
        not envelopes
        or (envelopes[0].position == first and envelopes[-1].position == first + len(raws) - 1)
    ):
        return envelopes
    for offset, raw in enumerate(raws):
        decode_record(raw, first + offset, path)
    raise DamagedLogError(first, "the run of records from here is out of order", path)
