"""The protocol every event log implements (LMDB on disk, and in memory for tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from typing import NamedTuple, Protocol, TypeVar

from eventstore.events import AnyEvent, Cause, Envelope
from eventstore.hlc import HybridLogicalClock
from eventstore.plain_events import PlainAppend, PlainEvent
from eventstore.retention import Retention

T = TypeVar("T")


class Durability(StrEnum):
    """When a committed append reaches the disk."""

    STRICT = "strict"  # fsync on every commit
    EVERYSEC = "everysec"  # commit without fsync, sync on a ~1 s timer


class LogError(Exception):
    """The log could not do what was asked (corrupt record, bad key, closed log).

    Two kinds are faults of what is stored rather than of the request, and the edges explain
    them to people (graphmem.faults)::

        LogError
         +-- DamagedLogError   a stored event does not read back (`.position`, `.reason`)
         +-- StorageError      the file system refused the data dir (`.kind`, `.path`,
                               `.detail`); a write that fails so wrote nothing

    and one of settings: RetiredNodeIdError, a node id this data dir no longer writes as.
    """


class DamagedLogError(LogError):
    """The record at log `position` is not the envelope of that position: it does not
    decode, or decodes to another position. Nothing after it can be folded."""

    def __init__(self, position: int, reason: str, path: str | None = None) -> None:
        where = f" in {path}" if path else ""
        super().__init__(f"the event at log position {position}{where} is damaged: {reason}")
        self.position = position
        self.reason = reason
        self.path = path


class RetiredNodeIdError(LogError):
    """The log was opened to write as `node_id`, an id its data dir wrote as before it was
    restored from a backup (eventstore.identity): that id's later events may exist elsewhere
    (on a replication hub, in another copy), and writing as it again would reuse their
    sequence numbers, so every node holding them would drop these as duplicates."""

    def __init__(self, path: str, node_id: str, current: str) -> None:
        super().__init__(
            f"the data dir {path} was restored from a backup and no longer writes as node "
            f"{node_id!r} (events that node wrote after the backup keep its numbers): set "
            f"GRAPHMEM_NODE_ID to a new id, or unset it to use the data dir's own, {current!r}"
        )
        self.node_id = node_id


class StorageKind(StrEnum):
    """Why the file system refused the data dir."""

    READ_ONLY = "read_only"  # EROFS, EACCES, EPERM
    DISK_FULL = "disk_full"  # ENOSPC, EDQUOT
    FILE_TOO_LARGE = "file_too_large"  # EFBIG: a file size limit (ulimit -f)
    NOT_A_DIRECTORY = "not_a_directory"
    NOT_A_LOG = "not_a_log"  # the LMDB file itself is damaged or of another kind
    MAP = "map"  # the memory map could not grow
    OTHER = "other"


class StorageError(LogError):
    """The file system refused the data dir at `path`; `detail` is what it said. A write
    that fails so is aborted whole: nothing of it is stored."""

    def __init__(self, kind: StorageKind, path: str, detail: str) -> None:
        super().__init__(f"{kind.value}: {path}: {detail}")
        self.kind = kind
        self.path = path
        self.detail = detail


class Checkpoint(NamedTuple):
    """A projection's snapshot (opaque to the log) and the log position it covers."""

    name: str
    version: int
    position: int
    payload: bytes


class CheckpointInfo(NamedTuple):
    """A stored checkpoint as listed; `problem` says why it would be ignored (None: looks fine;
    the payload's checksum is verified only when it is loaded). `version` is -1 when the
    record is unreadable."""

    name: str
    version: int
    position: int
    size: int
    problem: str | None


class CheckpointAbandonedError(LogError):
    """A checkpoint save given up on midway (a stop was asked): nothing of it was stored."""


class CheckpointStore(Protocol):
    """Checkpoints kept beside the log, in the same store (docs/architecture.md §2: `checkpoints`).

    A record is keyed by (name, position) and checked against the log on load: see
    eventstore.checkpoints for the format and the checks.
    """

    def save(
        self,
        *checkpoints: Checkpoint,
        retention: Retention | None = None,
        abandoned: Callable[[], bool] | None = None,
    ) -> int:
        """Store `checkpoints` in one write transaction (with `retention`, dropping what it does
        not keep of their names); returns the bytes written. A position past the log's end is
        a LogError. `abandoned` is asked between the steps (encoding, puts, commit): once it
        answers True, nothing is stored (the transaction is aborted) and
        CheckpointAbandonedError is raised."""
        ...

    def load(
        self, name: str, version: int, *, at_or_before: int | None = None
    ) -> Checkpoint | None:
        """The newest checkpoint of `name` at `version` (at or before a position, if given)
        that passes every check; the ones that fail are logged and skipped."""
        ...

    def entries(self, name: str | None = None) -> list[CheckpointInfo]:
        """What is stored (of `name`, or of every projection), by name then position."""
        ...

    def delete(self, name: str, position: int | None = None) -> int:
        """Delete `name`'s checkpoint at `position`, or all of them; returns how many."""
        ...


