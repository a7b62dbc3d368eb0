"""The transcript parser on anything (contract §8.16): it never raises, whatever bytes a line
holds; the page through a transcript by next_offset returns every selected message exactly
once, in order; and reading line by line from a file answers as the lines do in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from graphmem.intake import Message, Page, read_lines, read_transcript

_json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=12)}),
    st.fixed_dictionaries({"type": st.sampled_from(["tool_use", "tool_result", "thinking"])}),
    _json,
)
_line_object = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["user", "assistant", "system", "summary", "attachment", "x"])
        | _json,
        "message": st.fixed_dictionaries(
            {},
            optional={
                "role": st.sampled_from(["user", "assistant", "system", "tool"]) | _json,
                "content": st.text(max_size=12) | st.lists(_block, max_size=4) | _json,
            },
        )
        | _json,
        "isMeta": st.booleans() | _json,
        "sessionId": _json,
        "cwd": _json,
        "uuid": _json,
        "parentUuid": _json,
        "timestamp": st.sampled_from(["2026-11-01T10:00:00Z", "2026-11-02", "soon"]) | _json,
    },
)
_line = st.one_of(
    st.binary(max_size=40),
    _line_object.map(msgspec.json.encode),
    _json.map(msgspec.json.encode),
    st.just(b"   \n"),
)


@given(st.lists(_line, max_size=30), st.booleans(), st.integers(0, 5), st.integers(1, 5))
def test_the_parser_never_raises_on_any_line(
    lines: list[bytes], text_only: bool, offset: int, limit: int
) -> None:
    reader = read_lines(lines, Page(text_only=text_only, offset=offset, limit=limit))
    value = reader.value()
    msgspec.json.encode(value)  # the answer is JSON
    assert value["line_count"] == sum(1 for line in lines if line.strip())
    assert len(value["messages"]) <= limit
    assert value["text_message_count"] <= value["message_count"] <= value["line_count"]


def _message_line(text: str, meta: bool, day: int, n: int) -> bytes:
    line: dict[str, Any] = {
        "type": "user" if n % 2 else "assistant",
        "sessionId": "s",
        "uuid": f"m{n}",
        "timestamp": f"2026-11-{day:02d}T00:00:00Z",
        "message": {"content": text},
    }
    if meta:
        line["isMeta"] = True
    return msgspec.json.encode(line)


_messages = st.lists(
    st.tuples(st.sampled_from(["", " ", "hello"]), st.booleans(), st.integers(1, 9)),
    max_size=40,
)


@given(_messages, st.booleans(), st.none() | st.integers(1, 9), st.integers(1, 7))
def test_paging_by_next_offset_returns_every_selected_message_exactly_once(
    messages: list[tuple[str, bool, int]], text_only: bool, since_day: int | None, limit: int
) -> None:
    lines = [_message_line(text, meta, day, n) for n, (text, meta, day) in enumerate(messages)]
    since = None if since_day is None else 1_793_491_200_000 + (since_day - 1) * 86_400_000

    def page(offset: int, size: int) -> tuple[list[Message], int | None]:
        reader = read_lines(lines, Page(text_only, since, offset, size))
        return reader.messages, reader.next_offset

    everything, rest = page(0, 10_000)
    assert rest is None
    paged: list[Message] = []
    offset: int | None = 0
    while offset is not None:
        found, offset = page(offset, limit)
        assert found or offset is None
        paged.extend(found)
    assert paged == everything
    expected = [
        f"m{n}"
        for n, (text, meta, day) in enumerate(messages)
        if (not text_only or (text.strip() and not meta)) and (since_day is None or day > since_day)
    ]
    assert [m.uuid for m in everything] == expected


@given(st.lists(_line, max_size=20))
def test_reading_a_file_answers_as_its_lines_do(tmp_path_factory: Any, lines: list[bytes]) -> None:
    path: Path = tmp_path_factory.mktemp("t") / "s.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    from_file = read_transcript(path, Page(text_only=False)).value()
    in_memory = read_lines(path.read_bytes().split(b"\n"), Page(text_only=False)).value()
    assert from_file == in_memory
