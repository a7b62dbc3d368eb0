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
