"""graph_export's files (contract §8.18): names, labels, never overwriting, retention."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.tools.graph_export import backup_name, sanitise_label, write_backup

NOW = 1_767_225_600_000 + 3_723_456  # 2026-01-01T01:02:03.456Z


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Pre Prune!", "Pre-Prune"),
        ("  weekly  ", "weekly"),
        ("a/../b", "a-b"),
        ("été", "t"),
        ("!!!", ""),
        (None, ""),
        ("keep-dashes", "keep-dashes"),
    ],
)
def test_a_label_keeps_ascii_letters_digits_and_dashes(label: str | None, expected: str) -> None:
    assert sanitise_label(label) == expected


def test_a_backup_is_named_by_its_utc_second_and_label() -> None:
    assert backup_name(NOW, "") == "backup-2026-01-01T01-02-03.jsonl"
    assert backup_name(NOW, "Pre-Prune") == "backup-2026-01-01T01-02-03-Pre-Prune.jsonl"
    assert backup_name(NOW, "x", 3) == "backup-2026-01-01T01-02-03-x-3.jsonl"


def test_exports_in_the_same_second_never_overwrite_each_other(tmp_path: Path) -> None:
    written = [
        write_backup(tmp_path, [{"n": i}], now_ms=NOW, label="same", keep=30) for i in range(3)
    ]

    assert [w.path.name for w in written] == [
        "backup-2026-01-01T01-02-03-same.jsonl",
        "backup-2026-01-01T01-02-03-same-2.jsonl",
        "backup-2026-01-01T01-02-03-same-3.jsonl",
    ]
    assert [w.path.read_text() for w in written] == ['{"n":0}\n', '{"n":1}\n', '{"n":2}\n']
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(w.path.name for w in written)


def test_retention_keeps_the_newest_by_modification_time_then_name(tmp_path: Path) -> None:
    for name, mtime in (
        ("backup-a.jsonl", 100),
        ("backup-b.jsonl", 300),
        ("backup-c.jsonl", 200),
        ("backup-d.jsonl", 200),
        ("other.jsonl", 1),
    ):
        (tmp_path / name).write_text("{}\n")
        os.utime(tmp_path / name, (mtime, mtime))

    written = write_backup(tmp_path, [{"n": 1}], now_ms=NOW, label="", keep=3)

    assert (written.pruned, written.retained) == (2, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "backup-2026-01-01T01-02-03.jsonl",
        "backup-b.jsonl",
        "backup-d.jsonl",
        "other.jsonl",
    ]


def test_a_failed_write_leaves_neither_a_backup_nor_a_temporary_file(tmp_path: Path) -> None:
    def rows() -> Iterator[dict[str, int]]:
        yield {"n": 1}
        raise RuntimeError("disk trouble")

    with pytest.raises(RuntimeError):
        write_backup(tmp_path, rows(), now_ms=NOW, label="", keep=3)

    assert list(tmp_path.iterdir()) == []
