"""The stdio wire under arbitrary and hostile lines (hypothesis): every request gets exactly one
well-formed answer, in the order sent, nothing else is answered, and the server survives.

One long-lived server per test, fed example after example: what one example leaves behind
(a graph, a half-read line) is part of what the next one meets.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.raw_stdio import RawServer

LINE_LIMIT = 65_536
EXAMPLES = 25
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
}
NULL = "null"  # answered with id null
NONE = "none"  # never answered


@dataclass(frozen=True)
class Sent:
    """A line and what it must get: an answer to `expect` (an id, NULL) or nothing (NONE)."""

    line: bytes
    expect: Any
    ordered: bool = True


_ids = itertools.count(1)


def fresh_id(style: int) -> int | str:
    """Unique across the test, in every shape an id may take."""
    n = next(_ids)
    return [n, f"id-{n}", -n, 2**64 + n, f"ünï-{n}"][style]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
tool_names = st.sampled_from(
    ["read_graph", "search_nodes", "open_nodes", "create_entities", "add_observations", "nope"]
)
methods = st.sampled_from(
    ["tools/call", "tools/list", "resources/list", "resources/read", "ping", "no/such/method"]
)


def dumps(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def requests(draw: st.DrawFn, meta: dict[str, Any] | None) -> Sent:
    request_id = fresh_id(draw(st.integers(0, 4)))
    method = draw(methods)
    params: dict[str, Any] = {}
    if method == "tools/call":
        arguments = draw(
            st.one_of(
                st.dictionaries(st.text(max_size=8), json_values, max_size=3),
                st.builds(
                    lambda names: {
                        "entities": [
                            {"name": n, "entityType": "t", "observations": [n]} for n in names
                        ]
                    },
                    st.lists(st.text(min_size=1, max_size=10), max_size=3),
                ),
                json_values,
            )
        )
        params = {"name": draw(tool_names), "arguments": arguments}
    elif method == "resources/read":
        params = {"uri": draw(st.sampled_from(["memory://knowledge-graph", "memory://x", ""]))}
    extra_meta = draw(st.sampled_from([{}, {"progressToken": f"p{request_id}"}]))
    if meta is not None or extra_meta:
        params["_meta"] = {**(meta or {}), **extra_meta}
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return Sent(dumps(message), request_id, ordered=method != "ping")


@st.composite
def hostile(draw: st.DrawFn) -> Sent:
    kind = draw(st.integers(0, 11))
    request_id = fresh_id(draw(st.integers(0, 4)))
    call = {"name": "read_graph", "arguments": {}}
    if kind == 0:  # an id JSON-RPC allows but MCP does not, or none JSON-RPC allows
        bad = draw(st.sampled_from([{}, {"a": 1}, True, False, 1.5, None, [1], [], 1e300]))
        return Sent(
            dumps({"jsonrpc": "2.0", "id": bad, "method": "tools/call", "params": call}), NULL
        )
    if kind == 1:  # nested past the limit, the id first
        depth = draw(st.integers(101, 3000))
        body = b'{"x":' + b"[" * depth + b"]" * depth + b"}"
        head = b'{"jsonrpc":"2.0","id":' + dumps(request_id) + b',"method":"tools/call",'
        return Sent(head + b'"params":{"name":"read_graph","arguments":' + body + b"}}", request_id)
    if kind == 2:  # nested past the limit with no readable id: answered with id null
        depth = draw(st.integers(101, 3000))
        return Sent(b'{"params":' + b"[" * depth + b"]" * depth + b"}", NULL)
    if kind == 3:  # over the size limit, the id first
        size = draw(st.integers(LINE_LIMIT, LINE_LIMIT * 3))
        head = b'{"jsonrpc":"2.0","id":' + dumps(request_id) + b',"method":"tools/call",'
        return Sent(
            head
            + b'"params":{"name":"search_nodes","arguments":{"query":"'
            + b"q" * size
            + b'"}}}',
            request_id,
        )
    if kind == 4:  # bytes that are not JSON
        junk = draw(st.binary(min_size=1, max_size=40)).replace(b"\n", b" ")
        if not junk.strip():
            return Sent(junk, NONE)
        try:
            value = json.loads(junk)
        except ValueError:
            return Sent(junk, NULL)
        return Sent(b"[]" if isinstance(value, dict) else junk, NULL)
    if kind == 5:  # a batch, or JSON that is not an object
        value = draw(
            st.one_of(
                json_values.filter(lambda v: not isinstance(v, dict)),
                st.just([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
            )
        )
        return Sent(dumps(value), NULL)
    if kind == 6:  # invalid UTF-8 inside a string, or a lone surrogate
        text = draw(st.sampled_from([b"\xff\xfe", b"\xc3", b"\\ud800", b"\\udfff x"]))
        line = (
            b'{"jsonrpc":"2.0","id":'
            + dumps(request_id)
            + b',"method":"tools/call","params":{"name":"search_nodes","arguments":{"query":"'
            + text
            + b'"}}}'
        )
        return Sent(line, request_id)
    if kind == 7:  # the wrong type where a string or an object belongs
        broken = draw(
            st.sampled_from(
                [
                    {"method": 5},
                    {"params": 5},
                    {"params": [1]},
                    {"jsonrpc": "1.0"},
                    {"jsonrpc": None},
                ]
            )
        )
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", **broken}
        return Sent(dumps(message), request_id)
    if kind == 8:  # a notification, known or not: never answered
        method = draw(
            st.sampled_from(
                ["notifications/initialized", "notifications/roots/list_changed", "notifications/x"]
            )
        )
        return Sent(dumps({"jsonrpc": "2.0", "method": method}), NONE)
    if kind == 9:  # a cancellation of a request never sent
        params = {"requestId": f"never-{request_id}"}
        return Sent(
            dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}), NONE
        )
    if kind == 10:  # a response to a request the server never made
        return Sent(dumps({"jsonrpc": "2.0", "id": f"never-{request_id}", "result": {}}), NONE)
    # an object that is neither request, notification nor response
    return Sent(dumps({"jsonrpc": "2.0", "id": request_id}), request_id)


def lines(meta: dict[str, Any] | None) -> st.SearchStrategy[list[Sent]]:
    return st.lists(st.one_of(requests(meta), hostile()), min_size=1, max_size=8)


def answers_until(server: RawServer, end_id: str, pings: set[Any]) -> Iterator[dict[str, Any]]:
    """Every answer the server writes up to the answer to `end_id` and to each of `pings`."""
    waiting = {end_id, *pings}
    while waiting:
        message = json.loads(server.read_line())
        assert message.get("jsonrpc") == "2.0", message
        if "method" in message:  # the server's own notification
            continue
        assert set(message) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), message
        if "error" in message:
            assert isinstance(message["error"]["code"], int), message
            assert isinstance(message["error"]["message"], str), message
        waiting.discard(message["id"])
        yield message


def check(server: RawServer, sent: list[Sent], n: int) -> None:
    for item in sent:
        server.send_bytes(item.line)
    end_id = f"end-{n}"
    server.send_bytes(dumps({"jsonrpc": "2.0", "id": end_id, "method": "tools/list"}))
    pings = {item.expect for item in sent if not item.ordered}
    got = list(answers_until(server, end_id, pings))
    expected = [item.expect for item in sent if item.expect != NONE and item.ordered]
    in_order = [m["id"] if m["id"] is not None else NULL for m in got if m["id"] not in pings]
    assert in_order == [*expected, end_id]
    assert sorted(map(str, (m["id"] for m in got if m["id"] in pings))) == sorted(map(str, pings))


@pytest.mark.parametrize("fast", ["1", "0"], ids=["fast-path", "sdk-only"])
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_every_request_gets_one_answer_in_order_and_the_server_survives(
    tmp_path: Path, fast: str, era: str
) -> None:
    server = RawServer(tmp_path, GRAPHMEM_FAST_CALLS=fast, GRAPHMEM_MAX_LINE_BYTES=str(LINE_LIMIT))
    examples = itertools.count()
    meta = ENVELOPE if era == "modern" else None
    try:
        if era == "handshake":
            server.initialize()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(lines(meta))
        def run(sent: list[Sent]) -> None:
            check(server, sent, next(examples))

        run()
        call = {"name": "read_graph", "arguments": {}, **({"_meta": meta} if meta else {})}
        server.send_bytes(
            dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": call})
        )
        assert "result" in server.response("last")
    finally:
        assert server.close() == 0
