"""graph_export's files (contract §8.18): timestamped JSONL backups under the graph home,
never overwritten, written whole or not at all, with a retention count.

- Name: `backup-<UTC YYYY-MM-DDTHH-MM-SS>[-<label>].jsonl`; the label keeps ASCII letters,
  digits and `-`, every other run becoming one `-`, trimmed of `-` (empty: no suffix). A name
  taken (two exports in one second) gets `-2`, `-3` ... before `.jsonl`.
- Written to a temporary file, flushed to disk, then linked to its name: a link fails rather
  than replace an existing file, so even two processes exporting at once never overwrite each
  other, and a crash leaves at most a temporary file, never a partial backup.
- Retention: among `backup-*.jsonl`, newest first by modification time (ties: by name, later
  first), every file after the first `keep` is deleted.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["BackupWritten", "backup_name", "sanitise_label", "write_backup"]

_LABEL_OTHER = re.compile(r"[^A-Za-z0-9-]+")
_PATTERN = "backup-*.jsonl"
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class BackupWritten:
    path: Path
    size_bytes: int
    pruned: int
    retained: int


def sanitise_label(label: str | None) -> str:
    """`"Pre Prune!"` -> `"Pre-Prune"`; "" when nothing usable is left."""
    if label is None:
        return ""
    return _LABEL_OTHER.sub("-", label).strip("-")


def backup_name(now_ms: int, label: str, attempt: int = 1) -> str:
    moment = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    name = "backup-" + moment.strftime("%Y-%m-%dT%H-%M-%S")
    if label:
        name += "-" + label
    if attempt > 1:
        name += f"-{attempt}"
    return name + ".jsonl"


def write_backup(
    folder: Path, rows: Iterable[dict[str, Any]], *, now_ms: int, label: str, keep: int
) -> BackupWritten:
    """Write `rows` as a new backup in `folder` and apply retention (blocking I/O)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".backup-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            for row in rows:
                out.write(_encode(row))
                out.write(b"\n")
            out.flush()
            os.fsync(out.fileno())
        path = _link_new(folder, Path(temporary), now_ms, label)
    finally:
        Path(temporary).unlink(missing_ok=True)
    _sync_folder(folder)
    size = path.stat().st_size
    pruned, retained = _retain(folder, keep)
    return BackupWritten(path, size, pruned, retained)


def _link_new(folder: Path, temporary: Path, now_ms: int, label: str) -> Path:
    attempt = 1
    while True:
        path = folder / backup_name(now_ms, label, attempt)
        try:
            os.link(temporary, path)
        except FileExistsError:
            attempt += 1
            continue
        return path


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a platform that cannot open folders (Windows): the rename is still atomic
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _retain(folder: Path, keep: int) -> tuple[int, int]:
    found: list[tuple[float, str, Path]] = []
    for path in folder.glob(_PATTERN):
        try:
            found.append((path.stat().st_mtime, path.name, path))
        except FileNotFoundError:
            continue  # removed meanwhile
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    pruned = 0
    for _, _, path in found[keep:]:
        try:
            path.unlink()
            pruned += 1
        except FileNotFoundError:
            continue
    return pruned, len(found) - pruned
