"""Hostile and unusual input on the stdio wire: every request answered, in the order sent,
each answer whole, and the server serving on (issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_stdio import RawServer, answers_from_files
from tests.e2e.support import server_params

FAST_OR_NOT = pytest.mark.parametrize("fast", ["1", "0"], ids=["fast-path", "sdk-only"])
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "0"},
}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def request_line(request_id: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def tool_line(
    request_id: Any, name: str, arguments: Any, meta: dict[str, Any] | None = None
) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return request_line(request_id, "tools/call", params)


def entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "t", "observations": list(observations)}


@FAST_OR_NOT
def test_a_request_nested_a_thousand_deep_gets_an_error_and_the_server_keeps_serving(
    tmp_path: Path, fast: str
) -> None:
    server = RawServer(tmp_path, GRAPHMEM_FAST_CALLS=fast)
    try:
        server.initialize()
        deep = '{"x":' + nested(1000) + "}"
        server.send_bytes(
            b'{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"read_graph",'
            b'"arguments":' + deep.encode() + b"}}"
        )
        refused = server.response(50)
        assert refused["error"]["code"] == -32600
        assert "100 levels" in refused["error"]["message"]
        # The id after the deep part cannot be read without parsing it: answered with id null.
        server.send_bytes(b'{"jsonrpc":"2.0","params":' + deep.encode() + b',"id":51,"method":"x"}')
        assert "100 levels" in server.response(None)["error"]["message"]
        # Nesting within the limit is served as usual.
        within = server.call_tool("search_nodes", {"query": "x", "extra": json.loads(nested(90))})
        assert "result" in within, within
        after = server.call_tool("read_graph", {})
        assert after["result"]["structuredContent"] == {"entities": [], "relations": []}
    finally:
        assert server.close() == 0


@pytest.mark.parametrize("bad_id", ["{}", '{"n":1}', "true", "1.5", "null", "[1]"])
def test_a_request_with_an_invalid_id_gets_the_invalid_request_error(
    tmp_path: Path, bad_id: str
) -> None:
    server = RawServer(tmp_path)
    try:
        server.initialize()
        for method in ("tools/call", "tools/list"):
            server.send_bytes(
                b'{"jsonrpc":"2.0","id":%s,"method":"%s","params":{"name":"read_graph"}}'
                % (bad_id.encode(), method.encode())
            )
            answer = server.response(None)
            assert answer["error"]["code"] == -32600
            assert "string or an integer" in answer["error"]["message"]
        after = server.call_tool("read_graph", {})
        assert after["result"]["structuredContent"] == {"entities": [], "relations": []}
    finally:
        assert server.close() == 0


def test_a_line_over_the_size_limit_is_answered_logged_and_skipped(tmp_path: Path) -> None:
    server = RawServer(tmp_path, GRAPHMEM_MAX_LINE_BYTES="65536")
    try:
        server.initialize()
        server.send_bytes(
            tool_line(60, "create_entities", {"entities": [entity("A", "x" * 300_000)]})
        )
        refused = server.response(60)
        assert refused["error"]["code"] == -32600
        assert "65536" in refused["error"]["message"]
        assert "GRAPHMEM_MAX_LINE_BYTES" in refused["error"]["message"]
        created = server.call_tool("create_entities", {"entities": [entity("B", "y" * 1000)]})
        assert not created["result"].get("isError"), created
        graph = server.call_tool("read_graph", {})["result"]["structuredContent"]
        assert [e["name"] for e in graph["entities"]] == ["B"]
    finally:
        assert server.close() == 0
    assert server.logged("line_too_long")


def test_a_line_size_limit_that_is_not_a_positive_number_stops_the_start(tmp_path: Path) -> None:
    params = server_params(tmp_path, GRAPHMEM_MAX_LINE_BYTES="lots")
    done = subprocess.run(
        [sys.executable, *params.args],
        input=b"",
        capture_output=True,
        env=params.env,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert b"GRAPHMEM_MAX_LINE_BYTES" in done.stderr


def seed_large_graph(data_dir: Path, entities: int = 60, size: int = 60_000) -> None:
    """About entities * size bytes of graph: several times what a pipe holds."""
    server = RawServer(data_dir)
    try:
        server.initialize()
        for i in range(entities):
            made = server.call_tool("create_entities", {"entities": [entity(f"e{i}", "o" * size)]})
            assert not made["result"].get("isError"), made
    finally:
        assert server.close() == 0


def handshake_lines() -> list[bytes]:
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    }
    return [
        request_line(1, "initialize", init),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        tool_line(2, "read_graph", {}),
    ]


def test_a_large_answer_is_written_whole_when_the_client_closes_stdin_at_once(
    tmp_path: Path,
) -> None:
    seed_large_graph(tmp_path)
    server = RawServer(tmp_path, "INFO", hold_stdout=True)
    for line in handshake_lines():
        server.send_bytes(line)
    server.close_stdin()
    # The client reads nothing until the server has reached its end (the old transport
    # exited there, its answer cut) or is waiting at its end for the client to read.
    server.wait_logged_or_ended("answers_flushing")
    server.read_stdout()
    assert server.close() == 0
    answers = {m["id"]: m for m in map(json.loads, server.stdout_lines) if "id" in m}
    graph = answers[2]["result"]["structuredContent"]
    assert len(graph["entities"]) == 60
    assert all(len(e["observations"][0]) == 60_000 for e in graph["entities"])


def test_a_large_answer_is_written_whole_to_a_regular_file(tmp_path: Path) -> None:
    seed_large_graph(tmp_path / "data")

    answers = answers_from_files(tmp_path / "data", b"\n".join(handshake_lines()) + b"\n", tmp_path)

    assert len(answers[2]["result"]["structuredContent"]["entities"]) == 60


def pipelined_pairs(server: RawServer, meta: dict[str, Any] | None, rounds: range) -> list[int]:
    """create_entities A,B (which the SDK runs: it carries a progress token) and, sent right
    behind it without waiting, create_relations A->B (a plain call); the relation ids."""
    relation_ids = []
    for i in rounds:
        progress = {**(meta or {}), "progressToken": f"p{i}"}
        names = [f"A{i}", f"B{i}"]
        server.send_bytes(
            tool_line(
                1000 + i, "create_entities", {"entities": [entity(n) for n in names]}, progress
            )
        )
        relation = {"from": names[0], "to": names[1], "relationType": "knows"}
        server.send_bytes(tool_line(2000 + i, "create_relations", {"relations": [relation]}, meta))
        relation_ids.append(2000 + i)
    return relation_ids


@FAST_OR_NOT
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_call_the_sdk_runs_is_never_overtaken_by_the_calls_behind_it(
    tmp_path: Path, fast: str, era: str
) -> None:
    server = RawServer(tmp_path, GRAPHMEM_FAST_CALLS=fast)
    try:
        meta: dict[str, Any] | None = None
        if era == "handshake":
            # Pipelined behind an initialize not yet answered, too.
            server.send_bytes(handshake_lines()[0])
            server.send_bytes(handshake_lines()[1])
            ids = pipelined_pairs(server, None, range(1))
            server.response(1)
        else:
            meta = ENVELOPE
            ids = []
        ids += pipelined_pairs(server, meta, range(1, 21))
        for request_id in ids:
            answer = server.response(request_id)
            assert not answer["result"].get("isError"), answer
        order = [json.loads(line).get("id") for line in server.stdout_lines]
        answered = [i for i in order if isinstance(i, int) and i >= 1000]
        assert answered == sorted(answered, key=lambda i: (i % 1000, i // 1000))
    finally:
        assert server.close() == 0
