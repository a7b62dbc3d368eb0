"""The argument types the commands share. Above all the one "position or time" argument:
`--as-of`, `--since`, `--until` and `diff`'s A and B all take a log position or an ISO-8601
time, parsed here, as the tools' `as_of` is."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import datetime

from actors.time_travel import AsOfError, parse_as_of, position_at_time
from eventstore.log import EventLog
from graphmem.cli.command import CliError

__all__ = ["POINT_FORMS", "Point", "parse_point", "positive", "resolve_point"]

POINT_FORMS = (
    "a log position (a whole number, 0: the empty log) or an ISO-8601 time (e.g. 2025-06-01 "
    "or 2025-06-01T12:30:00Z; UTC unless it says; a date alone is the start of that day)"
)


@dataclass(frozen=True)
class Point:
    """A point in the log as given: `text`, and a position or an aware UTC time."""

    text: str
    at: int | datetime

    @property
    def position(self) -> int | None:
        """The position given, or None for a time."""
        return self.at if isinstance(self.at, int) else None


def parse_point(value: str) -> Point:
    """An argparse type: a log position or an ISO-8601 time, as the tools' `as_of` takes
    them (one parser for both, so the command line and the tools agree)."""
    try:
        return Point(value, parse_as_of(value))
    except AsOfError:
        raise argparse.ArgumentTypeError(f"{value!r} is neither {POINT_FORMS}") from None


def resolve_point(event_log: EventLog, point: Point) -> int:
    """The log position `point` names; a time names the last event written at or before it
    (0 before the first), a position must not be past the log's end."""
    last = event_log.last_position()
    if isinstance(point.at, datetime):
        return position_at_time(event_log, point.at, last)
    if point.at > last:
        raise CliError(f"position {point.at} is past the log's end ({last})")
    return point.at


def positive(value: str) -> int:
    """An argparse type: a whole number of at least 1 (a count, a batch size)."""
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)
