"""The LMDB event log: the durable, multi-process EventLog (docs/architecture.md §2)."""

from __future__ import annotations

import enum
import itertools
import operator
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, cast

import lmdb

from eventstore import checkpoints, keys
from eventstore.checkpoints import Retention
from eventstore.events import AnyEvent, Cause, Envelope
from eventstore.hlc import HybridLogicalClock
from eventstore.lmdb_env import SharedEnv, acquire, release, storage_error
from eventstore.lmdb_txn import (
    LmdbCheckpointRecords,
    LmdbLogTransaction,
    get_u64,
    read_chunk,
    tail_position,
)
from eventstore.log import (
    Checkpoint,
    CheckpointInfo,
    DamagedLogError,
    Durability,
    LogError,
    LogTransaction,
    RemoteAppend,
    RetiredNodeIdError,
)
from eventstore.records import decode_record, decode_records, origin_records

T = TypeVar("T")


class _WriteSession(Protocol):
    """What a write transaction's function works through: the log's or the checkpoints'."""

    @property
    def appended(self) -> int: ...

    @property
    def map_full(self) -> bool: ...

    def finish(self) -> None: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=_WriteSession)


class _Retry(enum.Enum):
    GROW = "grow"
    GROW_IF_NEARLY_FULL = "grow_if_nearly_full"
    ADOPT_RESIZE = "adopt_resize"


