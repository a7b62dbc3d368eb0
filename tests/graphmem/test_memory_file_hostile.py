"""Reading a hostile memory file: every bad line is a problem with its line number, the rest
reads, and nothing raises but a clear MemoryFileError for a file that is wholly unusable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.memory_file import MemoryFileError, ParsedMemory, parse_memory

DEEP = b"[" * 1000 + b"]" * 1000
HUGE_NUMBER = b"1" * 4301


def entity(name: str) -> bytes:
    item = {"type": "entity", "name": name, "entityType": "t", "observations": ["x"]}
    return json.dumps(item).encode()


def reasons(parsed: ParsedMemory) -> dict[int | None, str]:
    return {p.line: p.reason for p in parsed.problems}


def test_a_line_nested_1000_deep_is_a_problem_of_that_line_and_the_rest_reads() -> None:
    parsed = parse_memory(
        b"\n".join([entity("A"), b'{"params":{"x":' + DEEP + b"}}", DEEP, entity("B")])
    )

    assert [e.name for e in parsed.entities] == ["A", "B"]
    assert reasons(parsed) == {
        2: "not imported: arrays and objects nest more than 64 levels deep (the limit)",
        3: "not imported: arrays and objects nest more than 64 levels deep (the limit)",
    }


def test_a_number_of_4301_digits_is_a_problem_of_that_line_and_the_rest_reads() -> None:
    line = b'{"type":"entity","name":' + HUGE_NUMBER + b',"entityType":"t","observations":[]}'
    parsed = parse_memory(b"\n".join([entity("A"), line, entity("B")]))

    assert [e.name for e in parsed.entities] == ["A", "B"]
    assert reasons(parsed) == {2: "not imported: a number has 4,301 digits; the limit is 4,300"}


@pytest.mark.parametrize("hostile", [DEEP, b'{"type":"entity","name":' + HUGE_NUMBER + b"}"])
def test_a_hostile_first_line_does_not_stop_the_lines_after_it(hostile: bytes) -> None:
    parsed = parse_memory(b"\n".join([hostile, entity("A")]))

    assert [e.name for e in parsed.entities] == ["A"]
    assert list(reasons(parsed)) == [1]


def test_a_first_line_opening_an_object_that_a_deep_line_continues_reads_line_by_line() -> None:
    parsed = parse_memory(b"\n".join([b'{"a":', DEEP, entity("A")]))

    assert [e.name for e in parsed.entities] == ["A"]
    assert list(reasons(parsed)) == [1, 2]


def test_an_unknown_type_that_is_a_deep_array_is_named_by_its_kind() -> None:
    line = b'{"type":' + b"[" * 60 + b"]" * 60 + b"}"
    parsed = parse_memory(b"\n".join([line, entity("A")]))

    assert reasons(parsed) == {
        1: "unknown type an array: only entities and relations (nodes and edges) import"
    }


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"[" * 5000 + b"]" * 5000, "nest more than 64 levels deep"),
        (HUGE_NUMBER, "a number has 4,301 digits"),
    ],
)
def test_a_legacy_document_refused_for_its_shape_is_one_clear_error(
    value: bytes, reason: str
) -> None:
    document = json.dumps(
        {"entities": [{"name": "A", "entityType": "t", "observations": [], "x": "HERE"}]},
        indent=2,
    ).encode()

    with pytest.raises(MemoryFileError, match=reason) as raised:
        parse_memory(document.replace(b'"HERE"', value))
    assert str(raised.value).startswith("cannot import this JSON document: ")
    assert "\n" not in str(raised.value)


def test_nul_bytes_invalid_utf8_a_top_level_array_and_a_huge_line_are_line_problems() -> None:
    huge = b'{"type":"entity","name":"' + b"n" * 3_000_000 + b'","entityType":"t"}'
    lines = [b"\x00\x00", b'{"type":"entity","name":"\x00"}', b"\xc3\x28", b"[1,2]", huge]
    parsed = parse_memory(b"\n".join([*lines, entity("A")]))

    assert [e.name for e in parsed.entities] == ["A"]
    found = reasons(parsed)
    assert list(found) == [1, 2, 3, 4, 5]
    assert found[1].startswith("not valid JSON")
    assert found[2].startswith("not valid JSON (Invalid control character")
    assert found[3] == "not valid UTF-8 (byte 1)"
    assert found[4] == "is an array, not an object"
    assert found[5].startswith("name is 3,000,000 characters long; the limit is")


# --- the property --------------------------------------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_JSON: Any = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@st.composite
def _hostile_lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["deep", "unclosed", "number", "float", "json", "bytes"]))
    depth = draw(st.integers(65, 3000))
    if kind == "deep":
        return b'{"type":"entity","x":' + b"[" * depth + b"]" * depth + b"}"
    if kind == "unclosed":
        return b"{" * depth
    if kind == "number":
        return b'{"name":' + b"7" * draw(st.integers(4301, 9000)) + b"}"
    if kind == "float":
        return b"[" + b"9" * draw(st.integers(309, 2000)) + b".0]"
    if kind == "json":
        return json.dumps(draw(_JSON)).encode()
    return draw(st.binary(max_size=40)).replace(b"\n", b" ")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), _hostile_lines()), min_size=1, max_size=8),
    st.booleans(),
)
def test_reading_never_raises_and_every_line_is_a_record_or_a_problem(
    lines: list[tuple[bool, bytes]], crlf: bool
) -> None:
    # Good entity lines (at least one) interleaved with hostile ones.
    raw = [entity(f"e{n}") if good else line for n, (good, line) in enumerate(lines)]
    raw.append(entity("last"))
    parsed = parse_memory((b"\r\n" if crlf else b"\n").join(raw))

    wanted = [f"e{n}" for n, (good, _) in enumerate(lines) if good] + ["last"]
    names = [e.name for e in parsed.entities]
    assert [name for name in names if name in set(wanted)] == wanted
    accounted = {p.line for p in parsed.problems}
    accounted |= {e.line for e in parsed.entities} | {r.line for r in parsed.relations}
    for number, line in enumerate(raw, start=1):
        # A byte order mark opening the file marks its encoding only.
        content = line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line
        assert not content.strip() or number in accounted, (number, line[:80])
    for problem in parsed.problems:
        assert "\n" not in str(problem) and len(str(problem)) < 500


def test_a_line_of_unicode_space_that_is_not_json_whitespace_is_reported_not_skipped() -> None:
    # str.strip() takes U+001C..U+001F for space; JSON does not, and neither does the reader.
    parsed = parse_memory(entity("a") + b"\n\x1c\n \t\r\n")

    assert [e.name for e in parsed.entities] == ["a"]
    assert [p.line for p in parsed.problems] == [2]
