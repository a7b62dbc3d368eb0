"""One write transaction on the LMDB log, and the cursor helpers its reads share."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import cast

import lmdb
import msgspec

from eventstore import checkpoints, keys
from eventstore.events import AnyEvent, Cause, Envelope, encode_envelope
from eventstore.hlc import HybridLogicalClock
from eventstore.lmdb_env import SharedEnv
from eventstore.log import LogError, RemoteAppend, append_in_origin_order
from eventstore.plain_events import PlainAppend, PlainEvent, PlainRecord, encode_plain
from eventstore.records import decode_records

# Reads go in chunks, each in a read transaction of its own, so that no transaction stays open
# while the caller holds a half-consumed iterator: a map resize in this process would
# invalidate it. The log is append-only, so chunks read at different times still agree.
READ_CHUNK = 4096


def read_chunk(txn: lmdb.Transaction, db: lmdb._Database, position: int) -> list[bytes]:
    cursor = txn.cursor(db=db)
    if not cursor.set_range(keys.u64(max(position, 1))):
        return []
    # Transactions are begun without buffers=True, so keys and values are always bytes.
    values = cast(Iterator[bytes], cursor.iternext(keys=False))
    return list(itertools.islice(values, READ_CHUNK))


def get_u64(txn: lmdb.Transaction, key: bytes, db: lmdb._Database) -> int:
    value = txn.get(key, db=db)
    return 0 if value is None else keys.from_u64(cast(bytes, value))


def tail_position(txn: lmdb.Transaction, db: lmdb._Database) -> int:
    cursor = txn.cursor(db=db)
    return keys.from_u64(cast(bytes, cursor.key())) if cursor.last() else 0


class LmdbLogTransaction:
    """One LMDB write transaction; appends are put straight into it, LMDB keeps them private."""

    def __init__(
        self,
        txn: lmdb.Transaction,
        shared: SharedEnv,
        node_id: str,
        clock: HybridLogicalClock,
        attempt: int,
    ) -> None:
        self._txn = txn
        self._shared = shared
        self._node_id = node_id
        self._clock = clock
        self._attempt = attempt
        meta = shared.meta_db
        self._seq_key = keys.seq_counter_key(self._node_id)
        self._origin_prefix = keys.origin_prefix(self._node_id)
        self._last_seq = get_u64(txn, self._seq_key, meta)
        self._hlc = get_u64(txn, keys.META_HLC, meta)
        self._position = tail_position(txn, shared.log_db)
        # Other origins' sequence counters this transaction advanced (append_remote).
        self._remote_seqs: dict[str, int] = {}
        self.appended = 0
        self.map_full = False
        self._open = True

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def attempt(self) -> int:
        return self._attempt

    def last_position(self) -> int:
        self._require_open()
        return self._position

    def read_from(self, position: int) -> Iterator[Envelope]:
        """What was committed before this transaction began plus what it appended so far.

        The end is fixed when called: appends made while iterating are not included.
        """
        self._require_open()
        return self._iterate(max(position, 1), self._position)

    def _iterate(self, position: int, end: int) -> Iterator[Envelope]:
        while position <= end:
            self._require_open()
            chunk = read_chunk(self._txn, self._shared.log_db, position)
            yield from decode_records(chunk[: end - position + 1], position, self._shared.path)
            if not chunk:
                return
            position += len(chunk)

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        self._require_open()
        if not events:
            return []
        self._hlc = self._clock.tick(self._hlc)
        tx = self._last_seq + 1
        stamped = [
            Envelope(
                position=self._position + i,
                origin=self._node_id,
                origin_seq=tx + i - 1,
                hlc=self._hlc,
                tx=tx,
                event=event,
                cause=cause if i == 1 else None,
            )
            for i, event in enumerate(events, start=1)
        ]
        try:
            self._put_all(stamped)
        except lmdb.MapFullError:
            self.map_full = True  # remembered in case fn swallows the error
            raise
        self._position += len(stamped)
        self._last_seq += len(stamped)
        self.appended += len(stamped)
        return stamped

    def append_plain(self, events: Sequence[PlainEvent], cause: Cause | None = None) -> PlainAppend:
        self._require_open()
        origin, tx, first = self._node_id, self._last_seq + 1, self._position + 1
        if not events:
            return PlainAppend(first, tx, self._hlc, origin)
        self._hlc = hlc = self._clock.tick(self._hlc)
        count = len(events)
        # Positional records that encode as their envelopes would (eventstore.plain_events).
        records = list(
            map(
                PlainRecord,
                range(first, first + count),
                repeat(origin),
                range(tx, tx + count),
                repeat(hlc),
                repeat(tx),
                events,
            )
        )
        records[0].cause = cause
        u64, prefix = keys.u64, self._origin_prefix
        try:
            self._put_records(
                list(map(u64, range(first, first + count))),
                list(map(encode_plain, records)),
                [prefix + u64(seq) for seq in range(tx, tx + count)],
            )
        except lmdb.MapFullError:
            self.map_full = True  # remembered in case fn swallows the error
            raise
        self._position += count
        self._last_seq += count
        self.appended += count
        return PlainAppend(first, tx, hlc, origin)

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        self._require_open()
        return append_in_origin_order(envelopes, self._last_of, self._store_remote)

    def _last_of(self, origin: str) -> int:
        if origin == self._node_id:
            return self._last_seq
        seqs = self._remote_seqs
        if origin not in seqs:
            seqs[origin] = get_u64(self._txn, keys.seq_counter_key(origin), self._shared.meta_db)
        return seqs[origin]

    def _store_remote(self, envelope: Envelope) -> Envelope:
        placed = msgspec.structs.replace(envelope, position=self._position + 1)
        try:
            self._put_one(placed)
        except lmdb.MapFullError:
            self.map_full = True
            raise
        self._position += 1
        self.appended += 1
        if envelope.origin == self._node_id:
            self._last_seq += 1  # our own events, brought back from a peer
        else:
            self._remote_seqs[envelope.origin] = envelope.origin_seq
        self._hlc = self._clock.observe(self._hlc, envelope.hlc)
        return placed

    def _put_one(self, envelope: Envelope) -> None:
        position = keys.u64(envelope.position)
        if not self._txn.put(
            position, encode_envelope(envelope), db=self._shared.log_db, append=True
        ):
            raise LogError(f"log position {envelope.position} is not past the log's end")
        origin = keys.origin_key(envelope.origin, envelope.origin_seq)
        if not self._txn.put(origin, position, db=self._shared.origins_db, overwrite=False):
            raise LogError(f"{envelope.origin}#{envelope.origin_seq} was already appended")

    def _put_all(self, stamped: list[Envelope]) -> None:
        u64, prefix = keys.u64, self._origin_prefix
        self._put_records(
            [u64(envelope.position) for envelope in stamped],
            [encode_envelope(envelope) for envelope in stamped],
            [prefix + u64(envelope.origin_seq) for envelope in stamped],
        )

    def _put_records(
        self, positions: list[bytes], records: list[bytes], origins: list[bytes]
    ) -> None:
        """Put consecutive records of this node and their origins-index entries."""
        # One putmulti per table: the loop runs in C (half the time of a put() per key on a
        # bulk import). Like put(), it skips an out-of-order or duplicate key rather than
        # raising, and counts what it added.
        _, added = self._txn.cursor(self._shared.log_db).putmulti(
            zip(positions, records, strict=True), append=True
        )
        if added != len(records):
            first = keys.from_u64(positions[0])
            raise LogError(f"log position {first} is not past the log's end")
        _, added = self._txn.cursor(self._shared.origins_db).putmulti(
            zip(origins, positions, strict=True), overwrite=False
        )
        if added != len(records):
            start, end = keys.seq_of_origin_key(origins[0]), keys.seq_of_origin_key(origins[-1])
            raise LogError(f"one of {self._node_id}#{start} to #{end} was already appended")

    def finish(self) -> None:
        """Store the clock and the sequence counter: once per transaction is enough."""
        if self.appended:
            meta = self._shared.meta_db
            self._txn.put(keys.META_HLC, keys.u64(self._hlc), db=meta)
            self._txn.put(self._seq_key, keys.u64(self._last_seq), db=meta)
            for origin, seq in self._remote_seqs.items():
                self._txn.put(keys.seq_counter_key(origin), keys.u64(seq), db=meta)

    def close(self) -> None:
        self._open = False

    def _require_open(self) -> None:
        if not self._open:
            raise LogError("the transaction has ended")


class LmdbCheckpointRecords:
    """The checkpoints sub-database and the log, seen through one transaction (a RecordView,
    and a RecordWriter when the transaction writes). Begun with buffers=True: records are
    read in place, never copied just to look at a header."""

    def __init__(self, txn: lmdb.Transaction, shared: SharedEnv) -> None:
        self._txn = txn
        self._shared = shared
        self._db = shared.checkpoints_db
        self.appended = 0  # records put or deleted: the commit then needs syncing
        self.map_full = False

    @property
    def log_id(self) -> str:
        return self._shared.stored_node_id

    def last_position(self) -> int:
        return tail_position(self._txn, self._shared.log_db)

    def tip(self, position: int) -> int | None:
        if position == 0:
            return 0
        raw = self._txn.get(keys.u64(position), db=self._shared.log_db)
        return None if raw is None else zlib.crc32(raw)

    def names(self) -> list[str]:
        cursor = self._txn.cursor(db=self._db)
        found: dict[bytes, None] = {}
        for key in cast(Iterator[bytes], cursor.iternext(values=False)):
            split = keys.split_checkpoint_key(bytes(key))
            if split is not None:
                found[split[0]] = None
        return [name.decode(errors="replace") for name in found]

    def positions(self, name: str) -> list[int]:
        prefix = keys.checkpoint_prefix(checkpoints.name_bytes(name))
        cursor = self._txn.cursor(db=self._db)
        found: list[int] = []
        if not cursor.set_range(prefix):
            return found
        for view in cast(Iterator[memoryview], cursor.iternext(values=False)):
            key = bytes(view)
            if not key.startswith(prefix):
                break
            split = keys.split_checkpoint_key(key)
            if split is not None:
                found.append(split[1])
        return found

    def get(self, name: str, position: int) -> memoryview | None:
        key = keys.checkpoint_key(checkpoints.name_bytes(name), position)
        return cast(memoryview | None, self._txn.get(key, db=self._db))

    def put(self, name: str, position: int, record: bytes) -> None:
        key = keys.checkpoint_key(checkpoints.name_bytes(name), position)
        try:
            self._txn.put(key, record, db=self._db)
        except lmdb.MapFullError:
            self.map_full = True  # remembered in case the caller swallows the error
            raise
        self.appended += 1

    def delete(self, name: str, position: int) -> None:
        key = keys.checkpoint_key(checkpoints.name_bytes(name), position)
        if self._txn.delete(key, db=self._db):
            self.appended += 1

    def finish(self) -> None:
        pass

    def close(self) -> None:
        pass
