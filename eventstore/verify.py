"""Verifying a whole LMDB log: every record, the per-node index, the counters, the checkpoints.

What `graphmem check` runs. Read-only, in chunks of one read transaction each (like the log's
own reads), so it runs beside a live writer and never holds a large log in memory: per node it
keeps a few counters and a fingerprint of its (sequence, position) pairs, which the origins
index must reproduce.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

import lmdb

from eventstore import checkpoints, keys
from eventstore.events import Envelope
from eventstore.hlc import ms_of
from eventstore.lmdb_log import LmdbEventLog
from eventstore.lmdb_txn import READ_CHUNK, LmdbCheckpointRecords
from eventstore.log import DamagedLogError
from eventstore.records import decode_record

__all__ = ["CheckpointVerdict", "LogReport", "Problem", "verify_log"]

# Clock stamps before this (2000-01-01) or further than this past now are not sane.
_EARLIEST_MS = 946_684_800_000
FUTURE_SLACK_MS = 24 * 3600 * 1000
_UNKNOWN = -1


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (`position` for an event), and what."""

    where: str
    what: str
    position: int | None = None


@dataclass(frozen=True)
class CheckpointVerdict:
    name: str
    position: int
    version: int
    problem: str | None


@dataclass
class _Origin:
    """What the log says of one node so far."""

    events: int = 0
    last_seq: int = 0
    last_tx: int = 0
    last_hlc: int = 0
    fingerprint: int = 0


@dataclass
class LogReport:
    """What verify_log found."""

    path: str
    events: int = 0
    last_position: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Positions whose record does not decode: whose they are is unknown.
    unreadable: set[int] = field(default_factory=set)
    checkpoints: list[CheckpointVerdict] = field(default_factory=list)
    origins: dict[str, _Origin] = field(default_factory=dict)

    @property
    def damaged_positions(self) -> list[int]:
        return [p.position for p in self.problems if p.position is not None]

    @property
    def sound(self) -> bool:
        return not self.problems


def _pair_print(seq: int, position: int) -> int:
    return zlib.crc32(keys.u64(seq) + keys.u64(position))


def verify_log(event_log: LmdbEventLog, *, now_ms: int | None = None) -> LogReport:
    """Every check, over the whole log; problems in log order, then the index's, the meta's
    and the checkpoints'."""
    report = LogReport(event_log.path)
    # The log's own clock: a process whose clock is shifted (GRAPHMEM_CLOCK_OFFSET_DAYS) wrote
    # stamps that are sane by that clock, not by the real one.
    latest_ms = (event_log.clock.now_ms() if now_ms is None else now_ms) + FUTURE_SLACK_MS
    expected = 1
    for key, raw in _records(event_log):
        if len(key) != 8:
            report.problems.append(
                Problem("log", f"a record under a key that is not a position: {key!r}")
            )
            continue
        position = keys.from_u64(key)
        if position != expected:
            report.problems.append(
                Problem(
                    f"event at position {position}",
                    f"positions jump from {expected - 1} to {position}: "
                    f"{position - expected} event(s) missing",
                    expected,
                )
            )
        expected = position + 1
        report.events += 1
        report.last_position = position
        try:
            envelope = decode_record(raw, position)
        except DamagedLogError as damage:
            report.problems.append(
                Problem(f"event at position {position}", damage.reason, position)
            )
            report.unreadable.add(position)
            for origin in report.origins.values():
                origin.last_tx = _UNKNOWN  # it may have been any node's: do not blame the next
            continue
        node = report.origins.get(envelope.origin)
        if node is None:
            # After an unreadable record, the node's previous event may have been that one.
            node = report.origins[envelope.origin] = _Origin(
                last_tx=_UNKNOWN if report.unreadable else 0
            )
        what = _envelope_problem(node, envelope, latest_ms)
        if what is not None:
            report.problems.append(Problem(f"event at position {position}", what, position))
    _verify_index(event_log, report)
    _verify_counters(event_log, report)
    _verify_checkpoints(event_log, report)
    return report


