"""graph_ingest's queue on disk (contract §1.3, §8.7): names, atomic replacement, the sidecar
pairing, status's order, counts and session cursors, and graph_stats counting the same
documents."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from graphmem.graph_home_files import home_facts
from graphmem.intake import (
    MAX_CONTENT_BYTES,
    MAX_PENDING_LISTED,
    IngestError,
    check_meta,
    queue_content,
    queue_file,
    queue_status,
)

PENDING = Path("ingest") / "pending"
COMPLETED = Path("ingest") / "completed"


def meta(**fields: object) -> bytes:
    return check_meta(dict(fields))


def place(folder: Path, name: str, body: bytes, mtime: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body)
    os.utime(folder / name, (mtime, mtime))


@pytest.mark.parametrize(
    "name",
    [
        "../x.md",
        "a/b.md",
        "a\\b.md",
        "..md",
        "x..md",
        ".hidden.md",
        " x.md",
        "x.md ",
        "x.pdf",
        "x.MD",
        "x",
        ".md",
        "x.meta.json",
        "x\n.md",
        "x\x00.md",
        "a" * 250 + ".md",
    ],
)
def test_a_name_that_is_not_a_plain_document_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(IngestError, match=r"give a plain file name"):
        queue_content(tmp_path, name, b"text", None)
    assert not (tmp_path / "ingest").exists() or not any((tmp_path / PENDING).iterdir())


def test_content_is_queued_with_its_sidecar_and_folders_created(tmp_path: Path) -> None:
    queued = queue_content(tmp_path, "notes.md", b"# Notes", meta(source="chat", author="ana"))
    assert queued.destination == (tmp_path / PENDING / "notes.md").absolute()
    assert queued.meta_written
    assert queued.destination.read_bytes() == b"# Notes"
    sidecar = msgspec.json.decode((tmp_path / PENDING / "notes.md.meta.json").read_bytes())
    assert sidecar == {"source": "chat", "author": "ana"}
    assert sorted(p.name for p in (tmp_path / "ingest").iterdir()) == ["pending"]  # no temps


def test_queueing_a_pending_name_again_replaces_it_and_drops_a_stale_sidecar(
    tmp_path: Path,
) -> None:
    queue_content(tmp_path, "notes.md", b"old", meta(source="chat"))
    queued = queue_content(tmp_path, "notes.md", b"new", None)
    assert not queued.meta_written
    assert queued.destination.read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / PENDING).iterdir()) == ["notes.md"]


def test_inline_content_is_capped_at_two_megabytes(tmp_path: Path) -> None:
    queue_content(tmp_path, "big.txt", b"x" * MAX_CONTENT_BYTES, None)
    with pytest.raises(IngestError, match="2,097,152"):
        queue_content(tmp_path, "bigger.txt", b"x" * (MAX_CONTENT_BYTES + 1), None)
    assert not (tmp_path / PENDING / "bigger.txt").exists()


def test_a_file_is_copied_under_its_own_name(tmp_path: Path) -> None:
    source = tmp_path / "src" / "report.txt"
    source.parent.mkdir()
    source.write_bytes(b"r" * 3_000_000)  # larger than a copy chunk
    queued = queue_file(tmp_path / "home", str(source), None)
    assert queued.file == "report.txt"
    assert queued.destination.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo", "relative", "extension"])
def test_a_file_path_that_is_no_document_file_is_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "doc.md"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    given = {"relative": "doc.md", "extension": str(tmp_path / "doc.pdf")}.get(kind, str(target))
    with pytest.raises(IngestError):
        queue_file(tmp_path / "home", given, None)
    assert not (tmp_path / "home" / PENDING).exists()


def test_a_device_is_refused() -> None:
    with pytest.raises(IngestError):
        queue_file(Path("/nonexistent-home"), "/dev/zero", None)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"source": 3}, "meta.source must be a string"),
        ({"through": "yesterday"}, "through"),
        ({"topic_hints": "x"}, "topic_hints"),
        ({"topic_hints": [1]}, "topic_hints"),
        ({"weight_override": 1.5}, "between 0 and 1"),
        ({"weight_override": True}, "weight_override"),
        ({"x": "y" * (1024 * 1024)}, "the limit"),
    ],
)
def test_meta_keys_with_a_type_are_checked(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(IngestError, match=problem):
        check_meta(fields)


def test_other_meta_keys_are_kept_as_given() -> None:
    assert msgspec.json.decode(meta(weight_override=0.5, extra={"a": [1]})) == {
        "weight_override": 0.5,
        "extra": {"a": [1]},
    }


def test_status_of_an_empty_home_is_empty(tmp_path: Path) -> None:
    assert queue_status(tmp_path) == {
        "pending": [],
        "recently_completed": [],
        "pending_count": 0,
        "completed_count": 0,
        "session_cursors": {},
    }


def test_status_lists_pending_oldest_first_and_the_newest_five_completed(tmp_path: Path) -> None:
    place(tmp_path / PENDING, "b.md", b"x" * 2150, 2_000)
    place(tmp_path / PENDING, "a.md", b"y", 1_000)
    place(tmp_path / PENDING, "a.md.meta.json", b"{}", 500)
    place(tmp_path / PENDING, "c.md.error", b"failed", 500)
    for n in range(7):
        place(tmp_path / COMPLETED, f"done-{n}.md", b"d", 3_000 + n)
    place(tmp_path / COMPLETED, "done-6.md.meta.json", b'{"entities": 4, "edges_created": 2}', 1)
    place(tmp_path / COMPLETED, "done-5.md.meta.json", b'{"entities_extracted": "many"}', 1)
    status = queue_status(tmp_path)
    assert status["pending"] == [
        {
            "file": "a.md",
            "queued_at": "1970-01-01T00:16:40.000Z",
            "size": "0.0 KB",
            "size_bytes": 1,
        },
        {
            "file": "b.md",
            "queued_at": "1970-01-01T00:33:20.000Z",
            "size": "2.1 KB",
            "size_bytes": 2150,
        },
    ]
    completed = status["recently_completed"]
    assert [c["file"] for c in completed] == [f"done-{n}.md" for n in (6, 5, 4, 3, 2)]
    assert (completed[0]["entities"], completed[0]["edges"]) == (4, 2)
    assert (completed[1]["entities"], completed[1]["edges"]) == (None, None)
    assert (status["pending_count"], status["completed_count"]) == (2, 7)


def test_counts_are_never_capped_and_agree_with_graph_stats(tmp_path: Path) -> None:
    for n in range(MAX_PENDING_LISTED + 5):
        place(tmp_path / PENDING, f"p-{n:03}.txt", b"p", 1_000 + n)
    for n in range(12):
        place(tmp_path / COMPLETED, f"c-{n}.txt", b"c", 1_000)
    place(tmp_path / PENDING, "p-000.txt.error", b"", 1)
    status = queue_status(tmp_path)
    assert len(status["pending"]) == MAX_PENDING_LISTED
    assert status["pending"][0]["file"] == "p-000.txt"
    facts = home_facts(tmp_path)
    assert (status["pending_count"], status["completed_count"]) == (MAX_PENDING_LISTED + 5, 12)
    assert (facts.pending_ingest_docs, facts.total_ingested_docs) == (MAX_PENDING_LISTED + 5, 12)


def test_session_cursors_hold_each_cloud_sessions_latest_through(tmp_path: Path) -> None:
    def sidecar(folder: Path, name: str, **fields: object) -> None:
        place(folder, name + ".meta.json", msgspec.json.encode(fields), 1)

    cloud = "claude-code-cloud"
    sidecar(
        tmp_path / COMPLETED,
        "s1-a.md",
        source=cloud,
        session_id="s1",
        through="2026-11-01T10:00:00Z",
        last_event_id="e1",
    )
    sidecar(
        tmp_path / PENDING,
        "s1-b.md",
        source=cloud,
        session_id="s1",
        through="2026-11-01T12:00:00+02:00",
        last_event_id="e2",
    )  # 10:00Z: a tie, by name
    sidecar(
        tmp_path / PENDING,
        "s1-c.md",
        source=cloud,
        session_id="s1",
        through="2026-11-01T09:00:00Z",
        last_event_id="e0",
    )
    sidecar(tmp_path / PENDING, "s2.md", source=cloud, session_id="s2", through="2026-11-02")
    sidecar(tmp_path / PENDING, "local.md", source="chat", session_id="s3", through="2026-11-02")
    sidecar(tmp_path / PENDING, "bad.md", source=cloud, session_id="s4", through="never")
    place(tmp_path / PENDING, "broken.md.meta.json", b"{not json", 1)
    assert queue_status(tmp_path)["session_cursors"] == {
        "s1": {"through": "2026-11-01T12:00:00+02:00", "last_event_id": "e2", "file": "s1-b.md"},
        "s2": {"through": "2026-11-02", "last_event_id": None, "file": "s2.md"},
    }


def test_a_copy_that_fails_midway_leaves_no_sidecar_and_no_temporary_file(
    tmp_path: Path,
) -> None:
    """/proc/self/mem opens as a regular file and fails on the first read (EIO): the copy
    fails after the queue's folders exist, and nothing may be left for the processor."""
    unreadable = tmp_path / "unreadable.md"
    unreadable.symlink_to("/proc/self/mem")
    home = tmp_path / "home"
    with pytest.raises(IngestError, match="cannot read file_path"):
        queue_file(home, str(unreadable), meta(source="chat"))
    assert sorted(p.name for p in (home / "ingest").iterdir()) == ["pending"]
    assert list((home / PENDING).iterdir()) == []
