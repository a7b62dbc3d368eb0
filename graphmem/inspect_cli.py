"""The log inspection commands: `graphmem log`, `graphmem history NAME` and `graphmem stats`.

They read the data dir's log directly, streaming it without starting actors, so they are fast,
run beside a live server, and never hold a large log in memory.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import msgspec

from eventstore.events import Cause, Envelope
from eventstore.hlc import ms_of
from eventstore.lmdb_log import LmdbEventLog
from graphmem.config import Settings
from graphmem.history import Causes, EnvelopeSource, iso_time, record, summary
from graphmem.log_stats import collect_stats, print_stats
from projections.history import EVENT_TAGS, OBSERVATION, RELATION, kind_of, tag_of, touched

__all__ = [
    "COMMANDS",
    "InspectError",
    "LogFilter",
    "add_commands",
    "print_history",
    "print_log",
    "run_command",
    "select",
]

COMMANDS = ("log", "history", "stats")
CHUNK = 50_000

Out = TextIO


class InspectError(Exception):
    """An inspection cannot run (no log in the data dir, a bad filter); the message says why."""


# --- arguments -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """A --since/--until value: a log position, or a time in wall milliseconds (UTC)."""

    position: int | None = None
    ms: int | None = None


def parse_bound(value: str) -> Bound:
    """An integer log position, or an ISO-8601 time (UTC unless it says otherwise)."""
    text = value.strip()
    if text.isdigit():
        return Bound(position=int(text))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a log position (a whole number) nor an ISO-8601 time "
            "(e.g. 2025-06-01 or 2025-06-01T12:30:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return Bound(ms=int(moment.timestamp() * 1000))


def parse_tx(value: str) -> tuple[str, int]:
    """ORIGIN:TX, as the history shows transactions."""
    origin, sep, tx = value.rpartition(":")
    if not sep or not origin or not tx.isdigit():
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a transaction; write it ORIGIN:TX as history shows it "
            "(e.g. 3f2a9c1b7d4e5f60:17)"
        )
    return origin, int(tx)


def _tag(value: str) -> str:
    if value not in EVENT_TAGS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an event type; use any of: {', '.join(EVENT_TAGS)}"
        )
    return value


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `log`, `history` and `stats` on the `graphmem` command's subparsers."""
    log = subparsers.add_parser(
        "log",
        help="stream the event log, filtered (table or JSON lines)",
        description="Print the events of the log in log order, with their time, node, "
        "transaction and cause (tool/client), keeping those every given filter matches. "
        "Streams: works on logs of any size.",
    )
    log.add_argument("--entity", metavar="NAME", help="events that touched this entity")
    log.add_argument(
        "--type",
        dest="types",
        metavar="TAG",
        nargs="+",
        action="extend",
        type=_tag,
        help="events of these types (e.g. EntityCreated ObservationAdded)",
    )
    log.add_argument("--origin", metavar="NODE", help="events written by this node")
    log.add_argument(
        "--since",
        type=parse_bound,
        metavar="TIME|POS",
        help="events at or after this ISO-8601 time (UTC) or log position",
    )
    log.add_argument(
        "--until",
        type=parse_bound,
        metavar="TIME|POS",
        help="events at or before this ISO-8601 time (UTC) or log position",
    )
    log.add_argument(
        "--tx", type=parse_tx, metavar="ORIGIN:TX", help="the events of one transaction"
    )
    log.add_argument("--limit", type=_positive, metavar="N", help="stop after N events")
    log.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    log.set_defaults(inspect=_log_command)

    history = subparsers.add_parser(
        "history",
        help="every event that touched an entity: the provenance of each fact",
        description="Print every event that touched entity NAME (its creation and updates, its "
        "observations, the relations to or from it, renames, merges, its deletion), oldest "
        "first, with time, node, transaction and cause (tool/client). Deleted and former "
        "names have history too. Exit code 1 if no event ever touched NAME.",
    )
    history.add_argument("name", metavar="NAME", help="the entity name, current or former")
    history.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    history.add_argument(
        "--no-observations",
        dest="observations",
        action="store_false",
        help="leave out observation events",
    )
    history.add_argument(
        "--no-relations", dest="relations", action="store_false", help="leave out relation events"
    )
    history.add_argument("--limit", type=_positive, metavar="N", help="only the last N events")
    history.set_defaults(inspect=_history_command)

    stats = subparsers.add_parser(
        "stats",
        help="figures about the log and the graph it holds",
        description="Print events in total, by type and by node; transactions; the first and "
        "last position and time; entities alive and deleted, relations, observations; schemas "
        "in force; checkpoints; and the data dir's size on disk.",
    )
    stats.add_argument("--json", action="store_true", help="one JSON object instead of text")
    stats.set_defaults(inspect=_stats_command)


