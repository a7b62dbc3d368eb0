"""Finding and streaming a session transcript (contract §8.16) for the pure parser.

- A session id matches `^[A-Za-z0-9._-]+$` and holds no `..`; it is looked up as
  `<transcripts dir>/<project folder>/<session id>.jsonl`, one level down, never built into
  a path that could leave the folder. A candidate is resolved (symlinks followed) and used
  only if it is a regular file inside the resolved transcripts folder: a project folder or
  file that links outside is ignored. Several projects holding the id: the most recently
  modified file wins (the one being written), then the project name.
- A file path is absolute (after `~`), ends `.jsonl` and names a regular file; it may be
  anywhere the server can read (the caller names it, as graph_ingest's file_path).
- Opened without blocking and checked to be a regular file on the open descriptor, so a FIFO
  or device never hangs or floods the read. Read line by line; a line longer than
  MAX_LINE_BYTES is skipped with a warning without being held in memory.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from graphmem.intake.transcript import Page, TranscriptReader

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_SESSION_ID_CHARS",
    "TranscriptError",
    "find_session",
    "read_transcript",
    "transcript_path",
]

SESSION_ID = re.compile(r"[A-Za-z0-9._-]+")
MAX_SESSION_ID_CHARS = 200
# Claude Code writes a pasted image or a large tool output into one line; 32 MiB holds any
# such line seen in practice, and bounds what one line can make the server hold.
MAX_LINE_BYTES = 32 * 1024 * 1024


class TranscriptError(ValueError):
    """The transcript cannot be read; the message says why and what to do."""


def check_session_id(session_id: str) -> None:
    if not SESSION_ID.fullmatch(session_id) or ".." in session_id:
        raise TranscriptError(
            f"session_id {session_id!r} is not a session id: use only letters, digits, '.', "
            "'_' and '-', without '..' (the transcript's file name without .jsonl)"
        )
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise TranscriptError(
            f"session_id is {len(session_id)} characters long; at most {MAX_SESSION_ID_CHARS}"
        )


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def find_session(transcripts_dir: Path, session_id: str) -> Path:
    """The transcript of `session_id` one level below `transcripts_dir` (resolved)."""
    check_session_id(session_id)
    try:
        root = transcripts_dir.resolve(strict=True)
        projects = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    except OSError as problem:
        raise TranscriptError(
            f"cannot read the transcripts folder {transcripts_dir} ({problem.strerror}); "
            "set GRAPHMEM_TRANSCRIPTS_DIR to the folder holding one folder per project"
        ) from None
    found: list[tuple[float, str, Path]] = []
    escaped = False
    for project in projects:
        candidate = root / project / f"{session_id}.jsonl"
        try:
            resolved = candidate.resolve(strict=True)
            status = resolved.stat()
        except OSError:
            continue
        if not _inside(resolved, root):
            escaped = True
            continue
        if stat.S_ISREG(status.st_mode):
            found.append((-status.st_mtime, project, resolved))
    if not found:
        outside = " (a match that links outside the transcripts folder was refused)"
        raise TranscriptError(
            f"Transcript not found: no <project>/{session_id}.jsonl in {transcripts_dir}"
            f"{outside if escaped else ''}; check the session id, or give file_path"
        )
    return min(found)[2]


def transcript_path(file_path: str) -> Path:
    """A caller's `file_path`, checked: absolute after `~`, a `.jsonl` name."""
    path = Path(os.path.expanduser(file_path))
    if not path.is_absolute():
        raise TranscriptError(
            f"file_path {file_path!r} is not absolute; give the full path of the .jsonl file"
        )
    if path.suffix != ".jsonl":
        raise TranscriptError(f"file_path {file_path!r} is not a .jsonl file")
    return path


def _open(path: Path) -> int:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TranscriptError(f"Transcript not found: {path}") from None
    except OSError as problem:
        raise TranscriptError(f"cannot open {path} ({problem.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise TranscriptError(f"{path} is not a regular file; give a .jsonl transcript")
    return descriptor


def _lines(descriptor: int, reader: TranscriptReader) -> Iterator[bytes]:
    """The file's lines; an over-long one is reported to `reader` and read past in pieces."""
    with os.fdopen(descriptor, "rb") as handle:
        while True:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
                yield line
                continue
            while line and not line.endswith(b"\n"):
                line = handle.readline(MAX_LINE_BYTES)
            reader.skip_line(f"longer than {MAX_LINE_BYTES:,} bytes")


def read_transcript(path: Path, page: Page) -> TranscriptReader:
    """The whole file folded through the parser (blocking I/O: run it on a worker thread)."""
    reader = TranscriptReader(page)
    for line in _lines(_open(path), reader):
        reader.feed(line)
    return reader
