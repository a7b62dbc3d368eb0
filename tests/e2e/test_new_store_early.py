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


def _host_session(
    data_dir: Path, cache: Path, **env: str
) -> tuple[list[bytes], list[dict[str, Any]]]:
    """A host's opening on `data_dir` with `cache` as the user's cache, written at once, stdin
    closed: the lines the server wrote, and the entries it logged."""
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
    entries = [_json_or_none(line) for line in done.stderr.splitlines()]
    return done.stdout.splitlines(keepends=True), [e for e in entries if isinstance(e, dict)]


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


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _events(entries: list[dict[str, Any]]) -> list[str]:
    return [str(entry.get("event")) for entry in entries]


def _early(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What the early thread answered: tools/list from a kept answer, reads from the store."""
    done = [entry for entry in entries if entry.get("event") == "early_reads_done"]
    if not done:  # no early thread: initialize was not written early
        return {}
    (entry,) = done
    return {key: entry[key] for key in ("tools_listed", "answered", "problem")}


def _kept(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.json"))


def test_a_stores_first_start_keeps_both_answers_and_its_second_writes_both_early(
    tmp_path: Path,
) -> None:
    cache, store = tmp_path / "cache", tmp_path / "store"
    alone, _ = _host_session(tmp_path / "alone", tmp_path / "alone-cache", **_off())
    first, entries = _host_session(store, cache)
    assert first == alone
    assert _early(entries) == {}  # the SDK answered everything...
    assert len(_kept(store / "handshake")) == 2  # ...and its initialize and tools/list are kept
    second, entries = _host_session(store, cache)
    assert second == alone
    assert _early(entries) == {"tools_listed": 1, "answered": 1, "problem": None}
    assert "early_handshake_stale" not in _events(entries)


def test_a_new_store_answers_the_opening_early_from_answers_kept_for_another_store(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    # The bytes of a server that answers everything itself, on a store of its own.
    alone, _ = _host_session(tmp_path / "alone", tmp_path / "alone-cache", **_off())
    _host_session(tmp_path / "first", cache)  # keeps both (here and in the user's cache)
    shared = _kept(cache / "graphmem" / "handshake")
    assert len(shared) == 2

    new = tmp_path / "new"
    lines, entries = _host_session(new, cache)
    assert lines == alone
    # initialize and tools/list written from the user's cache, and the search answered from
    # a store this very start created.
    assert _early(entries) == {"tools_listed": 1, "answered": 1, "problem": None}
    assert "early_handshake_stale" not in _events(entries)
    # The new store now holds its own copies: a cleared cache costs it nothing.
    assert _kept(new / "handshake") == shared


def test_a_wrong_answer_in_the_users_cache_is_replaced_in_both_places_and_the_client_told(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    _host_session(tmp_path / "first", cache)
    shared = cache / "graphmem" / "handshake"
    (kept_list,) = shared.glob("tools-list-*.json")
    right = kept_list.read_bytes()
    wrong = json.loads(right)
    wrong["result"]["tools"] = wrong["result"]["tools"][:1]
    kept_list.write_bytes(json.dumps(wrong, separators=(",", ":")).encode())

    new = tmp_path / "new"
    lines, entries = _host_session(new, cache)
    assert "early_handshake_stale" in _events(entries)
    written = [json.loads(line) for line in lines]
    assert written[1]["result"] == wrong["result"]  # the early answer went out...
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in written
    assert kept_list.read_bytes() == right  # ...and the SDK's replaced it
    assert (new / "handshake" / kept_list.name).read_bytes() == right
    again, entries = _host_session(tmp_path / "newer", cache)
    assert "early_handshake_stale" not in _events(entries)
    assert json.loads(again[1])["result"] == json.loads(right)["result"]


def _off() -> dict[str, str]:
    return {"GRAPHMEM_EARLY_HANDSHAKE": "0"}
