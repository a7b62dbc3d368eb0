"""Counting the events one caller's commands appended (a tool call's, for its log line).

The caller opens a tally in its own context (`tallying`); the gateway hands the current one to
the writer with each command it sends from that context, and the writer adds each command's
appended events before it answers, so the count is complete when the caller resumes. A context
variable rather than an argument: the tools that send commands need not know of it, and
concurrent calls on one event loop each see their own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["EventTally", "current_tally", "tallying"]


class EventTally:
    """Events appended by the commands sent while this tally was current."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # added to on the writer's thread
        self._events = 0

    @property
    def events(self) -> int:
        with self._lock:
            return self._events

    def add(self, events: int) -> None:
        with self._lock:
            self._events += events


_current: ContextVar[EventTally | None] = ContextVar("graphmem_event_tally", default=None)


def current_tally() -> EventTally | None:
    return _current.get()


@contextmanager
def tallying() -> Iterator[EventTally]:
    """A fresh tally, current in this context until the block ends."""
    tally = EventTally()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)
