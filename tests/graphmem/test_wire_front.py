"""The stdio front's copies of the SDK (graphmem.protocol, graphmem.wire.initialize_answer)
agree with the installed SDK, and the handshake-era path runs without importing it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import types
from mcp.server.runner import ServerRunner
from mcp.shared import dispatcher
from mcp_types import methods
from mcp_types import version as sdk_version
from pydantic import ValidationError

from graphmem import protocol
from graphmem.wire.initialize_answer import plain_initialize
from graphmem.wire.sdk_calls import failure

TRICKY_TEXT = ["plain", "é 🚀 日本語", 'quote " back \\ slash', "\n\t\x00\x1f\x7f", "\u2028\u2029"]


def test_the_protocol_facts_are_the_installed_sdks() -> None:
    assert protocol.HANDSHAKE_PROTOCOL_VERSIONS == sdk_version.HANDSHAKE_PROTOCOL_VERSIONS
    assert protocol.MODERN_PROTOCOL_VERSIONS == sdk_version.MODERN_PROTOCOL_VERSIONS
    assert protocol.LATEST_HANDSHAKE_VERSION == sdk_version.LATEST_HANDSHAKE_VERSION
    assert protocol.PROTOCOL_VERSION_META_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert protocol.SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY


@pytest.mark.parametrize("value", [7, "7", "x", True, None, 1.5, -3, "007", {"a": 1}])
def test_request_ids_are_read_and_correlated_as_the_sdk_does(value: Any) -> None:
    assert protocol.as_request_id(value) == dispatcher.as_request_id(value)
    if dispatcher.as_request_id(value) is not None:
        assert protocol.coerce_request_id(value) == dispatcher.coerce_request_id(value)


@pytest.mark.parametrize("message", TRICKY_TEXT)
@pytest.mark.parametrize("request_id", [None, 1, "a", -(2**63)])
def test_an_error_line_is_the_sdks_bytes(request_id: Any, message: str) -> None:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=-32600, message=message)
    )
    sdk = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    assert protocol.error_line(request_id, -32600, message) == sdk


@pytest.mark.parametrize("message", TRICKY_TEXT)
def test_a_handshake_era_handler_failure_is_the_sdks_error_line(message: str) -> None:
    sdk = failure(5, "2025-06-18", RuntimeError(message)).message
    assert protocol.error_line(5, 0, message) == sdk.model_dump_json(
        by_alias=True, exclude_unset=True
    ).encode("utf-8")


def _sdk_negotiates(params: Any) -> str | None:
    """The version the SDK agrees for these params; None when it refuses them."""
    try:
        methods.validate_client_request("initialize", sdk_version.LATEST_HANDSHAKE_VERSION, params)
        _, negotiated = ServerRunner._negotiate_initialize(params)
    except (ValidationError, ValueError, KeyError):
        return None
    return negotiated


CLIENT = {"name": "host", "version": "1.0"}
PLAIN = [
    {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
    for version in [*sdk_version.HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01", ""]
] + [
    {"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": info}
    for capabilities, info in [
        ({"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}, CLIENT),
        ({"roots": {}}, {**CLIENT, "title": "Host"}),
        ({"experimental": {"x": {"a": [1]}}}, CLIENT),
    ]
]
LEFT_TO_THE_SDK = [
    None,
    {},
    {"protocolVersion": "2025-06-18", "capabilities": {}},  # no clientInfo
    {"protocolVersion": "2025-06-18", "clientInfo": CLIENT},  # no capabilities
    {"protocolVersion": 20250618, "capabilities": {}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": CLIENT},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {**CLIENT, "version": 1}},
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": "yes"}},
        "clientInfo": CLIENT,
    },
    {"protocolVersion": "2025-06-18", "capabilities": {"tasks": {}}, "clientInfo": CLIENT},
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {"sampling": {"tools": {}}},
        "clientInfo": CLIENT,
    },
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT, "_meta": {}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {**CLIENT, "icons": []}},
]


@pytest.mark.parametrize("params", PLAIN, ids=json.dumps)
def test_a_plain_initialize_is_agreed_at_the_version_the_sdk_agrees(params: Any) -> None:
    agreed = plain_initialize(params)
    assert agreed is not None
    assert agreed == _sdk_negotiates(params)


@pytest.mark.parametrize("params", LEFT_TO_THE_SDK, ids=json.dumps)
def test_an_initialize_the_front_is_not_sure_of_is_left_to_the_sdk(params: Any) -> None:
    assert plain_initialize(params) is None


# A fresh interpreter: the handshake era's wire, fast path and front, and a failing call.
WITHOUT_SDK = """
import asyncio, sys
from eventstore.events import Cause
from graphmem.wire import stdio_transport, stdio_wire, front, initialize_answer
from graphmem.wire.fast_calls import FastCall, FastCalls

async def failing(name, arguments, cause):
    raise RuntimeError(sys.argv[1])

answer = asyncio.run(FastCalls(failing).answer(FastCall(5, "t", {}, "2025-06-18", None)))
loaded = sorted(m for m in ("mcp", "mcp_types", "pydantic", "pydantic_core") if m in sys.modules)
with open(sys.argv[2], "wb") as out:  # stdout carries the failure's log line
    out.write(answer + b"\\n" + " ".join(loaded).encode())
"""


def test_the_handshake_eras_wire_and_a_failing_call_need_no_sdk(tmp_path: Path) -> None:
    message = "boom é \n"
    out = tmp_path / "answer"
    subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK, message, str(out)],
        capture_output=True,
        timeout=120,
        check=True,
    )
    answer, loaded = out.read_bytes().rsplit(b"\n", 1)
    assert loaded == b""
    sdk = failure(5, "2025-06-18", RuntimeError(message)).message
    assert answer == sdk.model_dump_json(by_alias=True, exclude_unset=True).encode()
