"""Which tool calls the stdio fast path takes, and which it leaves to the SDK."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from mcp.server.lowlevel import Server

from eventstore.events import Cause
from graphmem.tools.base import ToolOutcome
from graphmem.wire.fast_calls import FastCall, FastCalls, SessionView

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "1"},
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "legacy-client", "version": "1"},
}


async def never_called(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
    raise AssertionError("not run in these tests")


class Fast:
    """The fast path, handed each line as the wire hands it: decoded, when it decodes."""

    def __init__(self) -> None:
        self.calls = FastCalls(never_called, Server("test", version="1"))

    def take(self, line: bytes, session: SessionView) -> FastCall | None:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:  # the wire leaves such a line to the SDK's parser
            return None
        return self.calls.take(message, session)

    def encode(self, request_id: int | str, outcome: ToolOutcome, version: str) -> bytes:
        return self.calls.encode(request_id, outcome, version)


def fast() -> Fast:
    return Fast()


def call_line(request_id: object = 7, **params: Any) -> str:
    body = {"name": "read_graph", "arguments": {}, **params}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body})


def initialized() -> SessionView:
    session = SessionView()
    session.saw_request("initialize", 1, INIT)
    session.saw_answer(1, {"protocolVersion": "2025-06-18"})
    return session


def test_a_plain_call_on_an_initialized_session_is_taken_with_the_client_named() -> None:
    call = fast().take(call_line().encode(), initialized())
    assert call is not None
    assert (call.request_id, call.name, call.arguments) == (7, "read_graph", {})
    assert (call.version, call.client) == ("2025-06-18", "legacy-client")


def test_no_call_is_taken_before_the_handshake_is_answered() -> None:
    session = SessionView()
    assert fast().take(call_line().encode(), session) is None  # era not decided
    session.saw_request("initialize", 1, INIT)
    assert session.era == "legacy"
    assert fast().take(call_line().encode(), session) is None  # initialize unanswered
    session.saw_answer(1, None)  # an error
    assert fast().take(call_line().encode(), session) is None  # refused: still not initialized


def test_a_second_initialize_holds_calls_back_until_it_is_answered() -> None:
    session = initialized()
    session.saw_request("initialize", "again", {**INIT, "protocolVersion": "2024-11-05"})
    assert fast().take(call_line().encode(), session) is None
    session.saw_answer("again", {"protocolVersion": "2024-11-05"})
    call = fast().take(call_line().encode(), session)
    assert call is not None and call.version == "2024-11-05"


@pytest.mark.parametrize(
    "line",
    [
        call_line(_meta={"progressToken": 1}),  # progress: the SDK's
        call_line(_meta=ENVELOPE),  # the other era's envelope: refused by the SDK
        call_line(arguments=None),
        call_line(arguments=[1]),
        call_line(name=3),
        call_line(task={"ttl": 1}),
        call_line(request_id=True),
        call_line(request_id=1.5),
        call_line(request_id=2**70),
        call_line(request_id=None),
        call_line().replace('"2.0"', '"1.0"'),
        call_line().replace('"tools/call"', '"tools/list"'),
        call_line().replace('"params"', '"extra": 1, "params"'),
        call_line().replace("read_graph", "read_graph \\ud800"),  # a lone surrogate
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call"}',
        '["tools/call"]',
        "not json tools/call",
    ],
)
def test_anything_unusual_is_left_to_the_sdk(line: str) -> None:
    assert fast().take(line.encode(), initialized()) is None


def modern_session() -> SessionView:
    session = SessionView()
    session.saw_request("server/discover", 1, {"_meta": ENVELOPE})
    return session


def test_a_modern_call_is_taken_with_its_envelope_read_as_the_sdk_reads_it() -> None:
    session = modern_session()
    assert session.era == "modern"
    call = fast().take(call_line(_meta=ENVELOPE).encode(), session)
    assert call is not None
    assert (call.version, call.client) == ("2026-07-28", "modern-client")
    anonymous = {k: v for k, v in ENVELOPE.items() if "clientInfo" not in k}
    call = fast().take(call_line(_meta=anonymous).encode(), session)
    assert call is not None and call.client is None


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2025-06-18"},
        {k: v for k, v in ENVELOPE.items() if "Capabilities" not in k},
        {**ENVELOPE, "progressToken": "p"},
    ],
)
def test_a_modern_call_the_sdk_might_refuse_is_left_to_it(meta: dict[str, Any] | None) -> None:
    line = call_line() if meta is None else call_line(_meta=meta)
    assert fast().take(line.encode(), modern_session()) is None


def test_answers_are_shaped_per_protocol_version() -> None:
    outcome = ToolOutcome(texts=["t"], structured={"a": None}, is_error=True)
    legacy = json.loads(fast().encode(3, outcome, "2025-06-18"))
    assert legacy == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "content": [{"text": "t", "type": "text"}],
            "isError": True,
            "structuredContent": {"a": None},
        },
    }
    modern = json.loads(fast().encode(3, outcome, "2026-07-28"))["result"]
    assert list(modern) == ["content", "isError", "resultType", "structuredContent", "_meta"]
    assert modern["_meta"] == {
        "io.modelcontextprotocol/serverInfo": {"name": "test", "version": "1"}
    }
