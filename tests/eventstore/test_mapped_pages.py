"""The log hands its mapped pages back as it grows, so a long-running writer's resident set
does not keep every page it ever appended (Linux; elsewhere nothing happens)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eventstore import lmdb_env
from eventstore.events import ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
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


def test_a_path_that_is_not_mapped_releases_nothing(tmp_path: Path) -> None:
    assert release_mapped_pages(tmp_path / "nothing.mdb") == 0
