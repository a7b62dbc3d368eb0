"""The hybrid logical clock: stamps that follow wall time but never go backwards.

A stamp is one integer: wall milliseconds shifted left by COUNTER_BITS, plus a counter for
events within the same millisecond. Integers compare like (wall, counter) tuples, so "the next
stamp" is simply the larger of `last + 1` and the current wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

COUNTER_BITS = 16
DEFAULT_MAX_SKEW_MS = 60_000
DAY_MS = 24 * 3600 * 1000


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class WallClock:
    """The wall clock graphmem reads: real time plus a fixed offset (0 outside tests).

    Event stamps and every time-based rule must read the same clock, so that a test which ages
    a graph by restarting with GRAPHMEM_CLOCK_OFFSET_DAYS sees stamps, `last_seen` and decay
    agree: the log's HybridLogicalClock holds one and rules ask it for `now_ms`.
    """

    offset_ms: int = 0

    @classmethod
    def shifted_by_days(cls, days: float) -> WallClock:
        return cls(round(days * DAY_MS))

    def __call__(self) -> int:
        return wall_ms() + self.offset_ms


def stamp_of(ms: int, counter: int = 0) -> int:
    return (ms << COUNTER_BITS) | counter


def ms_of(stamp: int) -> int:
    return stamp >> COUNTER_BITS


class HybridLogicalClock:
    """Pure clock arithmetic; the last stamp is kept by the caller (the log's meta)."""

    def __init__(
        self, now_ms: Callable[[], int] = wall_ms, max_skew_ms: int = DEFAULT_MAX_SKEW_MS
    ) -> None:
        self._now_ms = now_ms
        self.max_skew_ms = max_skew_ms

    def now_ms(self) -> int:
        """The wall time the next stamp follows: "now" for every time-based rule, so rules and
        stamps read one clock (a shifted WallClock moves both)."""
        return self._now_ms()

    def tick(self, last: int) -> int:
        """The stamp for a local event, given the last stamp this node issued or observed."""
        return max(last + 1, stamp_of(self._now_ms()))

    def observe(self, last: int, remote: int) -> int:
        """The clock after seeing a remote stamp; one too far ahead is clamped to now + skew."""
        now = self._now_ms()
        bounded = min(remote, stamp_of(now + self.max_skew_ms))
        return max(last, bounded, stamp_of(now))
