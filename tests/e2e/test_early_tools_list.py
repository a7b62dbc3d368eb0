"""`tools/list` answered before the server loads (graphmem.early_tools_list), over real pipes.

Hosts send `initialize`, `notifications/initialized` and `tools/list` before their first call.
A restarted server writes the SDK's own `tools/list` answer, kept at an earlier start, as soon
as it reads the request: the client must read the bytes the server alone writes, for every
profile and protocol version, and never a list the schema files or settings have since changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_stdio import RawServer
from tests.e2e.support import server_params, write_schema

SESSION_TIMEOUT = 120.0

INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
SEARCH: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search_nodes", "arguments": {"query": "notes"}},
}
TASK_SCHEMA: dict[str, Any] = {
    "name": "add_task",
    "description": "A task to do",
    "properties": {"title": {"type": "string", "description": "What to do", "required": True}},
}


def _initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "host-like", "version": "0"},
        },
    }


def _host_session(
    data_dir: Path, version: str = "2025-06-18", *, args: tuple[str, ...] = (), **env: str
) -> tuple[list[bytes], dict[str, Any]]:
    """A host's opening, written at once, stdin closed: the lines the server wrote, and its
    `early_reads_done` log entry ({} when nothing was answered early)."""
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO", **env)
    messages = [_initialize(version), INITIALIZED, TOOLS_LIST, SEARCH]
    done = subprocess.run(
        [sys.executable, *params.args, *args],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
        capture_output=True,
        env=params.env,
        timeout=SESSION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    early: dict[str, Any] = {}
    for line in done.stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "early_reads_done":
            early = entry
    return done.stdout.splitlines(keepends=True), early


def _listed_early(early: dict[str, Any]) -> int:
    listed = early.get("tools_listed", 0)
    assert isinstance(listed, int)
    return listed


def _kept_lists(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "handshake").glob("tools-list-*.json"))


@pytest.mark.parametrize(
    ("profile", "version"),
    [
        ("memory,schema", "2024-11-05"),
        ("memory", "2025-11-25"),
        ("mesh", "2024-11-05"),
        ("schema,graph", "2025-11-25"),
        ("memory,schema,mesh,graph", "2025-06-18"),
    ],
)
def test_a_restarted_server_lists_its_tools_early_with_the_bytes_the_server_writes(
    tmp_path: Path, profile: str, version: str
) -> None:
    alone, _ = _host_session(
        tmp_path / "alone-profile", version, tools=profile, GRAPHMEM_EARLY_HANDSHAKE="0"
    )
    store = tmp_path / "store"
    # The first start keeps the SDK's initialize and tools/list answers.
    first, early = _host_session(store, version, tools=profile)
    assert _listed_early(early) == 0
    assert len(_kept_lists(store)) == 1
    assert first[:2] == alone[:2]
    second, early = _host_session(store, version, tools=profile)
    assert _listed_early(early) == 1
    assert second[:2] == alone[:2]  # the call after it is answered too (mesh's is timestamped)
    assert len(second) == len(alone) == 3
    assert json.loads(second[1])["result"]["tools"]


def test_an_edited_schema_file_finds_no_kept_list_and_the_server_lists_the_new_tools(
    tmp_path: Path,
) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    write_schema(schemas, "task", TASK_SCHEMA)
    store = tmp_path / "store"
    for _ in range(3):
        lines, early = _host_session(store, GRAPHMEM_SCHEMAS_DIR=str(schemas))
    assert _listed_early(early) == 1

    edited = {
        **TASK_SCHEMA,
        "properties": {
            **TASK_SCHEMA["properties"],
            "due": {"type": "string", "description": "When"},
        },
    }
    write_schema(schemas, "task", edited)
    after, early = _host_session(store, GRAPHMEM_SCHEMAS_DIR=str(schemas))
    assert _listed_early(early) == 0  # not the kept list: the server's
    alone, _ = _host_session(
        tmp_path / "alone", GRAPHMEM_SCHEMAS_DIR=str(schemas), GRAPHMEM_EARLY_HANDSHAKE="0"
    )
    assert after[1] == alone[1]
    assert after[1] != lines[1]
    tools = {t["name"]: t for t in json.loads(after[1])["result"]["tools"]}
    assert "due" in json.dumps(tools["add_task"]["inputSchema"])

    again, early = _host_session(store, GRAPHMEM_SCHEMAS_DIR=str(schemas))
    assert _listed_early(early) == 1
    assert again[1] == alone[1]


def test_a_changed_profile_finds_no_kept_list(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for _ in range(3):
        _host_session(store, args=("--tools", "memory"))
    mesh, early = _host_session(store, args=("--tools", "mesh"))
    assert early == {} or _listed_early(early) == 0
    alone, _ = _host_session(
        tmp_path / "alone", args=("--tools", "mesh"), GRAPHMEM_EARLY_HANDSHAKE="0"
    )
    assert mesh[1] == alone[1]


def test_a_kept_list_that_differs_from_the_sdks_is_replaced_and_the_client_told_to_list_again(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    for _ in range(2):
        right, _ = _host_session(store)
    (kept,) = _kept_lists(store)
    answer = json.loads(kept.read_bytes())
    answer["result"]["tools"] = answer["result"]["tools"][:1]
    stale = json.dumps(answer, separators=(",", ":")).encode()
    kept.write_bytes(stale)

    lines, early = _host_session(store)
    assert _listed_early(early) == 1
    messages = [json.loads(line) for line in lines]
    assert lines[1] == stale + b"\n"  # what was written early stays the only answer to id 1
    assert [m.get("id") for m in messages if "id" in m] == [0, 1, 2]
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in messages
    assert kept.read_bytes() + b"\n" == right[1]

    again, _ = _host_session(store)
    assert again == right


def _one_request_at_a_time(store: Path) -> tuple[RawServer, dict[str, Any]]:
    """A host that sends each request once the one before is answered: initialize (and
    initialized), tools/list, a search. The server, ended, and its `early_reads_done` entry."""
    server = RawServer(store, log_level="INFO")
    try:
        server.initialize()
        server.response(server.request("tools/list"))
        server.call_tool("search_nodes", {"query": "notes"})
    finally:
        assert server.close() == 0
    early: dict[str, Any] = {}
    for line in server.stderr:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "early_reads_done":
            early = entry
    return server, early


def test_a_host_that_waits_for_each_answer_reads_each_answer_once_in_order(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    _, early = _one_request_at_a_time(store)  # keeps the initialize and tools/list answers
    assert early == {}
    assert len(_kept_lists(store)) == 1
    server, early = _one_request_at_a_time(store)
    assert _listed_early(early) == 1
    answers = [json.loads(line) for line in server.stdout_lines]
    # The kept tools/list answer is written once, though the lines after it came later.
    assert [a.get("id") for a in answers] == [1, 2, 3]
    assert "tools" in answers[1]["result"]
    assert "structuredContent" in answers[2]["result"]
