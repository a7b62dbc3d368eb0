"""The checkpoint store contract, run against every backend, and what it keeps."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.checkpoints import Retention, encode_record
from eventstore.events import EntityCreated, encode_envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, EventLog, LogError
from tests.checkpoint_records import put_raw_record, raw_record
from tests.eventstore.backends import BACKENDS, open_backend


@pytest.fixture(params=BACKENDS)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    """A log of the parametrized backend holding ten events."""
    opened = open_backend(request.param, tmp_path / "log")
    for i in range(10):
        opened.append([EntityCreated(name=f"e{i}", entity_type="t")])
    yield opened
    opened.close()


def graph_at(position: int, payload: bytes = b"state", version: int = 1) -> Checkpoint:
    return Checkpoint("graph", version, position, payload)


def test_a_saved_checkpoint_loads_back_whole(log: EventLog) -> None:
    written = log.checkpoints.save(graph_at(7, b"\x00snapshot\xff"))

    assert log.checkpoints.load("graph", 1) == graph_at(7, b"\x00snapshot\xff")
    assert written > len(b"\x00snapshot\xff")


def test_the_newest_at_or_before_a_position_is_loaded(log: EventLog) -> None:
    log.checkpoints.save(graph_at(2, b"two"), graph_at(5, b"five"), graph_at(9, b"nine"))

    assert log.checkpoints.load("graph", 1) == graph_at(9, b"nine")
    assert log.checkpoints.load("graph", 1, at_or_before=8) == graph_at(5, b"five")
    assert log.checkpoints.load("graph", 1, at_or_before=5) == graph_at(5, b"five")
    assert log.checkpoints.load("graph", 1, at_or_before=1) is None


def test_projections_keep_their_checkpoints_apart(log: EventLog) -> None:
    log.checkpoints.save(graph_at(4, b"g"), Checkpoint("schemas", 1, 4, b"s"))
    log.checkpoints.save(Checkpoint("graph2", 1, 6, b"other"))

    assert log.checkpoints.load("graph", 1) == graph_at(4, b"g")
    assert log.checkpoints.load("schemas", 1) == Checkpoint("schemas", 1, 4, b"s")
    assert [(e.name, e.position) for e in log.checkpoints.entries()] == [
        ("graph", 4),
        ("graph2", 6),
        ("schemas", 4),
    ]


def test_a_checkpoint_at_position_zero_is_the_empty_start(log: EventLog) -> None:
    log.checkpoints.save(graph_at(0, b""))

    assert log.checkpoints.load("graph", 1) == graph_at(0, b"")


def test_another_projection_version_is_ignored(log: EventLog) -> None:
    log.checkpoints.save(graph_at(3, b"v1"), graph_at(8, b"v2", version=2))

    assert log.checkpoints.load("graph", 1) == graph_at(3, b"v1")
    assert log.checkpoints.load("graph", 2) == graph_at(8, b"v2", version=2)
    assert log.checkpoints.load("graph", 3) is None


def test_entries_list_what_is_stored_and_delete_removes_it(log: EventLog) -> None:
    log.checkpoints.save(graph_at(2), graph_at(6), Checkpoint("schemas", 4, 6, b"s"))

    entries = log.checkpoints.entries()

    assert [(e.name, e.version, e.position, e.problem) for e in entries] == [
        ("graph", 1, 2, None),
        ("graph", 1, 6, None),
        ("schemas", 4, 6, None),
    ]
    assert log.checkpoints.delete("graph", 2) == 1
    assert log.checkpoints.delete("graph", 2) == 0
    assert log.checkpoints.delete("schemas") == 1
    assert [(e.name, e.position) for e in log.checkpoints.entries()] == [("graph", 6)]


def test_saving_past_the_logs_end_is_refused_and_saves_nothing(log: EventLog) -> None:
    with pytest.raises(LogError, match="past the log's end"):
        log.checkpoints.save(graph_at(3), graph_at(11))

    assert log.checkpoints.entries() == []


def test_a_flipped_byte_is_detected_and_an_older_checkpoint_used(
    log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    log.checkpoints.save(graph_at(3, b"older"), graph_at(8, b"newer payload"))
    record = bytearray(raw_record(log, "graph", 8) or b"")
    record[-3] ^= 0x01
    put_raw_record(log, "graph", 8, bytes(record))

    with caplog.at_level(logging.WARNING, logger="eventstore.checkpoints"):
        found = log.checkpoints.load("graph", 1)

    assert found == graph_at(3, b"older")
    assert "checkpoint_ignored: graph at 8: checksum mismatch" in caplog.text


@pytest.mark.parametrize("keep", [0, 10, 40, -1])
def test_a_truncated_record_is_ignored(log: EventLog, keep: int) -> None:
    log.checkpoints.save(graph_at(8, b"a payload of some length"))
    record = raw_record(log, "graph", 8) or b""
    put_raw_record(log, "graph", 8, record[:keep])

    assert log.checkpoints.load("graph", 1) is None
    assert log.checkpoints.entries()[0].problem is not None


def test_a_record_from_another_log_is_ignored(log: EventLog) -> None:
    tip = _tip_of(log, 5)
    put_raw_record(log, "graph", 5, encode_record(graph_at(5), log_id="elsewhere", tip=tip))

    assert log.checkpoints.load("graph", 1) is None
    assert "written for log 'elsewhere'" in (log.checkpoints.entries()[0].problem or "")


def test_a_record_covering_a_different_event_is_ignored(log: EventLog) -> None:
    log_id = _log_id(log)
    put_raw_record(log, "graph", 5, encode_record(graph_at(5), log_id=log_id, tip=12345))

    assert log.checkpoints.load("graph", 1) is None


def test_a_record_past_the_logs_end_is_ignored(
    log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    log_id = _log_id(log)
    put_raw_record(log, "graph", 50, encode_record(graph_at(50), log_id=log_id, tip=0))

    with caplog.at_level(logging.WARNING, logger="eventstore.checkpoints"):
        assert log.checkpoints.load("graph", 1) is None
    assert "past the log's end 10" in caplog.text


def test_a_record_stored_under_another_position_is_ignored(log: EventLog) -> None:
    log.checkpoints.save(graph_at(4))
    put_raw_record(log, "graph", 6, raw_record(log, "graph", 4) or b"")
    log.checkpoints.delete("graph", 4)

    assert log.checkpoints.load("graph", 1) is None


def test_saving_with_retention_keeps_the_newest_and_one_per_interval(log: EventLog) -> None:
    every = Retention(spacing=3, keep=10)
    for position in (1, 2, 4, 5, 7, 9, 10):
        log.checkpoints.save(graph_at(position), retention=every)

    assert [e.position for e in log.checkpoints.entries("graph")] == [1, 4, 7, 9, 10]


def test_retention_prunes_older_versions_and_leaves_newer_ones(log: EventLog) -> None:
    log.checkpoints.save(graph_at(2, version=1), graph_at(3, version=3))
    put_raw_record(log, "graph", 4, b"garbage")

    log.checkpoints.save(graph_at(6, version=2), retention=Retention(spacing=1, keep=5))

    assert [(e.position, e.version) for e in log.checkpoints.entries("graph")] == [(3, 3), (6, 2)]


def test_a_checkpoint_survives_reopening_the_data_dir(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        log.append([EntityCreated(name="a", entity_type="t")])
        log.checkpoints.save(graph_at(1, b"kept"))

    with LmdbEventLog.open(tmp_path) as log:
        assert log.checkpoints.load("graph", 1) == graph_at(1, b"kept")


def test_a_checkpoint_of_a_process_node_id_belongs_to_the_data_dir(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path, node_id="first") as log:
        log.append([EntityCreated(name="a", entity_type="t")])
        log.checkpoints.save(graph_at(1, b"kept"))

    with LmdbEventLog.open(tmp_path, node_id="second") as log:
        assert log.checkpoints.load("graph", 1) == graph_at(1, b"kept")


def test_a_payload_bigger_than_the_map_grows_it(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 16_384  # 4 MiB
    with LmdbEventLog.open(tmp_path, map_size=1 << 20) as log:
        log.append([EntityCreated(name="a", entity_type="t")])

        log.checkpoints.save(graph_at(1, payload))

        assert log.checkpoints.load("graph", 1) == graph_at(1, payload)
        assert log.env.info()["map_size"] > len(payload)


# --- what retention keeps -------------------------------------------------------------------


def test_retention_keeps_the_first_of_each_interval_and_the_newest() -> None:
    assert Retention(spacing=100, keep=10).kept([50, 120, 150, 199, 230, 260]) == [
        50,
        120,
        230,
        260,
    ]


def test_retention_thins_evenly_down_to_its_cap() -> None:
    positions = [100 * i for i in range(1, 21)]

    kept = Retention(spacing=100, keep=5).kept(positions)

    assert len(kept) == 5
    assert kept[-1] == 2000
    gaps = [b - a for a, b in zip([0, *kept], kept, strict=False)]
    assert max(gaps) <= 2 * 2000 // 5


def test_retention_of_nothing_is_nothing() -> None:
    assert Retention().kept([]) == []
    with pytest.raises(ValueError, match="at least 1"):
        Retention(spacing=0)


# --- helpers --------------------------------------------------------------------------------


def _log_id(log: EventLog) -> str:
    if isinstance(log, LmdbEventLog):
        return log._require_open().stored_node_id
    return log.node_id


def _tip_of(log: EventLog, position: int) -> int:
    """What a genuine record at `position` carries: the crc32 of the log's record there."""
    return zlib.crc32(encode_envelope(next(log.read_from(position))))
