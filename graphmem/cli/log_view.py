"""Envelopes shown to people and scripts: the rows of `graphmem log` and `graphmem history`, and
which envelopes they show. They stream the log, so they never hold a large log in memory.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

import msgspec

from eventstore.events import Cause, Envelope
from eventstore.hlc import ms_of
from graphmem.cli.arguments import Point
from graphmem.history import Causes, EnvelopeSource, iso_time, record, summary
from projections.history import OBSERVATION, RELATION, kind_of, tag_of, touched

__all__ = ["LogFilter", "print_history", "print_log", "select"]

CHUNK = 50_000

Out = TextIO


# --- rows ----------------------------------------------------------------------------------------

_HEADER = f"{'POSITION':>8}  {'TIME':<24}  {'NODE':<16}  {'TX':>6}  {'CAUSE':<28}  EVENT"


def _row(envelope: Envelope, cause: Cause | None) -> str:
    who = "-" if cause is None else "/".join(p for p in (cause.tool, cause.client) if p)
    return (
        f"{envelope.position:>8}  {iso_time(envelope.hlc):<24}  {envelope.origin:<16}  "
        f"{envelope.tx:>6}  {who:<28}  {summary(envelope.event)}"
    )


class _Printer:
    """Writes envelopes as table rows (header first) or JSON lines."""

    def __init__(self, out: Out, *, as_json: bool) -> None:
        self._out, self._json = out, as_json
        self._started = False
        self._encode = msgspec.json.Encoder().encode

    def __call__(self, envelope: Envelope, cause: Cause | None) -> None:
        if self._json:
            line = self._encode(record(envelope, cause)).decode()
        else:
            if not self._started:
                self._out.write(_HEADER + "\n")
                self._started = True
            line = _row(envelope, cause)
        self._out.write(line + "\n")


# --- graphmem log --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogFilter:
    """Which envelopes `graphmem log` prints: those every given criterion matches."""

    entity: str | None = None
    types: frozenset[str] | None = None
    origin: str | None = None
    since: Point | None = None
    until: Point | None = None
    tx: tuple[str, int] | None = None

    def matches(self, envelope: Envelope) -> bool:
        event = envelope.event
        if self.types is not None and tag_of(event) not in self.types:
            return False
        if self.origin is not None and envelope.origin != self.origin:
            return False
        if self.tx is not None and (envelope.origin, envelope.tx) != self.tx:
            return False
        if self.since is not None:
            mine, bound = _on_scale_of(self.since, envelope)
            if mine < bound:
                return False
        if self.until is not None:
            mine, bound = _on_scale_of(self.until, envelope)
            if mine > bound:
                return False
        return self.entity is None or self.entity in touched(event)


def _on_scale_of(point: Point, envelope: Envelope) -> tuple[int, int]:
    """The envelope's place and the point's on the point's scale: log positions, or wall
    milliseconds. Clocks of different nodes interleave in the log, so a time is checked on
    every event rather than used to stop the scan."""
    if isinstance(point.at, int):
        return envelope.position, point.at
    return ms_of(envelope.hlc), int(point.at.timestamp() * 1000)


def _transaction(source: EnvelopeSource, origin: str, tx: int) -> Iterator[Envelope]:
    """One transaction's envelopes, read by origin: no scan of the log."""
    seq = tx
    while True:
        window = source.read_origin(origin, seq, seq + CHUNK - 1)
        for envelope in window:
            if envelope.tx != tx:
                return
            yield envelope
        if len(window) < CHUNK:
            return
        seq += CHUNK


def select(source: EnvelopeSource, wanted: LogFilter, causes: Causes) -> Iterator[Envelope]:
    """The envelopes `wanted` matches, in log order, streamed; every envelope read is noted
    in `causes`, so causes are found on the way."""
    if wanted.tx is not None:
        scanned = _transaction(source, *wanted.tx)
    else:
        start = wanted.since.position if wanted.since is not None else None
        scanned = source.read_from(start or 1)
    until = wanted.until.position if wanted.until is not None else None
    for envelope in scanned:
        causes.note(envelope)
        if until is not None and envelope.position > until:
            return
        if wanted.matches(envelope):
            yield envelope


def print_log(
    source: EnvelopeSource,
    wanted: LogFilter,
    out: Out,
    *,
    as_json: bool = False,
    limit: int | None = None,
) -> int:
    """Print the envelopes `wanted` matches (the first `limit`); returns how many."""
    causes = Causes(source)
    show = _Printer(out, as_json=as_json)
    count = 0
    for envelope in itertools.islice(select(source, wanted, causes), limit):
        show(envelope, causes.of(envelope))
        count += 1
    return count


# --- graphmem history ----------------------------------------------------------------------------


def print_history(
    source: EnvelopeSource,
    name: str,
    out: Out,
    *,
    as_json: bool = False,
    observations: bool = True,
    relations: bool = True,
    limit: int | None = None,
) -> int | None:
    """Print the events that touched `name` (the last `limit`), oldest first; returns how many
    were printed, or None if no event ever touched `name`."""
    left_out = {k for k, keep in ((OBSERVATION, observations), (RELATION, relations)) if not keep}
    causes = Causes(source)
    show = _Printer(out, as_json=as_json)
    # With a limit, the last events are known only at the end: keep them (and their causes,
    # found on the way) in a bounded queue.
    kept: deque[tuple[Envelope, Cause | None]] = deque(maxlen=limit)
    known = False
    count = 0
    for envelope in source.read_from(1):
        causes.note(envelope)
        event = envelope.event
        if name not in touched(event):
            continue
        known = True
        if kind_of(tag_of(event)) in left_out:
            continue
        count += 1
        if limit is None:
            show(envelope, causes.of(envelope))
        else:
            kept.append((envelope, causes.of(envelope)))
    for envelope, cause in kept:
        show(envelope, cause)
    if limit is not None:
        count = len(kept)
    return count if known else None
