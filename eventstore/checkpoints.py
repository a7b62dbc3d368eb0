"""Projection checkpoints: the record format, the checks a record must pass, what to keep.

A checkpoint is a projection's snapshot (opaque bytes) and the log position it covers; a
projection restored from it catches up from the log after that position. A record is trusted
only if everything in its header matches:

    magic "GMCK" | layout 1 | projection version u32 | position u64 | payload length u64 |
    tip u32 | log id length u8 | log id | crc32 u32 | payload

`tip` is the crc32 of the log's own record at `position` and `log id` the node id of the data
dir the log was created in: a checkpoint found next to a log it was not written from (a data
dir restored from a backup or another machine, a log replaced or cut short) names a record
that is not there, or not the same, and is ignored. The crc32 covers everything but itself.
Anything that fails a check is logged with its reason and skipped, never trusted; the caller
falls back to an older checkpoint or to the log.

Both backends keep records under (projection name, position), so several checkpoints per
projection coexist and a read as of any position can start from the nearest one before it.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from eventstore.log import Checkpoint, CheckpointAbandonedError, CheckpointInfo, LogError
from eventstore.retention import Retention

__all__ = [
    "LAYOUT",
    "MAGIC",
    "CheckpointRejectedError",
    "RecordView",
    "RecordWriter",
    "Retention",
    "delete_records",
    "encode_record",
    "encode_records",
    "list_records",
    "load_newest",
    "name_bytes",
    "store_records",
    "verify_record",
]

_logger = logging.getLogger(__name__)

MAGIC = b"GMCK"
LAYOUT = 1
_HEAD = struct.Struct(">4sBIQQIB")  # magic, layout, version, position, length, tip, id length
_CRC = struct.Struct(">I")
_MAX_NAME_BYTES = 255
_MAX_VERSION = (1 << 32) - 1


class CheckpointRejectedError(LogError):
    """A stored checkpoint record failed a check; the message is the reason."""


class _OtherVersionError(CheckpointRejectedError):
    """Written by another version of the projection: expected after an upgrade, not damage."""


def encode_record(checkpoint: Checkpoint, *, log_id: str, tip: int) -> bytes:
    """The stored form of `checkpoint` for the log `log_id` whose record at its position has
    crc32 `tip`."""
    if not 0 <= checkpoint.version <= _MAX_VERSION:
        raise LogError(f"projection version out of range: {checkpoint.version}")
    raw_id = log_id.encode()
    head = _HEAD.pack(
        MAGIC,
        LAYOUT,
        checkpoint.version,
        checkpoint.position,
        len(checkpoint.payload),
        tip,
        len(raw_id),
    )
    crc = zlib.crc32(checkpoint.payload, zlib.crc32(head + raw_id))
    return b"".join((head, raw_id, _CRC.pack(crc), checkpoint.payload))


def name_bytes(name: str) -> bytes:
    raw = name.encode()
    if not 0 < len(raw) <= _MAX_NAME_BYTES:
        raise LogError(f"a projection name is 1 to {_MAX_NAME_BYTES} bytes of UTF-8: {name!r}")
    return raw


class RecordView(Protocol):
    """One consistent view of a log's checkpoint records and of the log they belong to."""

    @property
    def log_id(self) -> str: ...

    def last_position(self) -> int: ...

    def tip(self, position: int) -> int | None:
        """crc32 of the log's record at `position` (0 for position 0); None if there is none."""
        ...

    def names(self) -> list[str]: ...

    def positions(self, name: str) -> list[int]:
        """Positions `name` has records at, ascending."""
        ...

    def get(self, name: str, position: int) -> bytes | memoryview | None: ...


class RecordWriter(RecordView, Protocol):
    def put(self, name: str, position: int, record: bytes) -> None: ...

    def delete(self, name: str, position: int) -> None: ...


@dataclass(frozen=True)
class _Header:
    version: int
    position: int
    length: int
    tip: int
    log_id: str
    crc: int
    crc_at: int
    payload_at: int


def _header(record: bytes | memoryview) -> _Header:
    if len(record) < _HEAD.size:
        raise CheckpointRejectedError(f"truncated: {len(record)} bytes, shorter than a header")
    magic, layout, version, position, length, tip, id_length = _HEAD.unpack_from(record)
    if magic != MAGIC:
        raise CheckpointRejectedError(f"not a checkpoint record (magic {bytes(magic)!r})")
    if layout != LAYOUT:
        raise CheckpointRejectedError(f"unknown record layout {layout}")
    crc_at = _HEAD.size + id_length
    payload_at = crc_at + _CRC.size
    if len(record) < payload_at:
        raise CheckpointRejectedError("truncated inside the header")
    try:
        log_id = bytes(record[_HEAD.size : crc_at]).decode()
    except UnicodeDecodeError:
        raise CheckpointRejectedError("the log id is not UTF-8") from None
    (crc,) = _CRC.unpack_from(record, crc_at)
    return _Header(version, position, length, tip, log_id, crc, crc_at, payload_at)


def _check(
    view: RecordView,
    record: bytes | memoryview,
    position: int,
    version: int | None,
    *,
    checksum: bool = True,
) -> _Header:
    """The record's header once every check has passed (`version` None: any version; the
    checksum, the costly one, last and only with `checksum`)."""
    header = _header(record)
    if version is not None and header.version != version:
        raise _OtherVersionError(f"projection version {header.version}, not {version}")
    if header.position != position:
        raise CheckpointRejectedError(f"stored under {position} but covers {header.position}")
    if len(record) - header.payload_at != header.length:
        raise CheckpointRejectedError(
            f"payload of {len(record) - header.payload_at} bytes, the header says {header.length}"
        )
    if header.log_id != view.log_id:
        raise CheckpointRejectedError(f"written for log {header.log_id!r}, not {view.log_id!r}")
    last = view.last_position()
    if position > last:
        raise CheckpointRejectedError(f"covers position {position}, past the log's end {last}")
    if view.tip(position) != header.tip:
        raise CheckpointRejectedError(f"the log's record at {position} is not the one it covers")
    if checksum:
        whole = memoryview(record)
        crc = zlib.crc32(whole[header.payload_at :], zlib.crc32(whole[: header.crc_at]))
        if crc != header.crc:
            raise CheckpointRejectedError("checksum mismatch: the record is corrupt")
    return header


