"""The fast path for plain JSONL lines (graphmem.memory_lines) reads a file exactly as the
tolerant reader alone does: the same records, merged the same way, and the same problems with
the same line numbers, whatever the lines hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import memory_file
from graphmem.limits import InputLimits
from graphmem.memory_file import ParsedMemory, parse_memory
from graphmem.memory_lines import EntityLine, RelationLine, plain_record

LIMITS = InputLimits()


def tolerant_only(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ParsedMemory:
    """The file read with every line sent to the tolerant reader."""
    with monkeypatch.context() as patched:
        patched.setattr(memory_file, "plain_record", lambda raw, **_: None)
        patched.setattr(memory_file, "plain_records", lambda lines, **_: None)
        patched.setattr(memory_file, "whole_file_records", lambda data, **_: None)
        return parse_memory(data)


def read_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast, tolerant = parse_memory(data), tolerant_only(data, monkeypatch)
    shown = [
        (
            p.format,
            [(e.where, e.line, e.name, e.entity_type, e.observations) for e in p.entities],
            [(r.where, r.line, r.key, r.weight) for r in p.relations],
            [(str(x), x.line) for x in p.problems],
        )
        for p in (fast, tolerant)
    ]
    return shown[0], shown[1]


# Names and texts that come near every rule: control characters (allowed and not), DEL,
# escapes, quotes, non-ASCII, a lone surrogate, lengths at and past the limits.
_AWKWARD = st.sampled_from(
    [
        "",
        "plain",
        'with "quotes"',
        "tab\there",
        "two\nlines",
        "cr\rhere",
        "nul\x00",
        "bell\x07",
        "del\x7f",
        "zoë 🎉",
        "\ud800",
        "n" * LIMITS.max_name_chars,
        "n" * (LIMITS.max_name_chars + 1),
        "o" * (LIMITS.max_content_chars + 1),
        "back\\slash",
    ]
)
_TEXT = _AWKWARD | st.text(max_size=8)
# Mostly valid values, so that most lines are plain and a single awkward value decides.
_NAME = st.sampled_from(["A", "B", "zoë"]) | _TEXT
_FINE = st.sampled_from(["plain", 'with "quotes"', "tab\there", "two\nlines", "🎉"]) | _TEXT
_VALUE: Any = _TEXT | st.integers() | st.none() | st.lists(_TEXT, max_size=3)


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["entity"] * 4 + ["relation"] * 2 + ["node", "other", "raw"]))
    if kind == "raw":
        return draw(st.binary(max_size=30)).replace(b"\n", b" ")
    if kind == "entity":
        item: dict[str, Any] = {
            "type": "entity",
            "name": draw(_NAME),
            "entityType": draw(_NAME),
            "observations": draw(st.lists(_FINE, max_size=3) | _VALUE),
        }
    elif kind == "relation":
        item = {
            "type": "relation",
            "from": draw(_NAME),
            "to": draw(st.sampled_from(["A", "B"])),
            "relationType": draw(_NAME),
        }
    elif kind == "node":
        item = {"type": "node", "name": draw(_TEXT), "nodeType": "t", "metadata": []}
    else:
        item = {"type": draw(_VALUE)}
    if draw(st.integers(0, 3)) == 3:  # a field dropped, or one added (hypothesis favours 0)
        item.pop(draw(st.sampled_from(sorted(item))))
    if draw(st.integers(0, 3)) == 3:
        item[draw(st.sampled_from(["extra", "type", "name", "from"]))] = draw(_VALUE)
    return json.dumps(item, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None)
@given(st.lists(_line(), min_size=1, max_size=8))
def test_the_fast_path_reads_any_file_as_the_tolerant_reader_alone_does(
    lines: list[bytes],
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, tolerant = read_both(b"\n".join(lines), monkeypatch)

    assert fast == tolerant


def test_plain_official_lines_take_the_fast_path() -> None:
    entity = b'{"type":"entity","name":"A","entityType":"t","observations":["x \\"y\\"\\nz"]}'
    relation = b'{"type":"relation","from":"A","to":"B","relationType":"knows"}'

    assert plain_record(entity) == EntityLine("A", "t", ['x "y"\nz'])
    assert plain_record(relation) == RelationLine("A", "B", "knows")


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"entity","name":"A\\u0007","entityType":"t","observations":[]}',
        b'{"type":"entity","name":"A\\n","entityType":"t","observations":[]}',
        b'{"type":"entity","name":"A\x7f","entityType":"t","observations":[]}',
        b'{"type":"entity","name":"A","entityType":"t","observations":["\\ud800"]}',
        b'{"type":"entity","name":"A","entityType":"t","observations":[],"extra":1}',
        b'{"type":"entity","name":"A","entityType":"t"}',
        b'{"type":"relation","from":"A","to":"B","relationType":"r","weight":0.5}',
        b'{"type":"entity","name":"A","entityType":"t","observations":[],"type":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}",
    ],
    ids=["bell", "newline-in-name", "del", "lone-surrogate", "extra", "missing", "weight", "deep"],
)
def test_a_line_the_fast_path_is_not_sure_of_goes_to_the_tolerant_reader(line: bytes) -> None:
    assert plain_record(line) is None


def line_by_line(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ParsedMemory:
    """The file read as before the whole-file path: each line tried by the fast path alone."""
    with monkeypatch.context() as patched:
        patched.setattr(memory_file, "plain_records", lambda lines, **_: None)
        patched.setattr(memory_file, "whole_file_records", lambda data, **_: None)
        return parse_memory(data)


def lines_mapped(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ParsedMemory:
    """The file read with the lines cut and mapped (`plain_records`), never decoded whole."""
    with monkeypatch.context() as patched:
        patched.setattr(memory_file, "whole_file_records", lambda data, **_: None)
        return parse_memory(data)


def shown(parsed: ParsedMemory) -> Any:
    return (
        parsed.format,
        [(e.where, e.line, e.name, e.entity_type, e.observations) for e in parsed.entities],
        [(r.where, r.line, r.key, r.weight) for r in parsed.relations],
        [(str(x), x.line) for x in parsed.problems],
        parsed.entity_index,
    )


# Mostly plain official lines over a few names, so that repeats are common; now and then a
# value that makes its line suspect (an escape, a long text) or refused, a blank line, or a
# line that is not a record at all.
_FEW = st.sampled_from(["A", "B", "C", "zoë"])
_PLAIN_TEXT = st.sampled_from(["x", "y", 'said "hi"', "tab\there", "🎉"]) | _AWKWARD


@st.composite
def _plain_line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["entity"] * 5 + ["relation"] * 4 + ["blank", "raw", "odd"]))
    if kind == "blank":
        return draw(st.sampled_from([b"", b"  ", b"\r"]))
    if kind == "raw":
        return draw(st.sampled_from([b"{", b"[]", b'{"type":"entity"}', b"\xff"]))
    if kind == "odd":
        # What a reader of whitespace-separated values would take for records: two records
        # on one line, one across two lines (the next starting with a string), one indented.
        first, second = draw(_plain_line()), draw(_plain_line())
        how = draw(st.sampled_from(["two", "across", "indented"]))
        if how == "two":
            return first + b" " + second
        if how == "across":
            return first.replace(b", ", b",\n", 1).replace(b",", b",\n", 1)
        return b" " + first
    if kind == "entity":
        item: dict[str, Any] = {
            "type": "entity",
            "name": draw(_FEW | _AWKWARD),
            "entityType": draw(st.sampled_from(["t", "u"])),
            "observations": draw(st.lists(_PLAIN_TEXT, max_size=3)),
        }
    else:
        item = {
            "type": "relation",
            "from": draw(_FEW),
            "to": draw(_FEW),
            "relationType": draw(st.sampled_from(["knows", "r"]) | _AWKWARD),
        }
    return json.dumps(item, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


@settings(max_examples=500, deadline=None)
@given(
    st.lists(_plain_line(), min_size=1, max_size=12),
    st.sampled_from([b"", b"\n", b"\n\n", b"\r\n"]),
    st.sampled_from([b"\n", b"\r\n"]),
)
def test_a_file_read_whole_is_read_as_line_by_line_and_as_the_tolerant_reader_reads_it(
    lines: list[bytes], end: bytes, separator: bytes
) -> None:
    data = separator.join(lines) + end
    with pytest.MonkeyPatch.context() as monkeypatch:
        whole = shown(parse_memory(data))
        assert whole == shown(lines_mapped(data, monkeypatch))
        assert whole == shown(line_by_line(data, monkeypatch))
        tolerant = shown(tolerant_only(data, monkeypatch))
    assert whole[:4] == tolerant[:4]


def test_an_official_file_is_read_whole_with_its_line_numbers() -> None:
    data = (
        b'{"type":"entity","name":"A","entityType":"t","observations":["x","x"]}\n'
        b'{"type":"relation","from":"A","to":"B","relationType":"knows"}\n'
        b'{"type":"entity","name":"B","entityType":"t","observations":[]}\n'
    )
    with pytest.MonkeyPatch.context() as monkeypatch:
        # Read whole and without repeats, no record goes to the builder one by one.
        monkeypatch.setattr(memory_file._Builder, "keep_plain", _never)
        parsed = parse_memory(data)

    assert [(e.line, e.name, e.observations) for e in parsed.entities] == [
        (1, "A", ["x", "x"]),
        (3, "B", []),
    ]
    assert [(r.where, r.key) for r in parsed.relations] == [("line 2", ("A", "B", "knows"))]
    assert parsed.entity_index == {"A": 0, "B": 1}
    assert parsed.problems == []


def _never(*args: object) -> None:
    raise AssertionError(f"read record by record: {args!r}")


_A = b'{"type":"entity","name":"A","entityType":"t","observations":["x"]}'
_B = b'{"type":"entity","name":"B","entityType":"t","observations":[]}'
_R = b'{"type":"relation","from":"A","to":"B","relationType":"knows"}'


@pytest.mark.parametrize(
    "data",
    [
        b"\n" + _A + b" " + _B,
        b" \n" + _A + b" " + _B + b"\n",
        _A + b" " + _B + b"\n" + _R.replace(b",", b",\n", 1),
        _A + b"\n\n" + _B + b" " + _R,
        _A + b"\n" + _B + b"\n" + _R + b"\n\n",
        b" " + _A + b"\n" + _R,
        _A + b"\r\n" + _R + b"\r\n",
    ],
    ids=[
        "blank-first-then-two",
        "space-first-then-two",
        "two-then-across",
        "blank-then-two",
        "two-trailing-breaks",
        "indented-first",
        "crlf",
    ],
)
def test_lines_a_whole_file_decoder_could_miscount_are_read_as_line_by_line(data: bytes) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert shown(parse_memory(data)) == shown(line_by_line(data, monkeypatch))
