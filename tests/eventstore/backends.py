"""Helpers shared by the event log tests: every backend opened the same way, a test clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eventstore.hlc import HybridLogicalClock
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability, EventLog
from eventstore.memory_log import InMemoryEventLog

LogFactory = Callable[..., EventLog]

BACKENDS = ["memory", "lmdb-everysec", "lmdb-strict"]


class SteppingClock:
    """A wall clock that returns the given milliseconds in turn, then repeats the last."""

    def __init__(self, *readings: int) -> None:
        self._readings = list(readings)

    def __call__(self) -> int:
        if len(self._readings) > 1:
            return self._readings.pop(0)
        return self._readings[0]


def open_backend(
    backend: str, path: Path, clock: HybridLogicalClock | None = None, node_id: str | None = None
) -> EventLog:
    if backend == "memory":
        return InMemoryEventLog(node_id=node_id, clock=clock)
    durability = Durability(backend.removeprefix("lmdb-"))
    return LmdbEventLog.open(path, durability=durability, node_id=node_id, clock=clock)
