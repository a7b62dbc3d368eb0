"""Stored checkpoint records as they are, read and written past every check, so tests can
damage them on purpose. Test code only: the stores offer no such door."""

from __future__ import annotations

from eventstore.lmdb_log import LmdbEventLog
from eventstore.lmdb_txn import LmdbCheckpointRecords
from eventstore.log import EventLog
from eventstore.memory_log import InMemoryEventLog


def raw_record(log: EventLog, name: str, position: int) -> bytes | None:
    """The record of `name`'s checkpoint at `position`, bytes as stored."""
    if isinstance(log, InMemoryEventLog):
        return log.checkpoints._records.get(name, {}).get(position)
    assert isinstance(log, LmdbEventLog)
    shared = log._require_open()

    def get(txn: object) -> bytes | None:
        found = LmdbCheckpointRecords(txn, shared).get(name, position)  # type: ignore[arg-type]
        return None if found is None else bytes(found)

    return log.read(get, buffers=True)  # type: ignore[arg-type]


def put_raw_record(log: EventLog, name: str, position: int, record: bytes) -> None:
    """Store `record` as `name`'s checkpoint at `position`, unchecked."""
    if isinstance(log, InMemoryEventLog):
        log.checkpoints._view().put(name, position, record)
        return
    assert isinstance(log, LmdbEventLog)
    log.write(
        lambda txn, shared, attempt: LmdbCheckpointRecords(txn, shared),
        lambda records: records.put(name, position, record),
    )
