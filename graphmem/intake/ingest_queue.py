"""graph_ingest's document queue under the graph home (contract §1.3, §8.7): queueing a
document (a copy of a server file, or inline content) with its sidecar, and the queue's status.

- Names: a plain basename ending `.md`, `.txt` or `.json` (lower case, as the processor
  matches them): no path separator, no `..`, no leading dot (hidden), no control character,
  no surrounding spaces, not itself a sidecar name (`*.meta.json`), and short enough that its
  sidecar's name fits a file system's 255 bytes.
- Queueing a name already pending replaces it (the contract: idempotent). Both files are
  first written whole to temporary files in `ingest/` (never scanned, same file system) and
  flushed to disk, so a copy that fails leaves nothing visible; then renamed over their names
  and the folder flushed: a reader sees the old file or the new one, never a part. The sidecar
  goes first (renamed, or an old one removed) and the document last, so a processor that
  picks up a document finds the sidecar that belongs to it.
- Status: counts are of every document (`graph_home_files.documents`, which graph_stats
  counts too); the pending list is the oldest MAX_PENDING_LISTED, the completed list the newest
  five; session cursors read every sidecar (each at most MAX_META_BYTES).
"""

from __future__ import annotations

import heapq
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from graphmem.graph_home_files import COMPLETED, META_SUFFIX, PENDING, documents
from projections.graph_time import TimeFormatError, format_ms, parse_time
from projections.json_depth import nesting_exceeds

__all__ = [
    "EXTENSIONS",
    "MAX_CONTENT_BYTES",
    "MAX_META_BYTES",
    "MAX_PENDING_LISTED",
    "IngestError",
    "Queued",
    "check_meta",
    "check_name",
    "queue_content",
    "queue_file",
    "queue_status",
]

EXTENSIONS = (".md", ".txt", ".json")
MAX_CONTENT_BYTES = 2 * 1024 * 1024
MAX_META_BYTES = 1024 * 1024
MAX_PENDING_LISTED = 200
RECENTLY_COMPLETED = 5
_CHUNK = 1024 * 1024
CLOUD_SOURCE = "claude-code-cloud"
_NAME_BYTES = 255 - len(META_SUFFIX)
_FORBIDDEN = re.compile(r"[/\\\x00-\x1f\x7f]")
_STRING_KEYS = ("source", "author", "date", "session_id", "through", "last_event_id")
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class IngestError(ValueError):
    """A queueing refused; the message says what to fix. Nothing was written."""


@dataclass(frozen=True)
class Queued:
    file: str
    destination: Path
    meta_written: bool


def check_name(name: str, where: str) -> None:
    """Refuse anything but a plain basename ending .md, .txt or .json."""
    found = _FORBIDDEN.search(name)
    if found is not None:
        shown = "a path separator" if found.group() in "/\\" else "a control character"
        raise IngestError(f"{where} {name!r} contains {shown}; give a plain file name")
    problem = None
    if ".." in name:
        problem = "contains '..'"
    elif name.startswith("."):
        problem = "starts with '.' (a hidden file)"
    elif name != name.strip():
        problem = "starts or ends with white space"
    elif name.endswith(META_SUFFIX):
        problem = f"ends with {META_SUFFIX}, the name of a sidecar"
    elif not name.endswith(EXTENSIONS) or name in EXTENSIONS:
        problem = "does not end with .md, .txt or .json (lower case)"
    elif len(name.encode("utf-8", "surrogatepass")) > _NAME_BYTES:
        problem = f"is longer than {_NAME_BYTES} bytes"
    if problem is not None:
        raise IngestError(f"{where} {name!r} {problem}; give a plain file name like notes.md")


def check_meta(meta: dict[str, Any]) -> bytes:
    """The sidecar's bytes; the typed keys checked, the others kept as given."""
    for key in _STRING_KEYS:
        if key in meta and not isinstance(meta[key], str):
            raise IngestError(f"meta.{key} must be a string")
    if "through" in meta:
        try:
            parse_time(meta["through"], "meta.through")
        except TimeFormatError as problem:
            raise IngestError(str(problem)) from None
    hints = meta.get("topic_hints")
    if "topic_hints" in meta and not (
        isinstance(hints, list) and all(isinstance(hint, str) for hint in hints)
    ):
        raise IngestError("meta.topic_hints must be a list of strings")
    if "weight_override" in meta:
        weight = meta["weight_override"]
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise IngestError("meta.weight_override must be a number between 0 and 1")
        if not 0 <= weight <= 1:
            raise IngestError(f"meta.weight_override is {weight!r}; it must be between 0 and 1")
    encoded = _encode(meta)
    if len(encoded) > MAX_META_BYTES:
        raise IngestError(
            f"meta is {len(encoded):,} bytes as JSON; the limit is {MAX_META_BYTES:,}"
        )
    return encoded


# --- writing ----------------------------------------------------------------------------------


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a platform that cannot open folders: the rename is still atomic
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _staged(staging: Path, chunks: Iterator[bytes]) -> Path:
    """The bytes of `chunks` in a new temporary file of `staging`, flushed to the disk."""
    handle, temporary = tempfile.mkstemp(prefix=".queue-", suffix=".tmp", dir=staging)
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Path(temporary)


# Two queueings of one name at once in this process must not pair one's sidecar with the
# other's document: the pair is published under this lock (two renames: quick).
_PAIR_LOCK = threading.Lock()


