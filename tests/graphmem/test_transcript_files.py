"""Finding and streaming transcripts (contract §8.16): a session id never leads out of the
transcripts folder (not by `..`, not by a symlink), file paths are absolute .jsonl regular
files, and an over-long line is skipped without being held."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphmem.intake import (
    Page,
    TranscriptError,
    find_session,
    read_transcript,
    transcript_files,
    transcript_path,
)

LINE = b'{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}\n'


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    (root / "-home-ana-proj").mkdir(parents=True)
    (root / "-home-ana-proj" / "abc-123.jsonl").write_bytes(LINE)
    return root


def test_a_session_is_found_one_folder_down(transcripts: Path) -> None:
    assert (
        find_session(transcripts, "abc-123")
        == (transcripts / "-home-ana-proj" / "abc-123.jsonl").resolve()
    )


@pytest.mark.parametrize(
    "session_id",
    ["../abc-123", "..", "a/b", "a\\b", "abc 123", "", "x..y", "/etc/passwd", "a" * 201],
)
def test_a_session_id_that_is_not_one_is_refused(transcripts: Path, session_id: str) -> None:
    with pytest.raises(TranscriptError, match="session_id"):
        find_session(transcripts, session_id)


def test_an_unknown_session_is_not_found(transcripts: Path) -> None:
    with pytest.raises(TranscriptError, match="Transcript not found"):
        find_session(transcripts, "nope")


def test_a_project_folder_linking_outside_is_refused(transcripts: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(LINE)
    (transcripts / "escape").symlink_to(outside)
    with pytest.raises(TranscriptError, match="links outside"):
        find_session(transcripts, "secret")


def test_a_transcript_file_linking_outside_is_refused(transcripts: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.jsonl").write_bytes(LINE)
    (transcripts / "-home-ana-proj" / "secret.jsonl").symlink_to(tmp_path / "secret.jsonl")
    with pytest.raises(TranscriptError, match="links outside"):
        find_session(transcripts, "secret")


def test_a_link_that_stays_inside_is_followed(transcripts: Path) -> None:
    (transcripts / "alias").symlink_to(transcripts / "-home-ana-proj")
    os.utime(transcripts / "-home-ana-proj" / "abc-123.jsonl")
    assert find_session(transcripts, "abc-123").name == "abc-123.jsonl"


def test_a_transcripts_folder_that_is_missing_says_which_setting(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="GRAPHMEM_TRANSCRIPTS_DIR"):
        find_session(tmp_path / "none", "abc")


@pytest.mark.parametrize("given", ["relative/s.jsonl", "/tmp/s.json", "s.jsonl"])
def test_a_file_path_must_be_an_absolute_jsonl_path(given: str) -> None:
    with pytest.raises(TranscriptError):
        transcript_path(given)


def test_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TranscriptError, match="not a regular file"):
        read_transcript(fifo, Page())
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(TranscriptError, match="not a regular file"):
        read_transcript(folder, Page())


def test_an_over_long_line_is_skipped_with_a_warning_and_the_next_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript_files, "MAX_LINE_BYTES", 100)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"user","x":"' + b"y" * 500 + b'"}\n' + LINE + b"   \n" + LINE)
    reader = read_transcript(path, Page())
    assert reader.line_count == 3
    assert [m.text for m in reader.messages] == ["hi", "hi"]
    assert reader.warnings == ["Line 1: longer than 100 bytes, skipped"]
