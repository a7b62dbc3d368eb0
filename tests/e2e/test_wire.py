"""What goes over the stdio wire: only protocol messages on stdout, logs on stderr as JSON,
and bytes no SDK client would send."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.raw_stdio import RawServer, answers_from_files


def test_stdout_carries_only_protocol_messages_and_logs_are_json_on_stderr(
    tmp_path: Path,
) -> None:
    server = RawServer(tmp_path, log_level="INFO")
    try:
        server.initialize()
        server.call_tool(
            "create_entities",
            {"entities": [{"name": "A", "entityType": "t", "observations": ["o"]}]},
        )
        server.call_tool("read_graph", {})
        server.call_tool("no_such_tool", {})
    finally:
        assert server.close() == 0
    for line in server.stdout_lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
    assert server.stderr, "expected log lines on stderr"
    logged = [json.loads(line) for line in server.stderr]
    assert any(entry.get("event") == "tool_called" for entry in logged)
    assert all("level" in entry and "timestamp" in entry for entry in logged)


def test_invalid_unicode_on_the_wire_gets_an_error_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    server = RawServer(tmp_path)
    try:
        server.initialize()
        # A lone surrogate escaped in JSON is valid JSON but not storable text.
        request = (
            b'{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"create_entities",'
            b'"arguments":{"entities":[{"name":"x","entityType":"t",'
            b'"observations":["bad \\ud800"]}]}}}'
        )
        server.send_bytes(request)
        answer = server.response(100)
        assert answer["result"]["isError"] is True
        assert "lone surrogate" in answer["result"]["content"][0]["text"]
        # Raw bytes that are not UTF-8 at all: a protocol fault, answered or dropped, never fatal.
        server.send_bytes(
            b'{"jsonrpc":"2.0","id":101,"method":"tools/list","params":{"x":"\xff\xfe"}}'
        )
        after = server.call_tool("read_graph", {})
        assert after["result"]["structuredContent"] == {"entities": [], "relations": []}
    finally:
        assert server.close() == 0


def test_requests_read_before_stdin_closes_are_answered_even_from_regular_files(
    tmp_path: Path,
) -> None:
    requests = (
        "\n".join(
            json.dumps(m)
            for m in [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "file", "version": "0"},
                    },
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "read_graph", "arguments": {}},
                },
            ]
        )
        + "\n"
    )
    answers = answers_from_files(tmp_path / "data", requests.encode(), tmp_path)
    assert answers[2]["result"]["structuredContent"] == {"entities": [], "relations": []}


def test_calls_pipelined_just_before_stdin_closes_are_all_answered(tmp_path: Path) -> None:
    server = RawServer(tmp_path)
    try:
        server.initialize()
        ids = [
            server.request(
                "tools/call",
                {
                    "name": "create_entities",
                    "arguments": {
                        "entities": [{"name": f"e{i}", "entityType": "t", "observations": []}]
                    },
                },
            )
            for i in range(8)
        ]
        ids.append(server.request("tools/call", {"name": "read_graph", "arguments": {}}))
    finally:
        assert server.close() == 0
    answers = {m["id"]: m for m in map(json.loads, server.stdout_lines) if "id" in m}
    assert set(ids) <= set(answers)
    assert all(not answers[i]["result"].get("isError") for i in ids)
