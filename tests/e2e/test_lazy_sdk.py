"""A stdio server serves a handshake-era session without the MCP SDK (graphmem.wire.front), and
loads it, handing it the session so far, when a line needs it; the client cannot tell either
way: the same lines get the same bytes with GRAPHMEM_LAZY_SDK on and off, in both eras.

The server logs `sdk_loaded` (with the reason and the method) when it starts the SDK's session,
and tests/e2e/test_stdio_imports.py checks what a session that never needs it has loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.e2e.raw_stdio import RawServer
from tests.e2e.support import server_params, write_schema
from tests.e2e.test_fast_path import ENVELOPE, entity, line, notification
from tests.schema_samples import NPC_SCHEMA

READ_TIMEOUT = 60.0
GRAPH_URI = "memory://knowledge-graph"
PROFILES = ["memory", "memory,mesh", "memory,schema", "graph"]
VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"]  # and one the SDK does not speak


def init(version: str = "2025-06-18", **params: Any) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "lazy-test", "version": "0"},
        **params,
    }


class Session:
    """A graphmem process driven line by line, every line it writes kept in order."""

    def __init__(self, data_dir: Path, *, lazy: bool, schemas: Path | None = None) -> None:
        flag = "1" if lazy else "0"
        if schemas is None:
            self.server = RawServer(data_dir, "INFO", timeout=READ_TIMEOUT, GRAPHMEM_LAZY_SDK=flag)
        else:
            self.server = RawServer(
                data_dir,
                "INFO",
                timeout=READ_TIMEOUT,
                GRAPHMEM_LAZY_SDK=flag,
                GRAPHMEM_SCHEMAS_DIR=str(schemas),
            )
        self.written: list[bytes] = []

    def send(self, sent: bytes, answer_id: object = None) -> dict[str, Any] | None:
        """Write `sent`; with `answer_id`, read until that request's answer and return it."""
        self.server.send_bytes(sent)
        while answer_id is not None:
            received = self.server.read_line()
            self.written.append(received)
            message: dict[str, Any] = json.loads(received)
            if "method" not in message and message.get("id") == answer_id:
                return message
        return None

    def until(self, method: str) -> None:
        """Read until the server sends a `method` notification."""
        while json.loads(self.written[-1] if self.written else b"{}").get("method") != method:
            self.written.append(self.server.read_line())

    def close(self) -> list[bytes]:
        assert self.server.close() == 0
        while not self.server.lines.empty():
            self.written.append(self.server.lines.get_nowait())
        return self.written

    def sdk_loads(self) -> list[tuple[str, str]]:
        """(method, reason) of each `sdk_loaded` line the server logged."""
        logged = [json.loads(entry) for entry in self.server.stderr if entry.startswith(b"{")]
        return [(e["method"], e["reason"]) for e in logged if e.get("event") == "sdk_loaded"]


def assert_same_lines(lazy: list[bytes], sdk: list[bytes]) -> None:
    assert len(lazy) == len(sdk)
    for i, (a, b) in enumerate(zip(lazy, sdk, strict=True)):
        assert a == b, f"line {i} differs:\nlazy {a[:400]!r}\nsdk  {b[:400]!r}"


def initialize_answers(data_dir: Path, profile: str, *, lazy: bool) -> list[bytes]:
    """The answer to an initialize at each of VERSIONS: one server per version when lazy (the
    front answers a session's first initialize), one session for all of them when not."""
    env = dict(server_params(data_dir, tools=profile).env or {})
    env["GRAPHMEM_EARLY_HANDSHAKE"] = "0"
    env["GRAPHMEM_LAZY_SDK"] = "1" if lazy else "0"
    sessions = [[v] for v in VERSIONS] if lazy else [VERSIONS]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "graphmem", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for _ in sessions
    ]
    answers = []
    for versions, process in zip(sessions, processes, strict=True):
        sent = b"".join(line(v, "initialize", init(v)) + b"\n" for v in versions)
        out, _ = process.communicate(sent, timeout=120)
        assert process.returncode == 0
        answers.extend(out.splitlines())
    return answers


