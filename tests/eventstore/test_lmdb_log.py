"""What only the LMDB log does: persistence, node identity, a shared env, map growth, syncing."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest

from eventstore import keys
from eventstore.events import EntityCreated, ObservationAdded
from eventstore.hlc import HybridLogicalClock, stamp_of
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability, LogError, LogTransaction
from tests.eventstore.backends import SteppingClock


def created(*names: str) -> list[EntityCreated]:
    return [EntityCreated(name=name, entity_type="thing") for name in names]


def observations(count: int, size: int = 1000) -> list[ObservationAdded]:
    return [ObservationAdded(entity="e", content=f"{i:08d}" + "x" * size) for i in range(count)]


class RecordingEnv:
    """Delegates to a real environment and counts the syncs asked of it."""

    def __init__(self, env: lmdb.Environment) -> None:
        self._env = env
        self.syncs = 0
        self.synced = threading.Event()

    def sync(self, force: bool = False) -> None:
        self._env.sync(force)
        self.syncs += 1
        self.synced.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


@pytest.fixture
def recorded_envs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RecordingEnv]]:
    envs: list[RecordingEnv] = []
    real_open = lmdb.open

    def recording_open(*args: Any, **kwargs: Any) -> RecordingEnv:
        env = RecordingEnv(real_open(*args, **kwargs))
        envs.append(env)
        return env

    monkeypatch.setattr(lmdb, "open", recording_open)
    yield envs


def test_reopening_keeps_node_id_positions_and_the_last_clock_stamp(tmp_path: Path) -> None:
    ahead = HybridLogicalClock(now_ms=SteppingClock(9_000_000))
    with LmdbEventLog.open(tmp_path, clock=ahead) as log:
        node_id = log.node_id
        last = log.append(created("a", "b"))[-1]

    behind = HybridLogicalClock(now_ms=SteppingClock(1_000))
    with LmdbEventLog.open(tmp_path, clock=behind) as log:
        assert log.node_id == node_id
        assert log.last_position() == 2
        assert log.last_origin_seq(node_id) == 2
        nxt = log.append(created("c"))[0]

    assert (nxt.position, nxt.origin_seq, nxt.tx) == (3, 3, 3)
    assert last.hlc == stamp_of(9_000_000)
    assert nxt.hlc == stamp_of(9_000_000, 1)


def test_a_node_id_override_is_used_but_never_stored(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        stored = log.node_id
    with LmdbEventLog.open(tmp_path, node_id="laptop-2") as log:
        assert log.node_id == "laptop-2"
        envelope = log.append(created("a"))[0]
    with LmdbEventLog.open(tmp_path) as log:
        assert log.node_id == stored
        assert log.read_origin("laptop-2") == [envelope]
        assert log.append(created("b"))[0].origin_seq == 1


def test_an_override_on_a_new_dir_still_stores_a_generated_node_id(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path, node_id="first") as log:
        log.append(created("a"))
    with LmdbEventLog.open(tmp_path) as log:
        assert log.node_id != "first"
        assert len(log.node_id) == 16


@pytest.mark.parametrize("node_id", ["", "x" * 256])
def test_an_unusable_node_id_is_refused_and_releases_the_env(tmp_path: Path, node_id: str) -> None:
    with pytest.raises(LogError, match="node id"):
        LmdbEventLog.open(tmp_path, node_id=node_id)
    with LmdbEventLog.open(tmp_path) as log:
        assert log.last_position() == 0


def test_a_log_written_in_an_unknown_format_is_refused(tmp_path: Path) -> None:
    LmdbEventLog.open(tmp_path).close()
    env = lmdb.open(str(tmp_path), max_dbs=8)
    with env.begin(write=True, db=env.open_db(b"meta")) as txn:
        txn.put(keys.META_FORMAT, b"99")
    env.close()

    with pytest.raises(LogError, match="unknown log format"):
        LmdbEventLog.open(tmp_path)


def test_opening_one_dir_twice_in_a_process_shares_the_environment(tmp_path: Path) -> None:
    first = LmdbEventLog.open(tmp_path)
    second = LmdbEventLog.open(tmp_path / "." / "")

    assert first.env is second.env
    first.append(created("a"))
    assert [e.event for e in second.read_from(1)] == created("a")

    first.close()
    second.append(created("b"))
    assert second.last_position() == 2
    second.close()
    with LmdbEventLog.open(tmp_path) as third:
        assert third.last_position() == 2


def test_a_transaction_cannot_nest_through_a_second_log_on_the_same_dir(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as first, LmdbEventLog.open(tmp_path) as second:
        with pytest.raises(LogError, match="not reentrant"):
            first.transact(lambda txn: second.append(created("nested")))
        assert second.append(created("later"))[0].position == 1


def test_the_map_grows_from_a_tiny_size_to_hold_megabytes(tmp_path: Path) -> None:
    attempts: list[int] = []

    def one_huge_batch(txn: LogTransaction) -> None:
        attempts.append(txn.attempt)
        txn.append(observations(1500))  # 1.5 MB in one transaction: bigger than the map

    with LmdbEventLog.open(tmp_path, map_size=64 * 1024) as log:
        log.transact(one_huge_batch)
        for _ in range(30):
            log.append(observations(50))
        assert log.env.info()["map_size"] > 3 * 1024 * 1024
        contents = [e.event.content for e in log.read_from(1)]  # type: ignore[union-attr]

    assert attempts == list(range(len(attempts)))
    assert len(attempts) > 1
    assert contents == [o.content for o in observations(1500) + observations(50) * 30]


def test_a_transaction_that_swallows_map_full_is_still_rerun(tmp_path: Path) -> None:
    attempts: list[int] = []

    def swallowing(txn: LogTransaction) -> None:
        attempts.append(txn.attempt)
        with contextlib.suppress(lmdb.MapFullError):
            txn.append(observations(500))

    with LmdbEventLog.open(tmp_path, map_size=64 * 1024) as log:
        log.transact(swallowing)
        assert log.last_position() == 500

    assert len(attempts) > 1


def test_a_half_read_iterator_survives_a_map_resize_in_the_same_process(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path, map_size=64 * 1024) as log:
        log.append(observations(10_000, size=10))
        reader = log.read_from(1)
        head = [next(reader) for _ in range(5_000)]
        size_before = log.env.info()["map_size"]
        log.append(observations(2_000))
        assert log.env.info()["map_size"] > size_before
        rest = list(reader)

    assert [e.position for e in head + rest] == list(range(1, 10_001))


def test_positions_sort_numerically_past_one_and_two_byte_boundaries(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        for _ in range(7):
            log.append(created(*(f"n{i}" for i in range(10_000))))

        assert [e.position for e in log.read_from(250)][:10] == list(range(250, 260))
        around_256 = [e.position for e in log.read_from(254)][:4]
        around_65536 = [e.position for e in log.read_from(65_534)][:4]
        assert [e.origin_seq for e in log.read_origin(log.node_id, 65_535, 65_537)] == [
            65_535,
            65_536,
            65_537,
        ]
        assert sum(1 for _ in log.read_from(1)) == 70_000

    assert around_256 == [254, 255, 256, 257]
    assert around_65536 == [65_534, 65_535, 65_536, 65_537]


def test_strict_mode_fsyncs_every_commit(tmp_path: Path, recorded_envs: list[RecordingEnv]) -> None:
    with LmdbEventLog.open(tmp_path, durability=Durability.STRICT) as log:
        assert log.env.flags()["sync"] is True
        assert log.env.flags()["metasync"] is True
        for i in range(5):
            log.append(created(f"e{i}"))
        assert recorded_envs[0].syncs == 0  # LMDB itself syncs in commit; no timer, no extra
    with LmdbEventLog.open(tmp_path) as log:
        assert log.last_position() == 5


def test_a_strict_log_on_an_env_opened_everysec_syncs_after_each_commit(
    tmp_path: Path, recorded_envs: list[RecordingEnv]
) -> None:
    relaxed = LmdbEventLog.open(tmp_path, sync_interval=3600)
    strict = LmdbEventLog.open(tmp_path, durability=Durability.STRICT)
    try:
        strict.append(created("a"))
        strict.append(created("b"))
        assert recorded_envs[0].syncs == 2
    finally:
        strict.close()
        relaxed.close()


def test_everysec_syncs_on_its_timer_after_a_commit(
    tmp_path: Path, recorded_envs: list[RecordingEnv]
) -> None:
    with LmdbEventLog.open(tmp_path, sync_interval=0.01) as log:
        env = recorded_envs[0]
        assert log.env.flags()["sync"] is False
        log.append(created("a"))
        assert env.synced.wait(timeout=10)


def test_close_stops_the_timer_and_syncs(tmp_path: Path, recorded_envs: list[RecordingEnv]) -> None:
    log = LmdbEventLog.open(tmp_path, sync_interval=3600)
    log.append(created("a"))
    timers = [t for t in threading.enumerate() if t.name.startswith("graphmem-lmdb-sync")]
    assert len(timers) == 1
    assert recorded_envs[0].syncs == 0

    log.close()

    assert recorded_envs[0].syncs == 1
    timers[0].join(timeout=10)
    assert not timers[0].is_alive()
    log.close()  # closing twice is harmless


def test_sync_forces_a_flush(tmp_path: Path, recorded_envs: list[RecordingEnv]) -> None:
    with LmdbEventLog.open(tmp_path, sync_interval=3600) as log:
        log.append(created("a"))
        log.sync()
        assert recorded_envs[0].syncs == 1
