"""The in-memory event log: the reference backend for tests, with the LMDB log's semantics."""

from __future__ import annotations

import secrets
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import msgspec

from eventstore import checkpoints
from eventstore.checkpoints import Retention
from eventstore.events import (
    AnyEvent,
    Cause,
    Envelope,
    encode_envelope,
)
from eventstore.hlc import HybridLogicalClock
from eventstore.log import (
    Checkpoint,
    CheckpointInfo,
    Durability,
    LogError,
    LogTransaction,
    RemoteAppend,
    append_in_origin_order,
)
from eventstore.plain_events import PlainAppend, PlainEvent, as_event

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
        self._remote_last: dict[str, int] = {}
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

    def append_plain(self, events: Sequence[PlainEvent], cause: Cause | None = None) -> PlainAppend:
        first, tx = self.last_position() + 1, self._next_seq
        self.append([as_event(plain) for plain in events], cause)
        return PlainAppend(first, tx, self.hlc, self.node_id)

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        self._require_open()
        return append_in_origin_order(envelopes, self._last_of, self._stage_remote)

    def _stage_remote(self, envelope: Envelope) -> Envelope:
        placed = msgspec.structs.replace(envelope, position=self.last_position() + 1)
        self._staged.append(placed)
        if envelope.origin == self.node_id:
            self._next_seq += 1
        else:
            self._remote_last[envelope.origin] = envelope.origin_seq
        self.hlc = self._log.clock.observe(self.hlc, envelope.hlc)
        return placed

    def _last_of(self, origin: str) -> int:
        if origin == self.node_id:
            return self._next_seq - 1
        if origin not in self._remote_last:
            self._remote_last[origin] = self._log.last_origin_seq(origin)
        return self._remote_last[origin]

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
        self._checkpoints = InMemoryCheckpointStore(self)

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def checkpoints(self) -> InMemoryCheckpointStore:
        return self._checkpoints

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

    def entry_at(self, position: int) -> Envelope | None:
        with self._lock:
            entries = self._entries
            return entries[position - 1] if 0 < position <= len(entries) else None

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]:
        self._require_open()
        with self._lock:
            entries = self._by_origin.get(origin, [])
            stop = len(entries) if to_seq is None else max(to_seq, 0)
            return entries[max(from_seq, 1) - 1 : stop]

    def read_origin_records(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[tuple[Envelope, bytes]]:
        return [(e, encode_envelope(e)) for e in self.read_origin(origin, from_seq, to_seq)]

    def last_origin_seq(self, origin: str) -> int:
        with self._lock:
            return len(self._by_origin.get(origin, []))

    def origins(self) -> dict[str, int]:
        with self._lock:
            return {origin: len(entries) for origin, entries in self._by_origin.items()}

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        return self.transact(lambda txn: txn.append_remote(envelopes))

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
            for envelope in txn.staged:
                self._by_origin.setdefault(envelope.origin, []).append(envelope)
            self.last_hlc = txn.hlc

    def _require_open(self) -> None:
        if self._closed:
            raise LogError("the log is closed")


class InMemoryCheckpointStore:
    """Checkpoint records in a dict, held to the same format and checks as on disk."""

    def __init__(self, log: InMemoryEventLog) -> None:
        self._log = log
        self._records: dict[str, dict[int, bytes]] = {}
        self._lock = threading.Lock()

    def save(
        self,
        *items: Checkpoint,
        retention: Retention | None = None,
        abandoned: Callable[[], bool] | None = None,
    ) -> int:
        self._log._require_open()
        with self._lock:
            view = self._view()
            records = checkpoints.encode_records(view, items)
            # No transaction to abort here: asked once, before anything is put.
            checkpoints.check_abandoned(abandoned)
            return checkpoints.store_records(view, items, records, retention)

    def load(
        self, name: str, version: int, *, at_or_before: int | None = None
    ) -> Checkpoint | None:
        self._log._require_open()
        with self._lock:
            return checkpoints.load_newest(self._view(), name, version, at_or_before)

    def entries(self, name: str | None = None) -> list[CheckpointInfo]:
        with self._lock:
            return checkpoints.list_records(self._view(), name)

    def delete(self, name: str, position: int | None = None) -> int:
        with self._lock:
            return checkpoints.delete_records(self._view(), name, position)

    def _view(self) -> _MemoryRecords:
        return _MemoryRecords(self._log, self._records)


class _MemoryRecords:
    """The RecordWriter over the dict; the store's lock is held while it is used."""

    def __init__(self, log: InMemoryEventLog, records: dict[str, dict[int, bytes]]) -> None:
        self._log = log
        self._records = records

    @property
    def log_id(self) -> str:
        return self._log.node_id

    def last_position(self) -> int:
        return self._log.last_position()

    def tip(self, position: int) -> int | None:
        if position == 0:
            return 0
        envelope = self._log.entry_at(position)
        return None if envelope is None else zlib.crc32(encode_envelope(envelope))

    def names(self) -> list[str]:
        return sorted(name for name, records in self._records.items() if records)

    def positions(self, name: str) -> list[int]:
        return sorted(self._records.get(name, {}))

    def get(self, name: str, position: int) -> bytes | None:
        return self._records.get(name, {}).get(position)

    def put(self, name: str, position: int, record: bytes) -> None:
        checkpoints.name_bytes(name)
        self._records.setdefault(name, {})[position] = record

    def delete(self, name: str, position: int) -> None:
        self._records.get(name, {}).pop(position, None)
