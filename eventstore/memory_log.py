"""The in-memory event log: the reference backend for tests, with the LMDB log's semantics."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from eventstore.events import AnyEvent, Cause, Envelope
from eventstore.hlc import HybridLogicalClock
from eventstore.log import Durability, LogError, LogTransaction

T = TypeVar("T")


def new_node_id() -> str:
    return secrets.token_hex(8)


class InMemoryLogTransaction:
    """Stages appends; the log publishes them only when the transaction function returns."""

    def __init__(self, log: InMemoryEventLog, attempt: int = 0) -> None:
        self._log = log
        self._attempt = attempt
        self._staged: list[Envelope] = []
        self._next_seq = log.last_origin_seq(log.node_id) + 1
        self.hlc = log.last_hlc
        self._open = True

    @property
    def node_id(self) -> str:
        return self._log.node_id

    @property
    def attempt(self) -> int:
        return self._attempt

    @property
    def staged(self) -> list[Envelope]:
        return self._staged

    def last_position(self) -> int:
        self._require_open()
        return self._log.last_position() + len(self._staged)

    def read_from(self, position: int) -> Iterator[Envelope]:
        self._require_open()
        # Fixed at the call, as in the LMDB log: appends made while iterating are not included.
        seen = self._log.committed_from(position)
        seen.extend(e for e in self._staged if e.position >= position)
        return iter(seen)

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        self._require_open()
        if not events:
            return []
        self.hlc = self._log.clock.tick(self.hlc)
        position = self.last_position()
        tx = self._next_seq
        stamped = [
            Envelope(
                position=position + i,
                origin=self.node_id,
                origin_seq=tx + i - 1,
                hlc=self.hlc,
                tx=tx,
                event=event,
                cause=cause if i == 1 else None,
            )
            for i, event in enumerate(events, start=1)
        ]
        self._next_seq += len(stamped)
        self._staged.extend(stamped)
        return stamped

    def close(self) -> None:
        self._open = False

    def _require_open(self) -> None:
        if not self._open:
            raise LogError("the transaction has ended")


class InMemoryEventLog:
    """An EventLog kept in lists; nothing survives the process."""

    def __init__(
        self,
        node_id: str | None = None,
        clock: HybridLogicalClock | None = None,
        durability: Durability = Durability.EVERYSEC,
    ) -> None:
        self._node_id = node_id if node_id is not None else new_node_id()
        self.clock = clock if clock is not None else HybridLogicalClock()
        self._durability = durability
        self._entries: list[Envelope] = []
        self._by_origin: dict[str, list[Envelope]] = {}
        self.last_hlc = 0
        # One writer at a time, as in LMDB; readers only wait for the brief publish step, so
        # an open transaction never blocks them.
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._in_txn = threading.local()
        self._closed = False

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def durability(self) -> Durability:
        return self._durability

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        self._require_open()
        if getattr(self._in_txn, "active", False):
            raise LogError("transact is not reentrant: this thread already has a transaction")
        with self._write_lock:
            self._in_txn.active = True
            txn = InMemoryLogTransaction(self)
            try:
                result = fn(txn)
                self._commit(txn)
            finally:
                txn.close()
                self._in_txn.active = False
        return result

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        if not events:
            self._require_open()
            return []
        return self.transact(lambda txn: txn.append(events, cause))

    def last_position(self) -> int:
        with self._lock:
            return len(self._entries)

    def committed_from(self, position: int) -> list[Envelope]:
        with self._lock:
            return self._entries[max(position, 1) - 1 :]

    def read_from(self, position: int) -> Iterator[Envelope]:
        self._require_open()
        return iter(self.committed_from(position))

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]:
        self._require_open()
        with self._lock:
            entries = self._by_origin.get(origin, [])
            stop = len(entries) if to_seq is None else max(to_seq, 0)
            return entries[max(from_seq, 1) - 1 : stop]

    def last_origin_seq(self, origin: str) -> int:
        with self._lock:
            return len(self._by_origin.get(origin, []))

    def sync(self) -> None:
        self._require_open()

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> InMemoryEventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _commit(self, txn: InMemoryLogTransaction) -> None:
        if not txn.staged:
            return
        with self._lock:
            self._entries.extend(txn.staged)
            self._by_origin.setdefault(self._node_id, []).extend(txn.staged)
            self.last_hlc = txn.hlc

    def _require_open(self) -> None:
        if self._closed:
            raise LogError("the log is closed")
