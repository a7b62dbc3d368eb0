"""Stored log records back to envelopes, strictly: a record that does not decode to the
envelope of its own position is a DamagedLogError naming that position, never a bare
msgspec error and never an envelope folded out of place."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import attrgetter

import msgspec

from eventstore.events import Envelope, decode_envelope
from eventstore.log import DamagedLogError

# msgspec raises DecodeError (ValidationError is one) for bytes that are not an envelope, and
# RecursionError for nesting past its limit.
_UNDECODABLE = (msgspec.DecodeError, RecursionError)
_POSITION = attrgetter("position")
_ORIGIN = attrgetter("origin")
_ORIGIN_SEQ = attrgetter("origin_seq")


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


def decode_records(
    raws: Sequence[bytes], first: int, path: str | None = None
) -> Iterator[Envelope]:
    """The envelopes of consecutive records, the first at position `first`, up to the first
    damaged one (then DamagedLogError): what precedes a damage still reads.

    Decoded, and every position compared, at C speed in one go: a replay decodes millions
    (the comparison costs 0.05 us an event, a sixteenth of decoding). Once something is
    wrong, the records are decoded one by one to name it.
    """
    try:
        envelopes = list(map(decode_envelope, raws))
    except _UNDECODABLE:
        envelopes = []
    if len(envelopes) == len(raws) and list(map(_POSITION, envelopes)) == list(
        range(first, first + len(raws))
    ):
        yield from envelopes
        return
    for offset, raw in enumerate(raws):
        yield decode_record(raw, first + offset, path)


def origin_records(
    raws: Sequence[bytes], positions: Sequence[int], origin: str, first_seq: int, path: str | None
) -> list[tuple[Envelope, bytes]]:
    """The records of `origin` from `first_seq` on, stored at `positions`, each with its
    envelope; a record that is not the envelope its origins-index entry names is a
    DamagedLogError. Each is decoded whole (a sender must not pass a damaged event on to
    other nodes, where it would stop their feed), in one go as in decode_records."""
    try:
        envelopes = list(map(decode_envelope, raws))
    except _UNDECODABLE:
        envelopes = []
    if (
        len(envelopes) == len(raws)
        and list(map(_POSITION, envelopes)) == list(positions)
        and list(map(_ORIGIN_SEQ, envelopes)) == list(range(first_seq, first_seq + len(raws)))
        and set(map(_ORIGIN, envelopes)) <= {origin}
    ):
        return list(zip(envelopes, raws, strict=True))
    for offset, (raw, at) in enumerate(zip(raws, positions, strict=True)):
        envelope = decode_record(raw, at, path)
        if (envelope.origin, envelope.origin_seq) != (origin, first_seq + offset):
            raise DamagedLogError(
                at,
                f"the origins index names it {origin}#{first_seq + offset}, "
                f"but it is {envelope.origin}#{envelope.origin_seq}",
                path,
            )
    raise AssertionError("unreachable: a record failed the check but decodes soundly")
