"""The log hands its mapped pages back as it grows, and after a large checkpoint is read or
written, so a long-running writer's resident set does not keep every page it ever appended,
nor a served store the snapshot it restored from (Linux; elsewhere nothing happens)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from eventstore import lmdb_env
from eventstore.events import EntityCreated, ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from eventstore.mapped_pages import release_mapped_pages

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _resident_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def _fill(log: LmdbEventLog, batches: int) -> None:
    for batch in range(batches):
        log.append([ObservationAdded(entity=f"e{batch}", content="x" * 400) for _ in range(100)])


def test_releasing_drops_the_pages_a_read_of_the_whole_log_made_resident(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        _fill(log, 200)  # about 8 MB of log
        assert sum(1 for _ in log.read_from(1)) == 20_000
        before = _resident_file_kib()

        released = release_mapped_pages(tmp_path / "data.mdb")

        assert released > 0
        assert before - _resident_file_kib() >= 4 * 1024  # most of the 8 MB touched
        assert sum(1 for _ in log.read_from(1)) == 20_000  # and everything still reads


def test_the_log_releases_its_pages_on_its_own_once_it_has_grown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lmdb_env, "_RELEASE_EVERY_BYTES", 1 << 20)
    monkeypatch.setattr(lmdb_env, "_RELEASE_CHECK_COMMITS", 1)
    released: list[int] = []
    original = lmdb_env.release_mapped_pages

    def spy(path: str) -> int:
        released.append(original(path))
        return released[-1]

    monkeypatch.setattr(lmdb_env, "release_mapped_pages", spy)
    with LmdbEventLog.open(tmp_path) as log:
        _fill(log, 100)  # about 4 MB: several releases of 1 MB of growth each

        assert len(released) >= 2 and all(size > 0 for size in released)
        assert sum(1 for _ in log.read_from(1)) == 10_000


def test_the_log_releases_its_pages_every_so_many_commits_whatever_grew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small writes into pages freed before (old checkpoints deleted) grow neither the file
    nor much of the log, yet touch pages: they are handed back every so many commits."""
    monkeypatch.setattr(lmdb_env, "_RELEASE_EVERY_BYTES", 1 << 30)  # growth never counts
    monkeypatch.setattr(lmdb_env, "_RELEASE_CHECK_COMMITS", 1)
    monkeypatch.setattr(lmdb_env, "_RELEASE_EVERY_COMMITS", 10)
    released: list[str] = []
    monkeypatch.setattr(lmdb_env, "release_mapped_pages", lambda path: released.append(path) or 0)
    with LmdbEventLog.open(tmp_path) as log:
        for i in range(25):
            log.append([EntityCreated(name=f"e{i}", entity_type="t")])
        assert len(released) == 2  # after the 10th and the 20th commit


def test_a_path_that_is_not_mapped_releases_nothing(tmp_path: Path) -> None:
    assert release_mapped_pages(tmp_path / "nothing.mdb") == 0


def _mapped_kib(data_file: Path) -> int:
    """Resident KiB of this process's mappings of `data_file`."""
    target, resident, inside = str(data_file.resolve()), 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            inside = len(fields) > 5 and fields[5] == target
        elif inside and fields and fields[0] == "Rss:":
            resident += int(fields[1])
    return resident


def test_a_large_checkpoint_read_or_written_leaves_none_of_its_pages_resident(
    tmp_path: Path,
) -> None:
    payload = random.Random(0).randbytes(6 << 20)  # a 50k graph's snapshot is ~15 MB
    with LmdbEventLog.open(tmp_path) as log:
        _fill(log, 1)
        log.checkpoints.save(Checkpoint("graph", 1, 100, payload))
        assert _mapped_kib(tmp_path / "data.mdb") < 1024

        loaded = log.checkpoints.load("graph", 1)

        assert loaded is not None and loaded.payload == payload  # a copy, still whole
        assert _mapped_kib(tmp_path / "data.mdb") < 1024  # the 6 MB read, handed back
        assert log.checkpoints.load("graph", 1) == loaded  # and it reads again