class LmdbEventLog:
    """An EventLog in an LMDB environment that several processes may share."""

    def __init__(
        self,
        shared: SharedEnv,
        *,
        durability: Durability,
        node_id: str | None,
        clock: HybridLogicalClock | None,
    ) -> None:
        self._shared: SharedEnv | None = shared
        self._durability = durability
        self._node_id = node_id if node_id is not None else shared.stored_node_id
        keys.origin_bytes(self._node_id)  # validates it now rather than at the first append
        if self._node_id in shared.former_node_ids:
            raise RetiredNodeIdError(shared.path, self._node_id, shared.stored_node_id)
        self.clock = clock if clock is not None else HybridLogicalClock()
        # A strict log on an env first opened everysec cannot rely on the env's flags.
        self._sync_after_commit = durability is Durability.STRICT and not shared.sync_on_commit
        self._checkpoints = LmdbCheckpointStore(self)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durability: Durability = Durability.EVERYSEC,
        node_id: str | None = None,
        clock: HybridLogicalClock | None = None,
        map_size: int = 1 << 30,
        sync_interval: float = 1.0,
    ) -> LmdbEventLog:
        """Open (creating if needed) the log in the data dir `path`.

        `node_id` overrides the node id stored in the dir as this process's origin; the stored
        one is created on first open and never rewritten. The environment is shared by every
        log this process opens on the same dir; the first opener's durability, map size and
        sync interval set it up.
        """
        shared = acquire(path, durability, map_size, sync_interval)
        try:
            return cls(shared, durability=durability, node_id=node_id, clock=clock)
        except BaseException:
            release(shared)
            raise

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def former_node_ids(self) -> frozenset[str]:
        """The ids this data dir wrote as before it was restored (eventstore.identity)."""
        return self._require_open().former_node_ids

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def path(self) -> str:
        return self._require_open().path

    @property
    def checkpoints(self) -> LmdbCheckpointStore:
        return self._checkpoints

    @property
    def shared(self) -> SharedEnv:
        """The environment and its sub-databases, for this package's readers of raw records
        (eventstore.verify); read through `read`, never write through it."""
        return self._require_open()

    @property
    def env(self) -> lmdb.Environment:
        """The shared environment, for stats; never open transactions on it directly."""
        return self._require_open().env

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        """Run `fn` in one write transaction; see EventLog.transact.

        `fn` is re-run from the start, with `txn.attempt` incremented, when the map filled up
        (it is doubled in between); nothing of the failed attempt is kept. So keep side effects
        out of `fn`, or make them depend only on what it reads through `txn`. Growing the map
        ahead of need and adopting another process's growth happen before `fn` runs.
        """
        node_id, clock = self._node_id, self.clock

        def begin(raw: lmdb.Transaction, shared: SharedEnv, attempt: int) -> LmdbLogTransaction:
            return LmdbLogTransaction(raw, shared, node_id, clock, attempt)

        return self.write(begin, fn)

    def write(
        self,
        begin: Callable[[lmdb.Transaction, SharedEnv, int], S],
        fn: Callable[[S], T],
        *,
        buffers: bool = False,
    ) -> T:
        """Run `fn` on the session `begin` makes of a write transaction, with transact's
        retries (map growth, another process's resize); for this package's stores only."""
        shared = self._require_open()
        if getattr(shared.writing, "active", False):
            raise LogError("transact is not reentrant: this thread already has a transaction")
        attempt = 0
        while True:
            outcome = self._attempt(shared, begin, fn, attempt, buffers)
            if not isinstance(outcome, _Retry):
                return outcome[0]
            if outcome is _Retry.ADOPT_RESIZE:
                shared.adopt_resize()
            elif outcome is _Retry.GROW_IF_NEARLY_FULL:
                shared.grow(only_if_nearly_full=True)
            else:
                shared.grow()
                attempt += 1  # only now has fn run in vain

    def _attempt(
        self,
        shared: SharedEnv,
        begin: Callable[[lmdb.Transaction, SharedEnv, int], S],
        fn: Callable[[S], T],
        attempt: int,
        buffers: bool,
    ) -> tuple[T] | _Retry:
        shared.writing.active = True
        try:
            with shared.gate.shared():
                if shared.nearly_full():
                    return _Retry.GROW_IF_NEARLY_FULL
                try:
                    raw = _begin(shared, write=True, buffers=buffers)
                except lmdb.MapResizedError:
                    return _Retry.ADOPT_RESIZE
                except lmdb.Error as error:
                    raise storage_error(error, shared.path) from error
                txn = begin(raw, shared, attempt)
                try:
                    result = fn(txn)
                    if txn.map_full:
                        return _Retry.GROW
                    txn.finish()
                    raw.commit()
                except lmdb.MapFullError:
                    return _Retry.GROW
                except lmdb.Error as error:
                    if txn.map_full:
                        return _Retry.GROW
                    # The commit failed (a full disk, a file size limit): LMDB aborted the
                    # whole transaction, so nothing of it is stored.
                    raise storage_error(error, shared.path) from error
                except Exception:
                    if txn.map_full:
                        return _Retry.GROW
                    raise
                finally:
                    txn.close()
                    raw.abort()  # a no-op after commit
        finally:
            shared.writing.active = False
        if txn.appended:
            if self._sync_after_commit:
                shared.sync()
            else:
                shared.committed()
        return (result,)

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        if not events:
            self._require_open()
            return []
        return self.transact(lambda txn: txn.append(events, cause))

    def last_position(self) -> int:
        shared = self._require_open()
        return self._read(lambda txn: tail_position(txn, shared.log_db))

    def read_from(self, position: int) -> Iterator[Envelope]:
        """Committed envelopes from `position` up to the log's end when iteration starts."""
        shared = self._require_open()
        position = max(position, 1)
        end: int | None = None

        def chunk(txn: lmdb.Transaction) -> list[bytes]:
            nonlocal end
            if end is None:
                end = tail_position(txn, shared.log_db)
            return read_chunk(txn, shared.log_db, position)[: max(end - position + 1, 0)]

        path = shared.path
        while True:
            raws = self._read(chunk)
            if not raws:
                return
            yield from decode_records(raws, position, path)
            position += len(raws)

    def read_origin(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[Envelope]:
        shared = self._require_open()
        prefix = keys.origin_prefix(origin)
        last = to_seq if to_seq is not None else (1 << 64) - 1

        def read(txn: lmdb.Transaction) -> list[Envelope]:
            cursor = txn.cursor(db=shared.origins_db)
            found: list[Envelope] = []
            if not cursor.set_range(keys.origin_key(origin, max(from_seq, 1))):
                return found
            for key, position in cast(Iterator[tuple[bytes, bytes]], cursor):
                if not key.startswith(prefix) or keys.seq_of_origin_key(key) > last:
                    break
                raw = txn.get(position, db=shared.log_db)
                if raw is None:
                    raise LogError(f"origins index points past the log: {origin}")
                at = keys.from_u64(position)
                envelope = decode_record(cast(bytes, raw), at, shared.path)
                if (envelope.origin, envelope.origin_seq) != (origin, keys.seq_of_origin_key(key)):
                    raise DamagedLogError(
                        at,
                        f"the origins index names it {origin}#{keys.seq_of_origin_key(key)}, "
                        f"but it is {envelope.origin}#{envelope.origin_seq}",
                        shared.path,
                    )
                found.append(envelope)
            return found

        return self._read(read)

    def read_origin_records(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[tuple[Envelope, bytes]]:
        shared = self._require_open()
        first = max(from_seq, 1)
        last = to_seq if to_seq is not None else (1 << 64) - 1
        if last < first:
            return []
        start, end = keys.origin_key(origin, first), keys.origin_key(origin, last)
        if to_seq is not None:
            run = self._read(lambda txn: _origin_run(txn, shared, origin, first, last))
            if run is not None:
                return origin_records(run[1], run[0], origin, first, shared.path)

        # Per record only what must run in Python: the replication link reads every event
        # of this node once more, and read_origin's per-record work (key decoding, a whole
        # envelope decoded) was most of the link's CPU. One origin's keys are contiguous and
        # numeric in byte order, so `key > end` ends the range exactly.
        def read(txn: lmdb.Transaction) -> tuple[list[bytes], list[object]]:
            cursor = txn.cursor(db=shared.origins_db)
            positions: list[bytes] = []
            if cursor.set_range(start):
                for key, position in cast(Iterator[tuple[bytes, bytes]], cursor):
                    if key > end:
                        break
                    positions.append(position)
            get, log_db = txn.get, shared.log_db  # bytes: this read holds no buffers
            return positions, [get(position, db=log_db) for position in positions]

        positions, raws = self._read(read)
        if None in raws:
            raise LogError(f"origins index points past the log: {origin}")
        return origin_records(
            cast(list[bytes], raws), keys.u64_list(positions), origin, first, shared.path
        )

    def last_origin_seq(self, origin: str) -> int:
        shared = self._require_open()
        key = keys.seq_counter_key(origin)
        return self._read(lambda txn: get_u64(txn, key, shared.meta_db))

    def origins(self) -> dict[str, int]:
        shared = self._require_open()
        prefix = keys.seq_counter_key("x")[:-1]

        def read(txn: lmdb.Transaction) -> dict[str, int]:
            cursor = txn.cursor(db=shared.meta_db)
            found: dict[str, int] = {}
            if not cursor.set_range(prefix):
                return found
            for key, value in cast(Iterator[tuple[bytes, bytes]], cursor):
                if not key.startswith(prefix):
                    break
                if seq := keys.from_u64(value):  # a counter written before any append
                    found[key[len(prefix) :].decode(errors="replace")] = seq
            return found

        return self._read(read)

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        """Append other nodes' envelopes in a transaction of their own (see
        LogTransaction.append_remote)."""
        return self.transact(lambda txn: txn.append_remote(envelopes))

    def release_pages(self) -> int:
        """Hand back the log's mapped pages this process has read (they stay in the page
        cache): after reading many records once, e.g. a tail folded anew; returns the bytes
        of mapping advised."""
        return self._require_open().release_pages()

    def sync(self) -> None:
        self._require_open().sync()

    def close(self) -> None:
        """Release the environment; the last log on it stops the sync timer and syncs."""
        shared, self._shared = self._shared, None
        if shared is not None:
            release(shared)

    def __enter__(self) -> LmdbEventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def read(self, fn: Callable[[lmdb.Transaction], T], *, buffers: bool = False) -> T:
        """Run `fn` in a read transaction (retried after another process's resize); for this
        package's stores only."""
        return self._read(fn, buffers=buffers)

    def _read(self, fn: Callable[[lmdb.Transaction], T], *, buffers: bool = False) -> T:
        shared = self._require_open()
        while True:
            with shared.gate.shared():
                try:
                    txn = _begin(shared, write=False, buffers=buffers)
                except lmdb.MapResizedError:
                    pass
                except lmdb.Error as error:
                    raise storage_error(error, shared.path) from error
                else:
                    try:
                        return fn(txn)
                    except lmdb.Error as error:
                        raise storage_error(error, shared.path) from error
                    finally:
                        txn.abort()
            shared.adopt_resize()

    def _require_open(self) -> SharedEnv:
        if self._shared is None:
            raise LogError("the log is closed")
        return self._shared


def _begin(shared: SharedEnv, *, write: bool, buffers: bool) -> lmdb.Transaction:
    # Separate calls: the stubs type a buffers transaction apart from a bytes one.
    if buffers:
        return shared.env.begin(write=write, buffers=True)
    return shared.env.begin(write=write)


# A checkpoint this large has its mapped pages handed back once read or written (a scan of
# /proc/self/maps and one madvise; a small one is not worth it).
RELEASE_AFTER_BYTES = 1 << 20


class LmdbCheckpointStore:
    """The `checkpoints` sub-database: one record per (projection name, position).

    Saving is one write transaction (records and pruning together), with the log's retries
    when the map fills up; a big snapshot may double the map, as a big append would.
    """

    def __init__(self, log: LmdbEventLog) -> None:
        self._log = log

    def save(
        self,
        *items: Checkpoint,
        retention: Retention | None = None,
        abandoned: Callable[[], bool] | None = None,
    ) -> int:
        # Encoded (checksummed, copied) before the write transaction, which other processes'
        # appends wait for, so it holds only the puts.
        encoded = self._log.read(
            lambda txn: checkpoints.encode_records(_records(txn, self._shared()), items),
            buffers=True,
        )
        stored = self._log.write(
            _records,
            lambda records: checkpoints.store_records(
                records, items, encoded, retention, abandoned
            ),
            buffers=True,
        )
        if sum(len(item.payload) for item in items) >= RELEASE_AFTER_BYTES:
            self._shared().release_pages()  # the snapshots' pages, read to encode and written
        return stored

    def load(
        self, name: str, version: int, *, at_or_before: int | None = None
    ) -> Checkpoint | None:
        loaded = self._log.read(
            lambda txn: checkpoints.load_newest(
                _records(txn, self._shared()), name, version, at_or_before
            ),
            buffers=True,
        )
        # The payload is a copy: the pages it was read from stay resident in this process
        # for nothing (~15 MiB of RssFile at 50k entities) unless handed back.
        if loaded is not None and len(loaded.payload) >= RELEASE_AFTER_BYTES:
            self._shared().release_pages()
        return loaded

    def anchor(self, position: int | None = None) -> tuple[str, int, int | None]:
        """What a record written beside the log names it by, as a checkpoint does: the log's
        id, its last position and the crc32 of its record at `position` (default: that last
        one; None: no record there), read in one transaction."""

        def read(txn: lmdb.Transaction) -> tuple[str, int, int | None]:
            records = _records(txn, self._shared())
            end = records.last_position()
            return records.log_id, end, records.tip(end if position is None else position)

        return self._log.read(read)

    def entries(self, name: str | None = None) -> list[CheckpointInfo]:
        return self._log.read(
            lambda txn: checkpoints.list_records(_records(txn, self._shared()), name),
            buffers=True,
        )

    def delete(self, name: str, position: int | None = None) -> int:
        return self._log.write(
            _records,
            lambda records: checkpoints.delete_records(records, name, position),
            buffers=True,
        )

    def _shared(self) -> SharedEnv:
        return self._log._require_open()


def _records(txn: lmdb.Transaction, shared: SharedEnv, attempt: int = 0) -> LmdbCheckpointRecords:
    return LmdbCheckpointRecords(txn, shared)


def _origin_run(
    txn: lmdb.Transaction, shared: SharedEnv, origin: str, first: int, last: int
) -> tuple[list[int], list[bytes]] | None:
    """`origin`'s records `first` .. `last` in a few C-level walks, when all are there: the
    sender reads every local event back this way (per event a key compared and a get in
    Python was about half its 0.8 us). None when the last is not indexed or a record is
    missing: the index walk then returns what is there, or says what is wrong."""
    index = txn.cursor(db=shared.origins_db)
    # An origin's entries are numbered without a hole: when the last one wanted is there, so
    # are all before it, and values alone (no key compared per entry) are exactly them.
    if not index.set_key(keys.origin_key(origin, last)):
        return None
    high = keys.from_u64(cast(bytes, index.value()))
    if not index.set_key(keys.origin_key(origin, first)):
        return None
    low = keys.from_u64(cast(bytes, index.value()))
    count = last - first + 1
    if high - low == count - 1:
        # One origin's positions rise with its sequence: `count` of them from `low` to `high`
        # are every position between (no peer's event appended among them: the usual case).
        positions = list(range(low, high + 1))
    else:
        packed = cast(Iterator[bytes], index.iternext(keys=False))
        positions = keys.u64_list(list(itertools.islice(packed, count)))
    records: list[bytes] = []
    log = txn.cursor(db=shared.log_db)
    for start, size in _runs(positions):
        if not log.set_key(keys.u64(start)):
            return None
        expected = len(records) + size
        records.extend(itertools.islice(cast(Iterator[bytes], log.iternext(keys=False)), size))
        if len(records) != expected:  # the log ends inside the run
            return None
    return positions, records


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Consecutive positions as (first, how many), in order; computed without a Python step
    per position when there are few runs (the usual case: one)."""
    if not positions:
        return []
    breaks = list(
        itertools.compress(
            range(1, len(positions)),
            map(operator.ne, positions[1:], map((1).__add__, positions[:-1])),
        )
    )
    bounds = [0, *breaks, len(positions)]
    return [(positions[a], b - a) for a, b in itertools.pairwise(bounds)]
