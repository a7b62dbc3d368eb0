"""The graph home's files (contract §1.3): appending audit lines (graph_audit, graph_merge,
graph_unmerge), and what graph_stats and graph_build_context read from them (§8.14, §8.21):
the last dream run and the document queue's counts; the last run's details and the
transcripts not yet processed (build context).

- `last_dream_run`: the newest `run_end` of `logs/dream-audit.jsonl` if it is not older than
  the newest `run_start`, else that `run_start`; without either, `processed/manifest.json`'s
  `last_dream_run`; else None. The audit log only grows by appending (graph_audit), so it is
  read backwards from its end and only until both are found: a long log costs no more.
- `pending_ingest_docs` / `total_ingested_docs`: the documents in `ingest/pending` and
  `ingest/completed`, each a file beside its `<file>.meta.json` (which is not counted).

Every file is optional and read defensively: an unreadable or malformed one counts as absent
(a line that is not a JSON object, or whose timestamp is not a time, is skipped).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from projections.bounded_json import JsonShapeError, decode
from projections.graph_time import TimeFormatError, format_ms, parse_time

__all__ = [
    "AUDIT_LOG",
    "MANIFEST",
    "MERGE_AUDIT_LOG",
    "HomeFacts",
    "append_line",
    "home_facts",
    "last_dream",
    "unprocessed_transcripts",
]

AUDIT_LOG = Path("logs") / "dream-audit.jsonl"
MERGE_AUDIT_LOG = Path("logs") / "merge-audit.jsonl"
MANIFEST = Path("processed") / "manifest.json"
PENDING = Path("ingest") / "pending"
COMPLETED = Path("ingest") / "completed"
META_SUFFIX = ".meta.json"
_BLOCK = 64 * 1024
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class HomeFacts:
    last_dream_run: str | None
    pending_ingest_docs: int
    total_ingested_docs: int


def append_line(path: Path, line: bytes) -> None:
    """Append one whole line (one write to a file opened for appending, so concurrent calls
    never interleave within a line) and flush it to the disk before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def home_facts(home: Path) -> HomeFacts:
    return HomeFacts(
        _last_dream_run(home), _documents(home / PENDING), _documents(home / COMPLETED)
    )


def _documents(folder: Path) -> int:
    try:
        with os.scandir(folder) as found:
            return sum(
                1 for item in found if item.is_file() and not item.name.endswith(META_SUFFIX)
            )
    except OSError:
        return 0


def _last_dream_run(home: Path) -> str | None:
    start, end = _newest_runs(home / AUDIT_LOG)
    if end is not None and (start is None or end >= start):
        return format_ms(end)
    if start is not None:
        return format_ms(start)
    return _manifest_run(home / MANIFEST)


def _newest_runs(path: Path) -> tuple[int | None, int | None]:
    """The times of the last run_start and run_end lines of the audit log."""
    start: int | None = None
    end: int | None = None
    for line in _lines_backwards(path):
        record = _json(line)
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "run_start" and start is None:
            start = _time(record.get("timestamp"))
        elif event == "run_end" and end is None:
            end = _time(record.get("timestamp"))
        if start is not None and end is not None:
            break
    return start, end


def _lines_backwards(path: Path) -> Any:
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        handle.seek(0, os.SEEK_END)
        position = handle.tell()
        tail = b""
        while position > 0:
            size = min(_BLOCK, position)
            position -= size
            handle.seek(position)
            chunk = handle.read(size) + tail
            lines = chunk.split(b"\n")
            tail = lines[0]  # may continue in the block before
            for line in reversed(lines[1:]):
                if line.strip():
                    yield line
        if tail.strip():
            yield tail


def _json(raw: bytes) -> Any:
    try:
        return decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, JsonShapeError):
        return None


def _time(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value, "timestamp")
    except TimeFormatError:
        return None


def _manifest_run(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_MANIFEST_BYTES:
            return None
        document = _json(path.read_bytes())
    except OSError:
        return None
    if not isinstance(document, dict):
        return None
    found = _time(document.get("last_dream_run"))
    return None if found is None else format_ms(found)


# --- graph_build_context (contract §8.21) ---------------------------------------------------

_RUN_NUMBERS = (
    "duration_ms",
    "transcripts_processed",
    "ingest_processed",
    "entities_created",
    "edges_created",
    "errors",
)
TRANSCRIPT_SUFFIX = ".jsonl"
AGENT_PREFIX = "agent-"


def last_dream(home: Path) -> dict[str, Any] | None:
    """The newest `run_start` of the audit log and the first `run_end` after it (`ended_at`
    and the counts null while it has none); without one, the manifest's `last_dream_run`
    (`source: "manifest"`); else None."""
    later_ends: list[dict[str, Any]] = []
    for line in _lines_backwards(home / AUDIT_LOG):
        record = _json(line)
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "run_end" and _time(record.get("timestamp")) is not None:
            later_ends.append(record)
        elif event == "run_start":
            started = _time(record.get("timestamp"))
            if started is None:
                continue
            end = later_ends[-1] if later_ends else None  # the first after it in file order
            return _run(started, record, end)
    manifest = _manifest_run(home / MANIFEST)
    if manifest is None:
        return None
    return {
        "started_at": manifest,
        "ended_at": None,
        "duration_ms": None,
        "source": "manifest",
        **dict.fromkeys(_RUN_NUMBERS[1:]),
    }


def _run(started: int, start: dict[str, Any], end: dict[str, Any] | None) -> dict[str, Any]:
    ended = None if end is None else _time(end.get("timestamp"))
    source = start.get("source")
    if not isinstance(source, str) and end is not None:
        source = end.get("source")
    numbers = {key: _number(None if end is None else end.get(key)) for key in _RUN_NUMBERS}
    return {
        "started_at": format_ms(started),
        "ended_at": format_ms(ended),
        "duration_ms": numbers["duration_ms"],
        "source": source if isinstance(source, str) else None,
        **{key: numbers[key] for key in _RUN_NUMBERS[1:]},
    }


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _processed_sessions(home: Path) -> set[str]:
    try:
        if (home / MANIFEST).stat().st_size > _MAX_MANIFEST_BYTES:
            return set()
        document = _json((home / MANIFEST).read_bytes())
    except OSError:
        return set()
    processed = document.get("processed") if isinstance(document, dict) else None
    return set(processed) if isinstance(processed, dict) else set()


def unprocessed_transcripts(home: Path, transcripts_dir: Path) -> int:
    """`.jsonl` files one level below the transcripts folder, not named `agent-*`, whose
    session id (the name without `.jsonl`) is not a key of the manifest's `processed` map."""
    processed = _processed_sessions(home)
    count = 0
    try:
        projects = [p for p in os.scandir(transcripts_dir) if p.is_dir()]
    except OSError:
        return 0
    for project in projects:
        try:
            with os.scandir(project.path) as found:
                for item in found:
                    name = item.name
                    if (
                        name.endswith(TRANSCRIPT_SUFFIX)
                        and not name.startswith(AGENT_PREFIX)
                        and item.is_file()
                        and name[: -len(TRANSCRIPT_SUFFIX)] not in processed
                    ):
                        count += 1
        except OSError:
            continue
    return count
