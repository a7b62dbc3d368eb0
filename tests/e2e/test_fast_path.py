"""The stdio fast path for tool calls (graphmem.wire.fast_calls) puts on the wire exactly what the
SDK's pipeline would: the same transcript, sent to a server with the fast path and to one
without (GRAPHMEM_FAST_CALLS=0), gets byte-identical stdout in both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_stdio import RawServer

READ_TIMEOUT = 60.0
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "0"},
}


class Transcript:
    """A graphmem process driven line by line: each request waits for its answer, and every
    line the server writes is kept, notifications included, in the order written."""

    def __init__(self, data_dir: Path, *, fast: bool) -> None:
        self.server = RawServer(
            data_dir, "INFO", timeout=READ_TIMEOUT, GRAPHMEM_FAST_CALLS="1" if fast else "0"
        )
        self.written: list[bytes] = []

    def send(self, line: bytes, answer_id: object = None) -> bytes | None:
        """Write `line`; with `answer_id`, read until that request's answer and return it."""
        self.server.send_bytes(line)
        while answer_id is not None:
            received = self.server.read_line()
            self.written.append(received)
            message = json.loads(received)
            if "method" not in message and message.get("id") == answer_id:
                return received
        return None

    def close(self) -> list[bytes]:
        assert self.server.close() == 0
        while not self.server.lines.empty():
            self.written.append(self.server.lines.get_nowait())
        return self.written

    def logged(self, event: str) -> bool:
        return any(json.loads(line).get("event") == event for line in self.server.stderr)


