"""The wire's limits on one line: nesting measured before parsing, size bounded while reading,
and how each line is classed and answered."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.config import MAX_LINE_BYTES, Settings, SettingsError
from graphmem.wire.wire_guard import leading_fields, oversized_reply, read_line
from graphmem.wire.wire_lines import LineReader, Oversized
from projections.json_depth import MAX_NESTING, nesting_exceeds

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


tricky_text = st.text(alphabet='[]{}"\\ax', max_size=8)
values = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(values, st.integers(0, 12), st.booleans())
def test_nesting_is_measured_as_a_parser_would_see_it(value: Any, limit: int, spaced: bool) -> None:
    text = json.dumps(value, indent=1 if spaced else None).encode()
    assert nesting_exceeds(text, limit) is (depth(value) > limit)


def test_a_thousand_levels_are_too_deep_and_the_deepest_real_call_is_not() -> None:
    assert nesting_exceeds(b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}")
    wide = json.dumps({"entities": [{"name": str(i), "observations": ["[["]} for i in range(500)]})
    assert not nesting_exceeds(wide.encode())
    assert not nesting_exceeds(b"[" * MAX_NESTING + b"]" * MAX_NESTING)
    assert nesting_exceeds(b"[" * (MAX_NESTING + 1))


def chunks(*parts: bytes) -> Callable[[], Awaitable[bytes]]:
    pending = list(parts)

    async def read() -> bytes:
        return pending.pop(0) if pending else b""

    return read


async def read_all(reader: LineReader) -> list[bytes | Oversized]:
    lines: list[bytes | Oversized] = []
    while (line := await reader.next()) is not None:
        lines.append(line)
    return lines


async def test_lines_are_split_across_any_chunking_and_the_last_needs_no_newline() -> None:
    reader = LineReader(chunks(b"a\nb", b"c\n\n", b"d"), 100)
    assert await read_all(reader) == [b"a", b"bc", b"", b"d"]


async def test_a_line_over_the_limit_is_skipped_through_its_newline_keeping_its_head() -> None:
    head = b'{"id":7,' + b"x" * 30
    reader = LineReader(chunks(head, b"y" * 50, b"z" * 50 + b"\nnext\n", b"w" * 120), 64)
    lines = await read_all(reader)
    assert lines[0] == Oversized(head + b"y" * 50, len(head) + 100)
    assert lines[1] == b"next"
    assert isinstance(lines[2], Oversized) and lines[2].size == 120
    assert isinstance(lines[0], Oversized)
    reply = oversized_reply(lines[0], 64)
    assert reply.request_id == 7 and json.loads(reply.data)["id"] == 7


async def test_a_line_just_at_the_limit_is_read() -> None:
    reader = LineReader(chunks(b"x" * 64 + b"\n" + b"y" * 65 + b"\n"), 64)
    lines = await read_all(reader)
    assert lines[0] == b"x" * 64
    assert isinstance(lines[1], Oversized) and lines[1].size == 65


def test_the_leading_members_of_a_line_are_read_without_parsing_the_rest() -> None:
    line = b' { "jsonrpc" : "2.0", "id":"a\\"b", "method":"tools/call", "params":' + b"[" * 5000
    assert leading_fields(line) == {"jsonrpc": "2.0", "id": 'a"b', "method": "tools/call"}
    assert leading_fields(b"[1]") == {}


@pytest.mark.parametrize(
    ("line", "kind", "code"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "request", None),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', "notification", None),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', "response", None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', "refused", -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', "refused", -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "refused", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "refused", -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}', "refused", -32600),
        (b'{"jsonrpc":"2.0","id":1}', "refused", -32600),
        (b"not json", "refused", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\xff"}}', "request", None),
    ],
)
def test_each_line_is_classed_and_a_refused_one_carries_its_error(
    line: bytes, kind: str, code: int | None
) -> None:
    read = read_line(line)
    assert read.kind == kind
    if code is not None:
        assert read.reply is not None
        assert json.loads(read.reply.data)["error"]["code"] == code


def test_the_line_size_limit_is_a_setting_validated_like_the_others() -> None:
    assert Settings.from_env({}).max_line_bytes == MAX_LINE_BYTES
    assert Settings.from_env({"GRAPHMEM_MAX_LINE_BYTES": "1_000"}).max_line_bytes == 1000
    with pytest.raises(SettingsError, match="GRAPHMEM_MAX_LINE_BYTES"):
        Settings.from_env({"GRAPHMEM_MAX_LINE_BYTES": "0"})