class RemoteAppend(NamedTuple):
    """What `append_remote` did with another node's envelopes.

    `stored`: the envelopes appended, re-positioned in this log (stamps unchanged);
    `skipped`: how many this log already held (an (origin, origin_seq) seen before);
    `gaps`: per origin whose envelopes stopped short, the first origin_seq still missing.
    Envelopes past a gap are refused, not held: the sender re-reads from the missing one.
    """

    stored: list[Envelope]
    skipped: int
    gaps: dict[str, int]


def append_in_origin_order(
    envelopes: Sequence[Envelope],
    last_of: Callable[[str], int],
    store: Callable[[Envelope], Envelope],
) -> RemoteAppend:
    """The rule of `append_remote`, for every backend: per origin, an envelope this log holds
    already (origin_seq <= `last_of(origin)`) is skipped, the next one (last + 1) is given to
    `store` (which appends it, advances what `last_of` answers, and returns it placed), and one
    past a gap is refused with every later one of its origin."""
    stored: list[Envelope] = []
    skipped = 0
    gaps: dict[str, int] = {}
    for envelope in envelopes:
        origin = envelope.origin
        if origin in gaps:
            continue  # refused with the gap before it
        last = last_of(origin)
        if envelope.origin_seq <= last:
            skipped += 1
        elif envelope.origin_seq != last + 1:
            gaps[origin] = last + 1
        else:
            stored.append(store(envelope))
    return RemoteAppend(stored, skipped, gaps)


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

    def append_plain(self, events: Sequence[PlainEvent], cause: Cause | None = None) -> PlainAppend:
        """`append` for plain creations (a bulk import's events), encoded without building
        an Envelope each: the log then holds exactly what `append` of the events they stand
        for would have stored (eventstore.plain_events). Says where they went rather than
        returning the envelopes."""
        ...

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        """Stage envelopes another node stamped, keeping their origin, origin_seq, hlc, tx
        and cause (only `position` is this log's). Per origin, each must be the next
        origin_seq: one already held is skipped (idempotent), one past a gap is refused with
        the rest of its origin's (see RemoteAppend). The clock observes every stamp stored."""
        ...


class EventLog(Protocol):
    """An append-only, totally ordered log of envelopes."""

    @property
    def node_id(self) -> str: ...

    @property
    def durability(self) -> Durability: ...

    @property
    def clock(self) -> HybridLogicalClock:
        """The clock that stamps this log's appends; its `now_ms()` is "now" for every rule
        that depends on time, so rules and stamps agree (see eventstore.hlc.WallClock)."""
        ...

    def transact(self, fn: Callable[[LogTransaction], T]) -> T:
        """Run `fn` in one write transaction and commit what it appended, atomically.

        If the transaction has to be retried (e.g. the map grew), `fn` is called again with
        `attempt > 0` and must start over; nothing from an aborted attempt is kept.
        """
        ...

    def append(self, events: Sequence[AnyEvent], cause: Cause | None = None) -> list[Envelope]:
        """Append one command's events in a transaction of their own."""
        ...

    def append_remote(self, envelopes: Sequence[Envelope]) -> RemoteAppend:
        """Append other nodes' envelopes in a transaction of their own (see
        LogTransaction.append_remote)."""
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

    def read_origin_records(
        self, origin: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[tuple[Envelope, bytes]]:
        """read_origin's envelopes, each with its record as stored (encode_envelope's
        bytes): for a sender that forwards the bytes rather than encoding each again."""
        ...

    def last_origin_seq(self, origin: str) -> int: ...

    def origins(self) -> dict[str, int]:
        """Every origin this log holds events of, with its last origin_seq (the frontier)."""
        ...

    @property
    def checkpoints(self) -> CheckpointStore:
        """The projections' checkpoints stored with this log."""
        ...

    def sync(self) -> None:
        """Force committed appends to disk (a no-op where there is no disk)."""
        ...

    def close(self) -> None: ...
