"""The protocol every event log implements (LMDB on disk, and in memory for tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from typing import Protocol, TypeVar

from eventstore.events import AnyEvent, Cause, Envelope

T = TypeVar("T")


class Durability(StrEnum):
    """When a committed append reaches the disk."""

    STRICT = "strict"  # fsync on every commit
    EVERYSEC = "everysec"  # commit without fsync, sync on a ~1 s timer


class LogError(Exception):
    """The log could not do what was asked (corrupt record, bad key, closed log)."""


class LogTransaction(Protocol):
    """One write transaction: see what others appended, then append, all or nothing."""

    @property
    def node_id(self) -> str: ...

    @property
    def attempt(self) -> int:
        """0 on the first run of the transaction function, more when the log re-ran it."""
        ...

    def last_position(self) -> int: ...

    def read_from(self, position: int) -> Iterator[Envelope]:
        """Envelopes at `position` and after, in log order, as this transaction sees them."""
        ...

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        """Stamp one command's events (one clock tick, one tx id) and stage them."""
        ...


class EventLog(Protocol):
    """An append-only, totally ordered log of envelopes."""

    @property
    def node_id(self) -> str: ...

    @property
    def durability(self) -> Durability: ...

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        """Run `fn` in one write transaction and commit what it appended, atomically.

        If the transaction has to be retried (e.g. the map grew), `fn` is called again with
        `attempt > 0` and must start over; nothing from an aborted attempt is kept.
        """
        ...

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        """Append one command's events in a transaction of their own."""
        ...

    def last_position(self) -> int: ...

    def read_from(self, position: int) -> Iterator[Envelope]:
        """Committed envelopes at `position` and after, in log order."""
        ...

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]:
        """One origin's envelopes with from_seq <= origin_seq <= to_seq, in origin_seq order."""
        ...

    def last_origin_seq(self, origin: str) -> int: ...

    def sync(self) -> None:
        """Force committed appends to disk (a no-op where there is no disk)."""
        ...

    def close(self) -> None: ...