def load_newest(
    view: RecordView, name: str, version: int, at_or_before: int | None = None
) -> Checkpoint | None:
    """The newest record of `name` and `version` at or before `at_or_before` (default: the
    log's end) that passes every check; the others are logged and skipped."""
    for position in reversed(view.positions(name)):
        if at_or_before is not None and position > at_or_before:
            continue
        record = view.get(name, position)
        if record is None:
            continue
        try:
            header = _check(view, record, position, version)
        except CheckpointRejectedError as reason:
            _logger.log(
                logging.INFO if isinstance(reason, _OtherVersionError) else logging.WARNING,
                "checkpoint_ignored: %s at %d: %s",
                name,
                position,
                reason,
                extra={"checkpoint": name, "position": position, "reason": str(reason)},
            )
            continue
        payload = bytes(memoryview(record)[header.payload_at :])
        return Checkpoint(name, version, position, payload)
    return None


def list_records(view: RecordView, name: str | None = None) -> list[CheckpointInfo]:
    """What is stored, by name then position, with what is wrong with each (all but the
    payload's checksum, which only loading verifies: it reads the whole record)."""
    found: list[CheckpointInfo] = []
    for each in [name] if name is not None else view.names():
        for position in view.positions(each):
            record = view.get(each, position)
            if record is None:
                continue
            try:
                header = _header(record)
            except CheckpointRejectedError as reason:
                found.append(CheckpointInfo(each, -1, position, len(record), str(reason)))
                continue
            problem: str | None = None
            try:
                _check(view, record, position, None, checksum=False)
            except CheckpointRejectedError as reason:
                problem = str(reason)
            found.append(CheckpointInfo(each, header.version, position, len(record), problem))
    return found


def verify_record(view: RecordView, name: str, position: int) -> tuple[int, str | None]:
    """Every check of `name`'s record at `position`, the payload's checksum included: its
    projection version (-1 if unreadable) and what is wrong with it (None: sound)."""
    record = view.get(name, position)
    if record is None:
        return -1, "no record"
    try:
        header = _header(record)
    except CheckpointRejectedError as reason:
        return -1, str(reason)
    try:
        _check(view, record, position, None)
    except CheckpointRejectedError as reason:
        return header.version, str(reason)
    return header.version, None


def encode_records(view: RecordView, checkpoints: Sequence[Checkpoint]) -> list[bytes]:
    """The stored form of each checkpoint, checked against the log `view` sees: a position
    past the log's end is a LogError. Nothing needs the view once this returns: a position's
    log record never changes, so the (costly) encoding may run outside any write."""
    last = view.last_position()
    tips: list[int] = []
    for checkpoint in checkpoints:
        name_bytes(checkpoint.name)
        if not 0 <= checkpoint.position <= last:
            raise LogError(
                f"checkpoint of {checkpoint.name} at {checkpoint.position} is past the log's "
                f"end {last}"
            )
        tip = view.tip(checkpoint.position)
        assert tip is not None, "a position up to the log's end has a record"
        tips.append(tip)
    return [
        encode_record(checkpoint, log_id=view.log_id, tip=tip)
        for checkpoint, tip in zip(checkpoints, tips, strict=True)
    ]


def store_records(
    writer: RecordWriter,
    checkpoints: Sequence[Checkpoint],
    records: Sequence[bytes],
    retention: Retention | None,
    abandoned: Callable[[], bool] | None = None,
) -> int:
    """Put the `encode_records` of `checkpoints`; with `retention`, also drop the records of
    their names that it does not keep, and any of an older version or unreadable. Returns the
    bytes written. Raises CheckpointAbandonedError (before anything is committed: the caller
    aborts) once `abandoned` answers True, asked before and after the puts."""
    check_abandoned(abandoned)
    for checkpoint, record in zip(checkpoints, records, strict=True):
        writer.put(checkpoint.name, checkpoint.position, record)
    check_abandoned(abandoned)
    if retention is not None:
        for checkpoint in checkpoints:
            _prune(writer, checkpoint.name, checkpoint.version, retention)
    return sum(map(len, records))


def check_abandoned(abandoned: Callable[[], bool] | None) -> None:
    if abandoned is not None and abandoned():
        raise CheckpointAbandonedError("the checkpoint save was abandoned: a stop was asked")


def _prune(writer: RecordWriter, name: str, version: int, retention: Retention) -> None:
    mine: list[int] = []
    for position in writer.positions(name):
        record = writer.get(name, position)
        try:
            header = _header(record if record is not None else b"")
        except CheckpointRejectedError:
            writer.delete(name, position)
            continue
        if header.version < version:
            writer.delete(name, position)  # a newer graphmem's (higher version) are left alone
        elif header.version == version:
            mine.append(position)
    for position in set(mine) - set(retention.kept(mine)):
        writer.delete(name, position)


def delete_records(writer: RecordWriter, name: str, position: int | None = None) -> int:
    """Delete `name`'s record at `position`, or all of them; returns how many there were."""
    positions = writer.positions(name) if position is None else [position]
    count = 0
    for each in positions:
        if writer.get(name, each) is not None:
            writer.delete(name, each)
            count += 1
    return count
