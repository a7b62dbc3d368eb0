"""Reads answered while the server loads (graphmem.early_reads), over real pipes.

Each session writes every request at once and closes stdin, as a client that asks before the
server is up: the early path reads them all while the server is still importing. Whatever
path answers, the client must read the same bytes as from the server alone
(GRAPHMEM_EARLY_READS=0), and a write asked during start-up must be seen by the reads after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from eventstore.lmdb_log import LmdbEventLog
from graphmem.early_reads import HANDSHAKE_ERA_VERSIONS
from projections.graph import GraphProjection
from tests.e2e.support import call, legacy_session, server_params

SESSION_TIMEOUT = 120.0

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "early-test", "version": "0"},
    },
}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}

ENTITIES = [
    {"name": "Ada", "entityType": "person", "observations": ["wrote the notes", "Zürich"]},
    {"name": "Charles", "entityType": "person", "observations": ["built the engine"]},
    {"name": "Engine", "entityType": "machine", "observations": ["analytical", "notes on it"]},
    {"name": "Note G", "entityType": "document", "observations": []},
]
RELATIONS = [
    {"from": "Ada", "to": "Engine", "relationType": "programmed"},
    {"from": "Charles", "to": "Engine", "relationType": "designed"},
    {"from": "Ada", "to": "Note G", "relationType": "wrote"},
]
READS: list[tuple[str, dict[str, Any]]] = [
    ("search_nodes", {"query": "notes"}),
    ("search_nodes", {"query": "NOTES", "entityType": "person"}),
    ("search_nodes", {"query": "e", "limit": 2, "offset": 1}),
    ("search_nodes", {"query": "zürich"}),
    ("search_nodes", {"query": "absent"}),
    ("open_nodes", {"names": ["Engine", "Ada", "nobody"]}),
    ("read_graph", {}),
    ("read_graph", {"limit": 2}),
    ("read_graph", {"offset": 3, "limit": 5}),
]


def _call(request_id: int | str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def _session(
    data_dir: Path, messages: list[dict[str, Any]], **env: str
) -> tuple[list[bytes], list[dict[str, Any]]]:
    """Every message written at once, stdin closed: the lines the server wrote, and its log."""
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO", **env)
    done = subprocess.run(
        [sys.executable, *params.args],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
        capture_output=True,
        env=params.env,
        timeout=SESSION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    log = []
    for line in done.stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            log.append(entry)
    return done.stdout.splitlines(keepends=True), log


def _early_calls(log: list[dict[str, Any]]) -> list[str]:
    return [e["tool"] for e in log if e.get("event") == "tool_called" and e.get("early")]


def _filled(data_dir: Path) -> None:
    """A store with a graph in it, whose initialize answer is kept (a restarted server)."""
    _, _ = _session(
        data_dir,
        [
            INITIALIZE,
            INITIALIZED,
            _call(1, "create_entities", {"entities": ENTITIES}),
            _call(2, "create_relations", {"relations": RELATIONS}),
        ],
    )


def _reads(first_id: int = 1) -> list[dict[str, Any]]:
    return [_call(first_id + i, tool, args) for i, (tool, args) in enumerate(READS)]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_reads_answered_while_the_server_loads_are_the_bytes_the_server_writes(
    tmp_path: Path, version: str
) -> None:
    """In every version of the handshake era: the SDK writes structuredContent in each."""
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    _filled(tmp_path)
    _session(tmp_path, [initialize])  # keeps this version's initialize answer
    messages = [initialize, INITIALIZED, *_reads()]
    early, early_log = _session(tmp_path, messages)
    server, server_log = _session(tmp_path, messages, GRAPHMEM_EARLY_READS="0")
    assert _early_calls(early_log) == [tool for tool, _ in READS]  # all answered early
    assert not _early_calls(server_log)
    assert len(early) == 1 + len(READS)
    assert early == server
    found = json.loads(early[1])["result"]["structuredContent"]
    assert [e["name"] for e in found["entities"]] == ["Ada", "Engine"]


def test_a_write_asked_during_start_up_is_seen_by_the_reads_after_it_in_order(
    tmp_path: Path,
) -> None:
    _filled(tmp_path)
    newcomer = {"name": "Grace", "entityType": "person", "observations": ["wrote notes too"]}
    messages = [
        INITIALIZE,
        INITIALIZED,
        _call(1, "search_nodes", {"query": "wrote"}),
        _call(2, "create_entities", {"entities": [newcomer]}),
        _call(3, "search_nodes", {"query": "wrote"}),
        _call(4, "open_nodes", {"names": ["Grace"]}),
    ]
    lines, log = _session(tmp_path, messages)
    answers = [json.loads(line) for line in lines]
    assert [a.get("id") for a in answers if "id" in a] == [0, 1, 2, 3, 4]
    by_id = {a["id"]: a for a in answers if "id" in a}

    def names(request_id: int) -> list[str]:
        content = by_id[request_id]["result"]["structuredContent"]
        return [e["name"] for e in content["entities"]]

    assert names(1) == ["Ada"]
    assert names(3) == ["Ada", "Grace"]
    assert names(4) == ["Grace"]
    # Only the read before the write was answered early; the write and all after it were the
    # server's, in order.
    assert _early_calls(log) == ["search_nodes"]


def test_with_the_log_ahead_of_the_checkpoint_the_early_answers_include_the_newer_events(
    tmp_path: Path,
) -> None:
    _filled(tmp_path)
    _session(
        tmp_path,
        [
            INITIALIZE,
            _call(
                1,
                "add_observations",
                {"observations": [{"entityName": "Charles", "contents": ["wrote letters"]}]},
            ),
        ],
    )
    # Keep only the oldest checkpoint of the graph: the log is now ahead of it.
    event_log = LmdbEventLog.open(tmp_path)
    try:
        entries = event_log.checkpoints.entries(GraphProjection.name)
        for entry in entries[1:]:
            event_log.checkpoints.delete(GraphProjection.name, entry.position)
        kept = event_log.checkpoints.entries(GraphProjection.name)
        end = event_log.last_position()
    finally:
        event_log.close()
    assert not kept or kept[-1].position < end
    messages = [INITIALIZE, INITIALIZED, _call(1, "search_nodes", {"query": "wrote"})]
    early, log = _session(tmp_path, messages)
    assert _early_calls(log) == ["search_nodes"]
    found = json.loads(early[1])["result"]["structuredContent"]["entities"]
    assert [e["name"] for e in found] == ["Ada", "Charles"]
    server, _ = _session(tmp_path, messages, GRAPHMEM_EARLY_READS="0")
    assert early == server


def test_calls_the_early_path_would_have_to_refuse_are_the_servers_and_so_is_all_after(
    tmp_path: Path,
) -> None:
    _filled(tmp_path)
    messages = [
        INITIALIZE,
        INITIALIZED,
        _call(1, "search_nodes", {"query": "notes"}),
        _call(2, "search_nodes", {"query": "bad\u0001text"}),  # refused, in the server's words
        _call(3, "search_nodes", {"query": "notes", "as_of": 1}),
        _call(4, "read_graph", {"limit": 0}),
        _call(5, "open_nodes", {"names": ["Ada"]}),
    ]
    early, log = _session(tmp_path, messages)
    server, _ = _session(tmp_path, messages, GRAPHMEM_EARLY_READS="0")
    assert early == server
    assert _early_calls(log) == ["search_nodes"]
    answers = [json.loads(line) for line in early]
    assert answers[2]["result"]["isError"] is True
    assert "control character" in answers[2]["result"]["content"][0]["text"]


def test_the_early_path_writes_only_for_the_protocol_versions_of_the_handshake_era() -> None:
    assert set(HANDSHAKE_PROTOCOL_VERSIONS) - set(MODERN_PROTOCOL_VERSIONS) == (
        HANDSHAKE_ERA_VERSIONS
    )


@pytest.mark.anyio
async def test_an_sdk_client_reads_and_writes_through_a_restarted_server_as_through_a_loaded_one(
    tmp_path: Path,
) -> None:
    """The SDK's own client, which calls as soon as `initialize` is answered: its first read
    meets the early path (or the server, if loaded by then), its write the server; the
    answers are those of a server with the early reads off."""
    _filled(tmp_path)
    newcomer = {"name": "Grace", "entityType": "person", "observations": ["wrote notes too"]}

    async def session(client: ClientSession) -> list[Any]:
        first = await call(client, "search_nodes", {"query": "wrote"})
        await call(client, "create_entities", {"entities": [newcomer]})
        second = await call(client, "search_nodes", {"query": "wrote"})
        await call(client, "delete_entities", {"entityNames": ["Grace"]})
        return [first.structured_content, second.structured_content]

    # The same settings as _filled's sessions: the initialize answer kept then is used.
    async with legacy_session(tmp_path, GRAPHMEM_LOG_LEVEL="INFO") as client:
        early = await session(client)
    async with legacy_session(tmp_path, GRAPHMEM_EARLY_READS="0") as client:
        server = await session(client)
    assert early == server
    assert [e["name"] for e in early[0]["entities"]] == ["Ada"]
    assert [e["name"] for e in early[1]["entities"]] == ["Ada", "Grace"]