@pytest.mark.parametrize("profile", PROFILES)
def test_the_initialize_answer_made_without_the_sdk_is_the_sdks_byte_for_byte(
    tmp_path: Path, profile: str
) -> None:
    lazy = initialize_answers(tmp_path / "lazy", profile, lazy=True)
    sdk = initialize_answers(tmp_path / "sdk", profile, lazy=False)
    assert_same_lines(lazy, sdk)
    assert json.loads(sdk[-1])["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1]


def legacy_transcript(data_dir: Path, *, lazy: bool) -> tuple[list[bytes], Session]:
    """A session that first stays within what the front answers, then needs the SDK."""
    session = Session(data_dir, lazy=lazy)
    try:
        session.send(line(1, "initialize", init()), 1)
        session.send(notification("notifications/initialized"))
        session.send(line(2, "ping"), 2)
        session.send(line(3, "tools/list"), 3)
        create = {"name": "create_entities", "arguments": {"entities": [entity("Zoë 🚀", "o")]}}
        session.send(line(4, "tools/call", create), 4)
        session.send(line(5, "tools/call", {"name": "no_such_tool", "arguments": {}}), 5)
        session.send(line(6, "tools/call", {"name": "read_graph", "arguments": {}}), 6)
        session.send(line(7, "resources/list"), 7)  # what hosts ask at start
        session.send(line(17, "resources/templates/list", {}), 17)
        session.send(line(18, "prompts/list"), 18)  # none: "Method not found"
        session.send(
            line(8, "tools/call", {"name": "search_nodes", "arguments": {"query": "o"}}), 8
        )
        # What the front leaves to the SDK: it is loaded here, and the session goes on.
        session.send(line(9, "resources/subscribe", {"uri": GRAPH_URI}), 9)
        more = {"name": "create_entities", "arguments": {"entities": [entity("Ada", "x")]}}
        session.send(line(10, "tools/call", more), 10)  # resources/updated first
        session.send(line(11, "resources/read", {"uri": GRAPH_URI}), 11)
        session.send(line(12, "tools/list", {}), 12)
        session.send(line(13, "ping"), 13)
        progress = {"name": "read_graph", "arguments": {}, "_meta": {"progressToken": "p"}}
        session.send(line(14, "tools/call", progress), 14)
        session.send(line(15, "initialize", init("2024-11-05")), 15)
        session.send(line(16, "logging/setLevel", {"level": "info"}), 16)
        session.send(line(19, "resources/list"), 19)
        session.send(line(20, "prompts/list", {}), 20)
    finally:
        written = session.close()
    return written, session


def test_a_handshake_era_session_loads_the_sdk_at_its_first_subscription_and_goes_on(
    tmp_path: Path,
) -> None:
    lazy, front = legacy_transcript(tmp_path / "lazy", lazy=True)
    sdk, loaded_at_start = legacy_transcript(tmp_path / "sdk", lazy=False)
    assert_same_lines(lazy, sdk)
    assert front.sdk_loads() == [("resources/subscribe", "a resources/subscribe request")]
    assert loaded_at_start.sdk_loads() == []
    assert any(b'"notifications/resources/updated"' in b for b in lazy)
    assert not front.server.logged("early_handshake_stale")  # the SDK agreed the initialize


def test_a_second_start_serves_initialize_and_tools_list_early_and_never_loads_the_sdk(
    tmp_path: Path,
) -> None:
    """The first start keeps its own initialize answer and tool list; the next answers them
    before the server loads (graphmem.early_handshake, early_reads) and the front agrees."""
    starts = []
    for _ in range(2):
        session = Session(tmp_path / "data", lazy=True)
        try:
            session.send(line(1, "initialize", init()), 1)
            session.send(notification("notifications/initialized"))
            session.send(line(2, "tools/list"), 2)
            session.send(line(3, "tools/call", {"name": "read_graph", "arguments": {}}), 3)
        finally:
            starts.append(session.close())
        assert session.sdk_loads() == []
        assert not session.server.logged("early_handshake_stale")
    assert_same_lines(starts[1], starts[0])
    assert list((tmp_path / "data" / "handshake").glob("tools-list-*.json"))


def modern_transcript(data_dir: Path, *, lazy: bool) -> tuple[list[bytes], Session]:
    session = Session(data_dir, lazy=lazy)
    try:
        session.send(line(1, "server/discover", {"_meta": ENVELOPE}), 1)
        session.send(line(2, "tools/list", {"_meta": ENVELOPE}), 2)
        call = {"name": "read_graph", "arguments": {}, "_meta": ENVELOPE}
        session.send(line(3, "tools/call", call), 3)
        session.send(line(4, "initialize", init()), 4)  # refused on a modern connection
    finally:
        written = session.close()
    return written, session


def test_the_modern_era_loads_the_sdk_at_its_first_request(tmp_path: Path) -> None:
    lazy, front = modern_transcript(tmp_path / "lazy", lazy=True)
    sdk, _ = modern_transcript(tmp_path / "sdk", lazy=False)
    assert_same_lines(lazy, sdk)
    assert [method for method, _ in front.sdk_loads()] == ["server/discover"]


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": "2025-06-18", "capabilities": {}},  # no clientInfo
        init(capabilities=[]),
        init(protocolVersion=20250618),
        init(clientInfo={"name": "x", "version": 1}),
    ],
    ids=["no-client-info", "capabilities-list", "version-number", "client-version-number"],
)
def test_a_malformed_initialize_gets_the_sdks_own_error(tmp_path: Path, params: Any) -> None:
    answers = []
    for lazy in (True, False):
        session = Session(tmp_path / f"lazy-{lazy}", lazy=lazy)
        try:
            session.send(line(1, "initialize", params), 1)
            session.send(line(2, "tools/call", {"name": "read_graph", "arguments": {}}), 2)
        finally:
            answers.append(session.close())
        if lazy:
            assert [method for method, _ in session.sdk_loads()] == ["initialize"]
    assert_same_lines(*answers)
    assert "error" in json.loads(answers[0][0])


def test_a_schema_change_reaches_a_session_the_sdk_does_not_serve(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", NPC_SCHEMA)
    session = Session(tmp_path / "data", lazy=True, schemas=folder)
    try:
        session.send(line(1, "initialize", init()), 1)
        session.send(notification("notifications/initialized"))
        before = session.send(line(2, "tools/list"), 2)
        assert before is not None
        names = {tool["name"] for tool in before["result"]["tools"]}
        assert "add_npc" in names and "add_quest" not in names
        quest = {
            "name": "add_quest",
            "description": "Add a quest",
            "properties": {"status": {"type": "string", "description": "Where it stands"}},
        }
        write_schema(folder, "quest", quest)
        session.until("notifications/tools/list_changed")
        assert session.written[-1] == (
            b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
        )
        after = session.send(line(3, "tools/list"), 3)
        assert after is not None
        assert {tool["name"] for tool in after["result"]["tools"]} >= names | {"add_quest"}
        added = {"name": "add_quest", "arguments": {"quest": {"name": "Ring", "status": "on"}}}
        answer = session.send(line(4, "tools/call", added), 4)
        assert answer is not None and not answer["result"].get("isError"), answer
    finally:
        session.close()
    assert session.sdk_loads() == []