def run_command(settings: Settings, args: argparse.Namespace) -> int | None:
    """Run the inspection command `args` names; None if it names none of them."""
    command: Callable[[Settings, argparse.Namespace, Out], int] | None = getattr(
        args, "inspect", None
    )
    if command is None:
        return None
    try:
        return command(settings, args, sys.stdout)
    except InspectError as problem:
        print(f"graphmem {args.command}: {problem}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`graphmem log | head`): stop quietly, as other tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


@contextmanager
def open_log(data_dir: Path) -> Iterator[LmdbEventLog]:
    """The data dir's log; an InspectError if it holds none (never creates one)."""
    if not (data_dir / "data.mdb").is_file():
        raise InspectError(f"no graphmem log in {data_dir} (set GRAPHMEM_DIR or --data-dir)")
    event_log = LmdbEventLog.open(data_dir)
    try:
        yield event_log
    finally:
        event_log.close()


def _log_command(settings: Settings, args: argparse.Namespace, out: Out) -> int:
    since: Bound | None = args.since
    until: Bound | None = args.until
    found = LogFilter(
        entity=args.entity,
        types=frozenset(args.types) if args.types else None,
        origin=args.origin,
        since=since or Bound(),
        until=until or Bound(),
        tx=args.tx,
    )
    with open_log(settings.data_dir) as event_log:
        print_log(event_log, found, out, as_json=args.json, limit=args.limit)
    return 0


def _history_command(settings: Settings, args: argparse.Namespace, out: Out) -> int:
    with open_log(settings.data_dir) as event_log:
        shown = print_history(
            event_log,
            args.name,
            out,
            as_json=args.json,
            observations=args.observations,
            relations=args.relations,
            limit=args.limit,
        )
    if shown is None:
        raise InspectError(f"no history for {args.name}: no event ever touched it")
    return 0


def _stats_command(settings: Settings, args: argparse.Namespace, out: Out) -> int:
    with open_log(settings.data_dir) as event_log:
        figures = collect_stats(event_log, settings.data_dir)
    print_stats(figures, out, as_json=args.json)
    return 0


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
    since: Bound = Bound()
    until: Bound = Bound()
    tx: tuple[str, int] | None = None

    def matches(self, envelope: Envelope) -> bool:
        event = envelope.event
        if self.types is not None and tag_of(event) not in self.types:
            return False
        if self.origin is not None and envelope.origin != self.origin:
            return False
        if self.tx is not None and (envelope.origin, envelope.tx) != self.tx:
            return False
        position, ms = envelope.position, ms_of(envelope.hlc)
        if self.since.position is not None and position < self.since.position:
            return False
        if self.until.position is not None and position > self.until.position:
            return False
        # Clocks of different nodes interleave in the log, so time is checked on every event.
        if self.since.ms is not None and ms < self.since.ms:
            return False
        if self.until.ms is not None and ms > self.until.ms:
            return False
        return self.entity is None or self.entity in touched(event)


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
        scanned = source.read_from(wanted.since.position or 1)
    until = wanted.until.position
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
