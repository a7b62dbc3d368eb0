"""Times as the graph family reads and writes them (contract §2): wall milliseconds inside,
ISO 8601 outside.

Inputs (`valid_at`, `at`, `since`) are ISO 8601: a date alone is that day's 00:00 UTC, a time
without a zone is UTC. Outputs are UTC to the millisecond with a `Z`
(`2025-01-01T00:00:00.000Z`); None stays None ("not set").
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

__all__ = ["DAY_MS", "TimeFormatError", "format_ms", "iso_ms", "parse_time"]

DAY_MS = 24 * 3600 * 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimeFormatError(ValueError):
    """A text that is not an ISO 8601 time; the message says what is accepted."""


@functools.lru_cache(maxsize=4096)  # times repeat (a transaction shares one millisecond)
def iso_ms(ms: int) -> str:
    """Wall milliseconds as ISO 8601, UTC, to the millisecond (`...T00:00:00.000Z`): the one
    formatter of every time graphmem shows (history, as-of points, the graph family)."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_ms(ms: int | None) -> str | None:
    """Wall milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`; None for None."""
    return None if ms is None else iso_ms(ms)


def parse_time(text: str, what: str = "time") -> int:
    """An ISO 8601 time or date as wall milliseconds; raises TimeFormatError naming `what`."""
    stripped = text.strip()
    try:
        moment = datetime.fromisoformat(stripped.replace("z", "Z"))
    except ValueError:
        raise TimeFormatError(
            f"{what} {text!r} is not an ISO 8601 time; give e.g. 2025-03-01 or "
            "2025-03-01T09:30:00Z (without a zone, UTC)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return delta.days * DAY_MS + delta.seconds * 1000 + delta.microseconds // 1000
