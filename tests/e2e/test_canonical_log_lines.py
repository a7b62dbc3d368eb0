"""One canonical log line per tool call and per start-up, from a real server; and
GRAPHMEM_LOG_FILE, which sends the JSON lines to a file rotated by size instead of stderr."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from graphmem.version import graphmem_version
from tests.e2e.support import call, legacy_session

pytestmark = pytest.mark.anyio


def entries(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def two(names: tuple[str, str]) -> dict[str, Any]:
    return {"entities": [{"name": n, "entityType": "t", "observations": ["o"]} for n in names]}


async def test_each_tool_call_logs_one_line_with_client_outcome_duration_and_events(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "logs" / "graphmem.log"
    with tempfile.TemporaryFile("w+") as stderr:
        async with legacy_session(
            tmp_path / "data",
            errlog=stderr,
            GRAPHMEM_LOG_LEVEL="INFO",
            GRAPHMEM_LOG_FILE=str(log_file),
        ) as session:
            assert not (await call(session, "create_entities", two(("a", "b")))).is_error
            assert (await call(session, "no_such_tool_at_all", {})).is_error
            # A schema tool writes through a transaction (the coordinator actor's thread).
            added = await call(session, "add_person", {"person": {"name": "Ada", "role": "x"}})
            assert not added.is_error
            assert not (await call(session, "read_graph", {})).is_error
        stderr.seek(0)
        assert not [line for line in stderr.read().splitlines() if line.startswith("{")]

    logged = entries(log_file)
    (started,) = [e for e in logged if e["event"] == "graphmem_started"]
    assert started["version"] == graphmem_version()
    calls = [e for e in logged if e["event"] == "tool_called"]
    assert [(c["tool"], c["outcome"], c["events"]) for c in calls] == [
        ("create_entities", "ok", 4),  # two entities, an observation each
        ("no_such_tool_at_all", "error", 0),
        ("add_person", "ok", calls[2]["events"]),
        ("read_graph", "ok", 0),
    ]
    assert calls[2]["events"] >= 2  # the entity and its role, at least
    assert all(c["client"] and c["ms"] >= 0 for c in calls)
    assert any(e["event"] == "graphmem_stopped" for e in logged)


async def test_the_log_file_rotates_at_its_size_keeping_the_backups_asked_for(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "graphmem.log"
    async with legacy_session(
        tmp_path / "data",
        GRAPHMEM_LOG_LEVEL="INFO",
        GRAPHMEM_LOG_FILE=str(log_file),
        GRAPHMEM_LOG_FILE_MAX_BYTES="2000",
        GRAPHMEM_LOG_FILE_BACKUPS="2",
    ) as session:
        for i in range(40):
            assert not (await call(session, "create_entities", two((f"x{i}", f"y{i}")))).is_error
    files = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("graphmem.log"))
    assert files == ["graphmem.log", "graphmem.log.1", "graphmem.log.2"]
    for name in files:
        path = tmp_path / name
        assert path.stat().st_size <= 2000
        assert all(e["event"] for e in entries(path))  # whole JSON lines, never cut
