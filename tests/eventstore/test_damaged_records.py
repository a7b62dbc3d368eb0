"""A damaged record in the LMDB log is reported by position from every read path, and
`verify_log` finds each kind of damage; refusals of the file system are StorageErrors."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import lmdb
import msgspec
import pytest

from eventstore.lmdb_env import storage_error
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import (
    Checkpoint,
    DamagedLogError,
    LogTransaction,
    StorageError,
    StorageKind,
)
from eventstore.verify import verify_log
from tests.damage import KINDS, Kind, damage_checkpoint, damage_event, write_people


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    write_people(tmp_path, 10)  # positions 1..20
    return tmp_path


CASES = [(kind, position) for kind in KINDS for position in (1, 7, 20)]


@pytest.mark.parametrize(("kind", "position"), CASES)
def test_reading_past_a_damaged_record_raises_an_error_naming_its_position(
    data_dir: Path, kind: Kind, position: int
) -> None:
    damage_event(data_dir, position, kind)
    with LmdbEventLog.open(data_dir) as event_log:
        with pytest.raises(DamagedLogError) as raised:
            list(event_log.read_from(1))
        assert raised.value.position == position
        assert f"position {position}" in str(raised.value)
        # Everything before it still reads.
        reader = event_log.read_from(1)
        before = [next(reader) for _ in range(position - 1)]
        assert [e.position for e in before] == list(range(1, position))


def test_a_write_transaction_catching_up_over_a_damaged_record_raises_and_writes_nothing(
    data_dir: Path,
) -> None:
    damage_event(data_dir, 5, "truncated")
    with LmdbEventLog.open(data_dir) as event_log:

        def catch_up(txn: LogTransaction) -> None:
            list(txn.read_from(1))

        with pytest.raises(DamagedLogError) as raised:
            event_log.transact(catch_up)
        assert raised.value.position == 5
        assert event_log.last_position() == 20


def test_reading_a_transaction_by_origin_reports_the_damaged_record(data_dir: Path) -> None:
    damage_event(data_dir, 3, "wrong_shape")
    with LmdbEventLog.open(data_dir) as event_log:
        with pytest.raises(DamagedLogError) as raised:
            event_log.read_origin(event_log.node_id, 1, 4)
        assert raised.value.position == 3


@pytest.mark.parametrize("kind", KINDS)
def test_reading_stored_records_by_origin_reports_the_damaged_record(
    data_dir: Path, kind: Kind
) -> None:
    damage_event(data_dir, 3, kind)
    with LmdbEventLog.open(data_dir) as event_log:
        with pytest.raises(DamagedLogError) as raised:
            event_log.read_origin_records(event_log.node_id, 1, 4)
        assert raised.value.position == 3
        assert [e.origin_seq for e, _ in event_log.read_origin_records(event_log.node_id, 4, 5)]


def test_stored_records_are_not_handed_out_when_only_their_event_is_damaged(
    data_dir: Path,
) -> None:
    # The stamp fields read soundly: a sender checking only those would pass the record on
    # to every other node, whose feed would then stop on it.
    with LmdbEventLog.open(data_dir) as event_log:
        stamp = event_log.read_origin(event_log.node_id, 3, 3)[0]
        fields = {"p": 3, "o": stamp.origin, "s": 3, "h": stamp.hlc, "x": stamp.tx}
        record = msgspec.msgpack.encode({**fields, "e": {"type": "NoSuchEvent"}})
        with event_log.env.begin(write=True, db=event_log.env.open_db(b"log")) as txn:
            txn.put(struct.pack(">Q", 3), record)
        with pytest.raises(DamagedLogError) as raised:
            event_log.read_origin_records(event_log.node_id, 1, 4)
        assert raised.value.position == 3


def test_a_sound_log_verifies_without_a_problem(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        report = verify_log(event_log)
    assert report.sound, report.problems
    assert (report.events, report.last_position, len(report.origins)) == (20, 20, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_verify_names_the_damaged_event_and_nothing_else(data_dir: Path, kind: Kind) -> None:
    damage_event(data_dir, 8, kind)
    with LmdbEventLog.open(data_dir) as event_log:
        report = verify_log(event_log)
    assert report.damaged_positions == [8]
    assert len(report.problems) == 1, report.problems


def test_verify_finds_a_missing_record_and_a_lagging_counter(data_dir: Path) -> None:
    env = lmdb.open(str(data_dir), max_dbs=8)
    with env.begin(write=True, db=env.open_db(b"log")) as txn:
        txn.delete((6).to_bytes(8, "big"))
    env.close()
    with LmdbEventLog.open(data_dir) as event_log:
        report = verify_log(event_log)
    whats = [p.what for p in report.problems]
    assert any("positions jump from 5 to 7" in what for what in whats), whats
    assert any("index" in p.where for p in report.problems), report.problems


def test_verify_checks_the_checksum_of_every_checkpoint(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.checkpoints.save(Checkpoint("graph", 1, 10, b"payload" * 10))
    damage_checkpoint(data_dir, "graph", 10)
    with LmdbEventLog.open(data_dir) as event_log:
        report = verify_log(event_log)
    assert report.damaged_positions == []
    assert [(p.where, p.what) for p in report.problems] == [
        ("checkpoint graph at position 10", "checksum mismatch: the record is corrupt")
    ]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (errno.EROFS, StorageKind.READ_ONLY),
        (errno.EACCES, StorageKind.READ_ONLY),
        (errno.ENOSPC, StorageKind.DISK_FULL),
        (errno.EFBIG, StorageKind.FILE_TOO_LARGE),
        (errno.EIO, StorageKind.OTHER),
    ],
)
def test_lmdb_failures_are_classified_by_what_the_file_system_said(
    code: int, kind: StorageKind
) -> None:
    as_lmdb = lmdb.Error(f"mdb_txn_commit: {os.strerror(code)}")
    as_os = OSError(code, os.strerror(code))
    assert storage_error(as_lmdb, "/x").kind is kind
    assert storage_error(as_os, "/x").kind is kind
    assert os.strerror(code) in storage_error(as_lmdb, "/x").detail


def test_a_data_dir_that_is_a_file_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError) as raised:
        LmdbEventLog.open(blocker)
    assert raised.value.kind is StorageKind.NOT_A_DIRECTORY
