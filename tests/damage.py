"""Damaging a real LMDB data dir on purpose: the stored record of one event, or a checkpoint.

Opens the environment with py-lmdb directly (no graphmem process may hold it meanwhile) and
overwrites values in place, as a bad disk, a stray tool or a half-restored backup would.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Literal

import lmdb
import msgspec

from eventstore.events import EntityCreated, Envelope, ObservationAdded, encode_envelope
from eventstore.lmdb_log import LmdbEventLog
from tests.checkpoint_records import put_raw_record, raw_record

Kind = Literal["junk", "truncated", "wrong_shape", "wrong_type", "other_position", "empty"]
KINDS: tuple[Kind, ...] = (
    "junk",
    "truncated",
    "wrong_shape",
    "wrong_type",
    "other_position",
    "empty",
)


def damaged(original: bytes, position: int, kind: Kind) -> bytes:
    """What `kind` of damage makes of the record `original` stored at `position`."""
    match kind:
        case "junk":  # not msgpack at all (0xc1 is never used)
            return b"\xc1" + bytes(range(7, 40))
        case "truncated":  # cut short, as by a torn write
            return original[: len(original) // 2]
        case "wrong_shape":  # valid msgpack, not an envelope
            return msgspec.msgpack.encode({"p": position, "o": "x"})
        case "wrong_type":  # valid msgpack, a bare number
            return msgspec.msgpack.encode(12345)
        case "other_position":  # a sound envelope, of another position
            envelope = msgspec.msgpack.decode(original, type=Envelope)
            return encode_envelope(msgspec.structs.replace(envelope, position=position + 1000))
        case "empty":
            return b""


def damage_event(data_dir: Path, position: int, kind: Kind = "junk") -> None:
    """Overwrite the stored record of the event at `position` in `data_dir`'s log."""
    env = lmdb.open(str(data_dir), max_dbs=8)
    try:
        log_db = env.open_db(b"log")
        key = struct.pack(">Q", position)
        with env.begin(write=True, db=log_db) as txn:
            original = txn.get(key)
            assert original is not None, f"no event at position {position}"
            txn.put(key, damaged(bytes(original), position, kind))
    finally:
        env.close()


def damage_checkpoint(data_dir: Path, name: str, position: int) -> None:
    """Flip a byte in the payload of `name`'s checkpoint at `position` (the checksum no
    longer matches)."""
    with LmdbEventLog.open(data_dir) as event_log:
        record = raw_record(event_log, name, position)
        assert record is not None, f"no {name} checkpoint at {position}"
        flipped = bytearray(record)
        flipped[-1] ^= 0xFF
        put_raw_record(event_log, name, position, bytes(flipped))


def write_people(data_dir: Path, count: int = 10) -> int:
    """`count` entities with an observation each (two events apiece, one transaction each);
    returns the log's last position."""
    with LmdbEventLog.open(data_dir) as event_log:
        for i in range(count):
            event_log.append(
                [
                    EntityCreated(name=f"person{i}", entity_type="person"),
                    ObservationAdded(entity=f"person{i}", content=f"fact {i}"),
                ]
            )
        return event_log.last_position()


def damage_open_log(event_log: LmdbEventLog, position: int, kind: Kind = "junk") -> None:
    """Like damage_event, through a log this process holds open (LMDB refuses to open the
    environment twice in one process)."""
    env = event_log.env
    log_db = env.open_db(b"log")
    key = struct.pack(">Q", position)
    with env.begin(write=True, db=log_db) as txn:
        original = txn.get(key)
        assert original is not None, f"no event at position {position}"
        txn.put(key, damaged(bytes(original), position, kind))


def append_damaged(data_dir: Path, kind: Kind = "junk") -> int:
    """Append one record that is already damaged (as a writer in another process might leave
    it), in one write, so that no reader sees it whole first; returns its position."""
    env = lmdb.open(str(data_dir), max_dbs=8)
    try:
        log_db = env.open_db(b"log")
        with env.begin(write=True, db=log_db) as txn:
            cursor = txn.cursor()
            last = struct.unpack(">Q", cursor.key())[0] if cursor.last() else 0
            sound = txn.get(struct.pack(">Q", last)) if last else None
            original = bytes(sound) if sound is not None else b""
            txn.put(struct.pack(">Q", last + 1), damaged(original, last + 1, kind))
        return last + 1
    finally:
        env.close()
