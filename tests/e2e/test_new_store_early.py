"""A store's first start answers `initialize`, `tools/list` and the first read early, from the
answers kept in the user's cache for another store (graphmem.kept_answer), over real pipes.

Every new project a host opens is a new data dir: its first two starts used to wait for the SDK
(about a second, five times the official server's start), the first keeping `initialize`, the
second `tools/list`. The kept answers depend on the install and the settings, not the store,
so a new store writes the same bytes the server alone writes, and a kept answer that is wrong
is still replaced, in both places, and the client told to list again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

from tests.e2e.support import server_params

SESSION_TIMEOUT = 120.0

OPENING: list[dict[str, Any]] = [
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "host-like", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_nodes", "arguments": {"query": "notes"}},
    },
]


def _host_session(data_dir: Path, cache: Path, **env: str) -> tuple[list[bytes], list[str]]:
    """A host's opening on `data_dir` with `cache` as the user's cache, written at once, stdin
    closed: the lines the server wrote, and the events it logged."""
    params = _params(data_dir, cache, **env)
    done = subprocess.run(
        [sys.executable, *params.args],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in OPENING),
        capture_output=True,
        env=params.env,
        timeout=SESSION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines(keepends=True), _events(done.stderr)


def _params(data_dir: Path, cache: Path, **env: str) -> StdioServerParameters:
    """The server on `data_dir`, with the user's cache and schema folder the same for every
    store in the test (as a user's are: the settings of every store alike)."""
    schemas = cache.parent / "user-schemas"
    schemas.mkdir(parents=True, exist_ok=True)
    return server_params(
        data_dir,
        GRAPHMEM_LOG_LEVEL="INFO",
        XDG_CACHE_HOME=str(cache),
        GRAPHMEM_SCHEMAS_DIR=str(schemas),
        **env,
    )


def _events(stderr: bytes) -> list[str]:
    events = []
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("event"), str):
            events.append(entry["event"])
    return events


def _early_entry(stderr_events: list[str]) -> bool:
    return "early_reads_done" in stderr_events


def _kept(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.json"))


def test_a_new_store_answers_the_opening_early_from_answers_kept_for_another_store(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    # The bytes of a server that answers everything itself, on a store of its own.
    alone, _ = _host_session(tmp_path / "alone", tmp_path / "alone-cache", **_off())
    first = tmp_path / "first"
    _host_session(first, cache)  # keeps initialize (here and in the user's cache)
    _host_session(first, cache)  # keeps tools/list
    shared = _kept(cache / "graphmem" / "handshake")
    assert len(shared) == 2

    new = tmp_path / "new"
    lines, events = _host_session(new, cache)
    assert lines == alone
    assert _early_entry(events)  # the early thread ran: initialize was written from the cache
    assert "tool_called" in events
    # The new store now holds its own copies: a cleared cache costs it nothing.
    assert _kept(new / "handshake") == shared
    assert "early_handshake_stale" not in events


def test_a_new_store_lists_its_tools_early_and_answers_the_first_search_early(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    first = tmp_path / "first"
    _host_session(first, cache)
    _host_session(first, cache)
    params = _params(tmp_path / "new", cache)
    done = subprocess.run(
        [sys.executable, *params.args],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in OPENING),
        capture_output=True,
        env=params.env,
        timeout=SESSION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    early = [
        entry
        for entry in map(_json_or_none, done.stderr.splitlines())
        if isinstance(entry, dict) and entry.get("event") == "early_reads_done"
    ]
    assert len(early) == 1
    assert early[0]["tools_listed"] == 1
    assert early[0]["answered"] == 1  # the search, on a store created by this very start
    assert early[0]["problem"] is None


def test_a_wrong_answer_in_the_users_cache_is_replaced_in_both_places_and_the_client_told(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    first = tmp_path / "first"
    _host_session(first, cache)
    _host_session(first, cache)
    shared = cache / "graphmem" / "handshake"
    (kept_list,) = shared.glob("tools-list-*.json")
    right = kept_list.read_bytes()
    wrong = json.loads(right)
    wrong["result"]["tools"] = wrong["result"]["tools"][:1]
    kept_list.write_bytes(json.dumps(wrong, separators=(",", ":")).encode())

    new = tmp_path / "new"
    lines, events = _host_session(new, cache)
    assert "early_handshake_stale" in events
    written = [json.loads(line) for line in lines]
    assert written[1]["result"] == wrong["result"]  # the early answer went out...
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in written
    assert kept_list.read_bytes() == right  # ...and the SDK's replaced it
    assert (new / "handshake" / kept_list.name).read_bytes() == right
    again, events = _host_session(tmp_path / "newer", cache)
    assert "early_handshake_stale" not in events
    assert json.loads(again[1])["result"] == json.loads(right)["result"]


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _off() -> dict[str, str]:
    return {"GRAPHMEM_EARLY_HANDSHAKE": "0"}