def _envelope_problem(origin: _Origin, envelope: Envelope, latest_ms: int) -> str | None:
    """What is out of order in `envelope` against the node's events before it; notes it."""
    seq, tx, hlc = envelope.origin_seq, envelope.tx, envelope.hlc
    problem: str | None = None
    if seq <= origin.last_seq:
        problem = (
            f"node {envelope.origin}'s sequence number {seq} does not follow {origin.last_seq}"
        )
    elif not 0 < tx <= seq:
        problem = f"its transaction {tx} is not at or before its sequence number {seq}"
    elif (
        tx != seq
        and origin.last_tx != _UNKNOWN
        and (tx != origin.last_tx or seq != origin.last_seq + 1)
    ):
        problem = f"it continues transaction {tx}, but the node's previous event is not of it"
    elif hlc < origin.last_hlc:
        problem = f"its clock stamp {hlc} is before the node's previous one ({origin.last_hlc})"
    elif not _EARLIEST_MS <= ms_of(hlc) <= latest_ms:
        problem = f"its clock stamp {hlc} is not a sane time"
    origin.events += 1
    origin.last_seq = max(origin.last_seq, seq)
    origin.last_tx, origin.last_hlc = tx, max(origin.last_hlc, hlc)
    origin.fingerprint += _pair_print(seq, envelope.position)
    return problem


def _records(event_log: LmdbEventLog) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of the log sub-database, in key order, a chunk per transaction."""
    log_db = event_log.shared.log_db
    after: bytes | None = None

    def chunk(txn: lmdb.Transaction) -> list[tuple[bytes, bytes]]:
        cursor = txn.cursor(db=log_db)
        found = cursor.set_range(after) if after is not None else cursor.first()
        if not found:
            return []
        items = cast(Iterator[tuple[bytes, bytes]], cursor.iternext())
        if after is not None and cursor.key() == after:
            next(items)
        return list(itertools.islice(items, READ_CHUNK))

    while items := event_log.read(chunk):
        yield from items
        after = items[-1][0]


def _verify_index(event_log: LmdbEventLog, report: LogReport) -> None:
    """The origins index must hold exactly the log's (node, sequence) -> position pairs."""
    origins_db = event_log.shared.origins_db

    def scan(txn: lmdb.Transaction) -> tuple[dict[bytes, list[int]], list[bytes]]:
        found: dict[bytes, list[int]] = {}
        odd: list[bytes] = []
        for key, value in cast(Iterator[tuple[bytes, bytes]], txn.cursor(db=origins_db)):
            if not key or len(key) != 1 + key[0] + 8 or len(value) != 8:
                odd.append(key)
                continue
            position = keys.from_u64(value)
            if position in report.unreadable:
                continue  # the record is reported already; it cannot vouch for the entry
            counts = found.setdefault(key[1 : 1 + key[0]], [0, 0])
            counts[0] += 1
            counts[1] += _pair_print(keys.seq_of_origin_key(key), position)
        return found, odd

    indexed, odd = event_log.read(scan)
    for key in odd[:10]:
        report.problems.append(Problem("per-node index", f"an entry that is not one: {key!r}"))
    names = {origin.encode(errors="replace") for origin in report.origins} | set(indexed)
    for raw in sorted(names):
        name = raw.decode(errors="replace")
        origin = report.origins.get(name, _Origin())
        count, fingerprint = indexed.get(raw, [0, 0])
        if (count, fingerprint) != (origin.events, origin.fingerprint):
            report.problems.append(
                Problem(
                    "per-node index",
                    f"node {name}: {count} entries that do not match its {origin.events} "
                    "events in the log",
                )
            )


def _verify_counters(event_log: LmdbEventLog, report: LogReport) -> None:
    """A node's stored sequence counter must not lag its events: the next append would reuse
    a number."""
    meta_db = event_log.shared.meta_db

    def counters(txn: lmdb.Transaction) -> dict[str, int]:
        found: dict[str, int] = {}
        for name in report.origins:
            value = txn.get(keys.seq_counter_key(name), db=meta_db)
            if value is not None and len(value) == 8:
                found[name] = keys.from_u64(cast(bytes, value))
        return found

    for name, counter in event_log.read(counters).items():
        last = report.origins[name].last_seq
        if counter < last:
            report.problems.append(
                Problem(
                    "log meta", f"node {name}'s sequence counter {counter} lags its events ({last})"
                )
            )


def _verify_checkpoints(event_log: LmdbEventLog, report: LogReport) -> None:
    shared = event_log.shared

    def verdicts(txn: lmdb.Transaction) -> list[CheckpointVerdict]:
        view = LmdbCheckpointRecords(txn, shared)
        found: list[CheckpointVerdict] = []
        for name in view.names():
            for position in view.positions(name):
                version, problem = checkpoints.verify_record(view, name, position)
                found.append(CheckpointVerdict(name, position, version, problem))
        return found

    report.checkpoints = event_log.read(verdicts, buffers=True)
    for verdict in report.checkpoints:
        if verdict.problem is not None:
            report.problems.append(
                Problem(
                    f"checkpoint {verdict.name} at position {verdict.position}", verdict.problem
                )
            )