def line(request_id: object, method: str, params: Any = None, **extra: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    message.update(extra)
    return json.dumps(message, ensure_ascii=False).encode()


def notification(method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def calls(meta: dict[str, Any] | None) -> Iterator[tuple[bytes, object]]:
    """Tool calls of every kind, as (line, id), `_meta` stamped on each when given."""

    def call(request_id: object, name: Any, arguments: Any = None, **params: Any) -> bytes:
        body: dict[str, Any] = {"name": name, **params}
        if arguments is not None:
            body["arguments"] = arguments
        if meta is not None:
            body["_meta"] = {**meta, **body.get("_meta", {})}
        return line(request_id, "tools/call", body)

    many = [entity(f"bulk-{i:04d}", f"observation {i}", "meeting") for i in range(1500)]
    # Past graph_body.IN_MEMORY_BYTES: whole-graph answers then go out in slices on the fast
    # path (escapes, non-ASCII and all), and whole from the SDK.
    wide = 'a "quoted" \\ line\nthen é 🚀 \t ' * 40
    large = [entity(f"wide-{i:04d}", f"{wide} {i}", "meeting") for i in range(1200)]
    yield call(10, "read_graph", {}), 10
    yield call(11, "create_entities", {"entities": [entity("Zoë 🚀", "日本語", 'a "quote"')]}), 11
    yield call(12, "create_entities", {"entities": [entity("Zoë 🚀")]}), 12  # nothing new
    yield (
        call(
            "str-id",
            "add_observations",
            {
                "observations": [
                    {"entityName": "Zoë 🚀", "contents": ["tab\there", "line\nbreak", "\\u00e9 é"]}
                ]
            },
        ),
        "str-id",
    )
    yield (
        call(
            13, "add_observations", {"observations": [{"entityName": "nobody", "contents": ["x"]}]}
        ),
        13,
    )  # isError
    yield call(14, "no_such_tool", {}), 14
    yield call(15, "create_entities", {"entities": "not a list"}), 15  # bad arguments
    yield (
        call(
            16,
            "create_relations",
            {"relations": [{"from": "Zoë 🚀", "to": "Zoë 🚀", "relationType": "knows"}]},
        ),
        16,
    )
    yield call(17, "read_graph"), 17  # arguments absent
    yield call(18, "search_nodes", {"query": "日本"}), 18
    yield call(19, "open_nodes", {"names": ["Zoë 🚀", "nobody"]}), 19
    yield call(20, "create_entities", {"entities": many}), 20
    yield call(24, "create_entities", {"entities": large}), 24
    yield call(21, "read_graph", {}), 21  # a large answer, written in slices
    yield call(22, "search_nodes", {"query": "meeting"}), 22
    yield call(23, "delete_entities", {"entityNames": ["bulk-0001"]}), 23
    # What the fast path leaves to the SDK; the wire must not tell either.
    yield call(30, "read_graph", {}, _meta={"progressToken": "p1"}), 30
    yield call(31, "read_graph", "not an object"), 31
    yield call(32, 42, {}), 32
    yield call(33, "read_graph", {}, extra="ignored"), 33
    yield line(34, "tools/call", {"arguments": {}}), 34
    yield line(35, "tools/call"), 35


Logged = tuple[bool, bool]  # the fast path attached, an answer written in slices


def legacy_transcript(data_dir: Path, *, fast: bool, version: str) -> tuple[list[bytes], Logged]:
    server = Transcript(data_dir, fast=fast)
    try:
        # A call before the handshake: the SDK refuses it, on both paths.
        server.send(line(1, "tools/call", {"name": "read_graph", "arguments": {}}), 1)
        init = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-legacy", "version": "0"},
        }
        server.send(line(2, "initialize", init), 2)
        server.send(notification("notifications/initialized"))
        server.send(line(3, "resources/subscribe", {"uri": "memory://knowledge-graph"}), 3)
        for sent, answer_id in calls(None):
            server.send(sent, answer_id)
        # A request in the other era's envelope is refused on a handshake connection.
        server.send(line(40, "tools/call", {"name": "read_graph", "_meta": ENVELOPE}), 40)
        server.send(line(41, "tools/list", {}), 41)
    finally:
        written = server.close()
    return written, (server.logged("fast_calls_attached"), server.logged("answer_streamed"))


def modern_transcript(data_dir: Path, *, fast: bool) -> tuple[list[bytes], Logged]:
    server = Transcript(data_dir, fast=fast)
    try:
        server.send(line(1, "server/discover", {"_meta": ENVELOPE}), 1)
        for sent, answer_id in calls(ENVELOPE):
            server.send(sent, answer_id)
        anonymous = {k: v for k, v in ENVELOPE.items() if "clientInfo" not in k}
        call = {"name": "read_graph", "arguments": {}}
        server.send(line(40, "tools/call", {**call, "_meta": anonymous}), 40)
        unsupported = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        server.send(line(41, "tools/call", {**call, "_meta": unsupported}), 41)
        server.send(line(42, "tools/call", call), 42)  # no envelope at all
        server.send(line(43, "initialize", {"protocolVersion": "2025-06-18"}), 43)
    finally:
        written = server.close()
    return written, (server.logged("fast_calls_attached"), server.logged("answer_streamed"))


def assert_same_lines(fast: list[bytes], sdk: list[bytes]) -> None:
    assert len(fast) == len(sdk)
    for i, (a, b) in enumerate(zip(fast, sdk, strict=True)):
        assert a == b, f"line {i} differs:\nfast {a[:400]!r}\nsdk  {b[:400]!r}"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2024-11-05"])
def test_handshake_era_calls_get_the_bytes_the_sdk_would_send(tmp_path: Path, version: str) -> None:
    fast, attached = legacy_transcript(tmp_path / "fast", fast=True, version=version)
    sdk, not_attached = legacy_transcript(tmp_path / "sdk", fast=False, version=version)
    assert attached == (True, True) and not_attached == (False, False)
    assert_same_lines(fast, sdk)
    assert any(b'"notifications/resources/updated"' in b for b in fast)


def test_modern_era_calls_get_the_bytes_the_sdk_would_send(tmp_path: Path) -> None:
    fast, attached = modern_transcript(tmp_path / "fast", fast=True)
    sdk, not_attached = modern_transcript(tmp_path / "sdk", fast=False)
    assert attached == (True, True) and not_attached == (False, False)
    assert_same_lines(fast, sdk)
    answer = json.loads(fast[1])
    assert answer["result"]["resultType"] == "complete"
    assert "io.modelcontextprotocol/serverInfo" in answer["result"]["_meta"]


def test_a_mutation_is_announced_before_its_answer_on_the_fast_path(tmp_path: Path) -> None:
    server = Transcript(tmp_path, fast=True)
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}}
        server.send(line(1, "initialize", {**init, "clientInfo": {"name": "x", "version": "0"}}), 1)
        server.send(notification("notifications/initialized"))
        server.send(line(2, "resources/subscribe", {"uri": "memory://knowledge-graph"}), 2)
        before = len(server.written)
        create = {"name": "create_entities", "arguments": {"entities": [entity("A")]}}
        server.send(line(3, "tools/call", create), 3)
        kinds = [json.loads(b).get("method", "answer") for b in server.written[before:]]
        assert kinds == ["notifications/resources/updated", "answer"]
    finally:
        server.close()