def _queue(home: Path, name: str, chunks: Iterator[bytes], meta: bytes | None) -> Queued:
    """Both files are staged whole first (the copy, the slow part that can fail, writes
    nothing visible), then published: the sidecar (or an old one removed), the document last."""
    staging = home / "ingest"
    pending = home / PENDING
    pending.mkdir(parents=True, exist_ok=True)
    sidecar = pending / (name + META_SUFFIX)
    destination = pending / name
    document = _staged(staging, chunks)
    staged_meta = None
    try:
        staged_meta = None if meta is None else _staged(staging, iter((meta,)))
        with _PAIR_LOCK:
            if staged_meta is not None:
                os.replace(staged_meta, sidecar)
            elif sidecar.exists() or sidecar.is_symlink():
                sidecar.unlink()
            os.replace(document, destination)
    finally:
        document.unlink(missing_ok=True)
        if staged_meta is not None:
            staged_meta.unlink(missing_ok=True)
    _sync_folder(pending)
    return Queued(name, destination.absolute(), meta is not None)


def queue_content(home: Path, file_name: str, content: bytes, meta: bytes | None) -> Queued:
    check_name(file_name, "file_name")
    if len(content) > MAX_CONTENT_BYTES:
        raise IngestError(
            f"content is {len(content):,} bytes of UTF-8; the limit is {MAX_CONTENT_BYTES:,} "
            "(2 MB): save it to a file on the server and queue it with file_path"
        )
    return _queue(home, file_name, iter((content,)), meta)


def _source(path: Path) -> int:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise IngestError(f"file_path {str(path)!r} does not exist") from None
    except OSError as problem:
        raise IngestError(f"cannot open file_path {str(path)!r} ({problem.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise IngestError(
            f"file_path {str(path)!r} is not a regular file (a folder or device); "
            "give a document file"
        )
    return descriptor


def queue_file(home: Path, file_path: str, meta: bytes | None) -> Queued:
    path = Path(os.path.expanduser(file_path))
    if not path.is_absolute():
        raise IngestError(f"file_path {file_path!r} is not absolute; give the full path")
    check_name(path.name, "the file_path's name")
    with os.fdopen(_source(path), "rb") as source:
        return _queue(home, path.name, _read(source, path), meta)


def _read(source: BinaryIO, path: Path) -> Iterator[bytes]:
    while True:
        try:
            chunk = source.read(_CHUNK)
        except OSError as problem:
            raise IngestError(f"cannot read file_path {str(path)!r} ({problem.strerror})") from None
        if not chunk:
            return
        yield chunk


# --- status -----------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_META_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_META_BYTES or nesting_exceeds(raw, 64):
        return None
    try:
        return _decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_count(sidecar: Any, *keys: str) -> int | None:
    if not isinstance(sidecar, dict):
        return None
    for key in keys:
        if key in sidecar:
            return _count(sidecar[key])
    return None


def _size(size: int) -> str:
    return f"{size / 1024:.1f} KB"


@dataclass
class _Scan:
    """The documents of one folder as (modified ms, name, size), counted as they go by."""

    home: Path
    folder: Path
    count: int = 0

    def __iter__(self) -> Iterator[tuple[int, str, int]]:
        for entry in documents(self.home, self.folder):
            try:
                status = entry.stat()
            except OSError:
                continue  # removed meanwhile
            self.count += 1
            yield status.st_mtime_ns // 1_000_000, entry.name, status.st_size


def _pending(home: Path) -> tuple[list[dict[str, Any]], int]:
    scan = _Scan(home, PENDING)
    oldest = heapq.nsmallest(MAX_PENDING_LISTED, scan)  # holds only what it keeps
    return [
        {"file": name, "queued_at": format_ms(moment), "size": _size(size), "size_bytes": size}
        for moment, name, size in oldest
    ], scan.count


def _completed(home: Path) -> tuple[list[dict[str, Any]], int]:
    scan = _Scan(home, COMPLETED)
    listed = []
    for moment, name, _ in heapq.nlargest(RECENTLY_COMPLETED, scan):
        sidecar = _read_json(home / COMPLETED / (name + META_SUFFIX))
        listed.append(
            {
                "file": name,
                "processed_at": format_ms(moment),
                "entities": _first_count(sidecar, "entities", "entities_extracted"),
                "edges": _first_count(sidecar, "edges", "edges_created"),
            }
        )
    return listed, scan.count


def _sidecars(home: Path) -> Iterator[tuple[str, Any]]:
    for folder in (PENDING, COMPLETED):
        try:
            with os.scandir(home / folder) as found:
                entries = [e for e in found if e.name.endswith(META_SUFFIX)]
        except OSError:
            continue
        for entry in entries:
            yield entry.name[: -len(META_SUFFIX)], _read_json(Path(entry.path))


def _session_cursors(home: Path) -> dict[str, dict[str, Any]]:
    best: dict[str, tuple[int, str, dict[str, Any]]] = {}
    for name, sidecar in _sidecars(home):
        if not isinstance(sidecar, dict) or sidecar.get("source") != CLOUD_SOURCE:
            continue
        session, through = sidecar.get("session_id"), sidecar.get("through")
        if not (isinstance(session, str) and session and isinstance(through, str)):
            continue
        try:
            instant = parse_time(through, "through")
        except TimeFormatError:
            continue
        last = sidecar.get("last_event_id")
        cursor = {
            "through": through,
            "last_event_id": last if isinstance(last, str) else None,
            "file": name,
        }
        if session not in best or (instant, name) > best[session][:2]:
            best[session] = (instant, name, cursor)
    return {session: best[session][2] for session in sorted(best)}


def queue_status(home: Path) -> dict[str, Any]:
    """The queue as §8.7's status reports it (blocking I/O: run it on a worker thread)."""
    pending, pending_count = _pending(home)
    completed, completed_count = _completed(home)
    return {
        "pending": pending,
        "recently_completed": completed,
        "pending_count": pending_count,
        "completed_count": completed_count,
        "session_cursors": _session_cursors(home),
    }
