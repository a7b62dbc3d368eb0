"""The bulk import's plan made from the reader's own structures: the entity index the reader
keeps (graphmem.memory_file), the file searched once for escapes (graphmem.memory_lines), and
relations joined to their endpoints by whole columns (graphmem.plain_import)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventstore.events import AnyEvent
from eventstore.lmdb_log import LmdbEventLog
from graphmem.memory_file import ParsedMemory, parse_memory
from graphmem.migration import ImportReport
from graphmem.plain_import import import_into_empty


def jsonl(*items: dict[str, object]) -> bytes:
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items).encode()


def entity(name: str, *observations: str) -> dict[str, object]:
    return {"type": "entity", "name": name, "entityType": "thing", "observations": [*observations]}


def relation(source: str, target: str) -> dict[str, object]:
    return {"type": "relation", "from": source, "to": target, "relationType": "knows"}


def bulk(tmp_path: Path, parsed: ParsedMemory) -> tuple[ImportReport | None, list[AnyEvent]]:
    """The bulk import of `parsed` into a fresh LMDB log, and the events the log holds."""
    log = LmdbEventLog.open(tmp_path / "data", node_id="n1")
    try:
        report = import_into_empty(
            log, parsed, batch_size=2, progress=lambda done, total: None, checkpoint=True
        )
        return report, [envelope.event for envelope in log.read_from(1)]
    finally:
        log.close()


def test_the_reader_keeps_each_entitys_index_by_name_with_a_duplicate_merged_into_the_first() -> (
    None
):
    parsed = parse_memory(jsonl(entity("a", "x"), entity("b"), entity("a", "y"), entity("c")))

    assert [record.name for record in parsed.entities] == ["a", "b", "c"]
    assert parsed.entity_index == {"a": 0, "b": 1, "c": 2}
    assert parsed.entities[0].observations == ["x", "y"]


def test_a_raw_del_in_one_line_sends_that_line_alone_to_the_tolerant_reader() -> None:
    # No backslash anywhere, but a DEL: the whole-file search says "not unescaped", so every
    # line is searched, and the one with the DEL is read tolerantly (its observation refused).
    data = jsonl(entity("a", "fine"), entity("b", "bad\x7f"), entity("c", "fine"))
    assert b"\\" not in data

    parsed = parse_memory(data)

    assert [(r.name, r.observations) for r in parsed.entities] == [
        ("a", ["fine"]),
        ("b", []),
        ("c", ["fine"]),
    ]
    assert [(p.line, "U+007F" in p.reason) for p in parsed.problems] == [(2, True)]


def test_relations_to_missing_entities_are_reported_in_file_order_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    data = jsonl(
        entity("a"),
        entity("b"),
        relation("a", "ghost"),
        relation("a", "b"),
        relation("nobody", "b"),
        relation("b", "a"),
    )

    report, _ = bulk(tmp_path, parse_memory(data))

    assert report is not None
    assert report.relations_created == 2
    assert [(p.line, p.reason) for p in report.problems] == [
        (3, "relation to missing entity 'ghost'; not imported"),
        (5, "relation to missing entity 'nobody'; not imported"),
    ]


def test_a_parsed_file_made_without_the_readers_index_imports_as_the_read_one_does(
    tmp_path: Path,
) -> None:
    data = jsonl(entity("a", "x"), entity("b"), relation("a", "b"), relation("b", "ghost"))
    read = parse_memory(data)
    by_hand = ParsedMemory(
        format=read.format,
        entities=list(read.entities),
        relations=list(read.relations),
        problems=list(read.problems),
    )

    from_reader, log_from_reader = bulk(tmp_path / "read", read)
    from_hand, log_from_hand = bulk(tmp_path / "hand", by_hand)

    assert from_hand == from_reader
    assert from_reader is not None
    assert from_reader.relations_created == 1
    # The same events (their stamps aside: each log has its own clock readings).
    assert log_from_hand == log_from_reader
    assert len(log_from_reader) == 4


def test_a_parsed_file_made_by_hand_with_an_entity_twice_is_refused_not_imported_wrong(
    tmp_path: Path,
) -> None:
    read = parse_memory(jsonl(entity("a", "x"), entity("b")))
    twice = ParsedMemory(entities=[*read.entities, read.entities[0]])

    with pytest.raises(ValueError, match="each entity once"):
        bulk(tmp_path, twice)
