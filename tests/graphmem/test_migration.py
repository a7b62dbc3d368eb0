"""Migration: the official memory file read tolerantly, imported idempotently, exported exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.commands import (
    AddObservations,
    CreateEntities,
    CreateRelations,
    EntityInput,
    ObservationInput,
    RelationInput,
)
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.migration import (
    ImportReport,
    MemoryFileError,
    ParsedMemory,
    export_jsonl,
    import_memory,
    parse_memory,
    read_memory_file,
    write_atomic,
)
from graphmem.tools.graph_values import whole_graph


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(node_id="n1"))
    yield started
    stop_actors(started)


def jsonl(*items: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(i, ensure_ascii=False) for i in items).encode()


def entity(name: str, entity_type: str = "person", *observations: str) -> dict[str, Any]:
    return {
        "type": "entity",
        "name": name,
        "entityType": entity_type,
        "observations": list(observations),
    }


def relation(from_: str, to: str, relation_type: str = "knows") -> dict[str, Any]:
    return {"type": "relation", "from": from_, "to": to, "relationType": relation_type}


def graph_of(app: App) -> dict[str, Any]:
    return app.graph.query_blocking(whole_graph)


def do_import(app: App, data: bytes, **kwargs: Any) -> ImportReport:
    return import_memory(app.graph, parse_memory(data), **kwargs)


def problems(parsed: ParsedMemory | ImportReport) -> list[str]:
    return [str(p) for p in parsed.problems]


# --- reading --------------------------------------------------------------------------------


def test_jsonl_lines_become_entities_and_relations_in_file_order() -> None:
    parsed = parse_memory(jsonl(entity("A", "person", "x"), entity("B"), relation("A", "B")))

    assert parsed.format == "jsonl"
    assert [(e.name, e.entity_type, e.observations) for e in parsed.entities] == [
        ("A", "person", ["x"]),
        ("B", "person", []),
    ]
    assert [r.key for r in parsed.relations] == [("A", "B", "knows")]
    assert [e.line for e in parsed.entities] == [1, 2]
    assert parsed.relations[0].line == 3
    assert parsed.problems == []


def test_crlf_blank_lines_and_a_byte_order_mark_are_tolerated() -> None:
    data = (
        b"\xef\xbb\xbf"
        + b"\r\n\r\n".join(
            [jsonl(entity("A")), b"   ", jsonl(entity("B")), jsonl(relation("A", "B"))]
        )
        + b"\r\n\r\n"
    )

    parsed = parse_memory(data)

    assert [e.name for e in parsed.entities] == ["A", "B"]
    assert [r.key for r in parsed.relations] == [("A", "B", "knows")]
    assert parsed.problems == []
    assert parsed.relations[0].line == 7


def test_extra_fields_are_ignored() -> None:
    line = {**entity("A", "person", "x"), "createdAt": 1, "tags": ["t"]}
    parsed = parse_memory(jsonl(line, {**relation("A", "A"), "weight": 0.5}))

    assert [(e.name, e.observations) for e in parsed.entities] == [("A", ["x"])]
    assert [r.key for r in parsed.relations] == [("A", "A", "knows")]
    assert parsed.problems == []


def test_an_unknown_type_is_reported_as_a_problem_and_the_rest_still_reads() -> None:
    parsed = parse_memory(jsonl(entity("A"), {"type": "note", "text": "hi"}, entity("B")))

    assert [e.name for e in parsed.entities] == ["A", "B"]
    assert problems(parsed) == [
        'line 2: unknown type "note": only entities and relations (nodes and edges) import'
    ]
    assert parsed.problems[0].line == 2


def test_malformed_lines_are_reported_with_their_line_numbers_and_reasons() -> None:
    lines = [
        b'{"type":"entity","name":"A","entityType":"t","observations":[]}',
        b'{"type":"entity","name":"B"',  # cut short
        b"[1, 2]",
        b'{"name":"C","entityType":"t","observations":[]}',  # no type
        b'{"type":"entity","entityType":"t","observations":[]}',  # no name
        b'{"type":"entity","name":7,"entityType":"t","observations":[]}',
        b'{"type":"relation","from":"A","relationType":"r"}',  # no to
        b'{"type":"entity","name":"D","entityType":"t","observations":["ok",3]}',
        b'{"type":"entity","name":"E","entityType":"t"}',  # no observations
        b'{"type":"entity","name":"F\\u0000","entityType":"t","observations":[]}',
        b'{"type":"entity","name":"G","entityType":"t","observations":["\\ud800"]}',
        b"\xff\xfe not utf-8",
    ]
    parsed = parse_memory(b"\n".join(lines))

    assert [(e.name, e.observations) for e in parsed.entities] == [
        ("A", []),
        ("D", ["ok"]),
        ("E", []),
        ("G", []),
    ]
    found = {p.line: p.reason for p in parsed.problems}
    assert list(found) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert found[2].startswith("not valid JSON (")
    assert "column" in found[2]
    assert found[3] == "is an array, not an object"
    assert found[4] == 'has no "type" (expected "entity" or "relation", or "node" or "edge")'
    assert found[5] == "entity has no name; the entity was not imported"
    assert found[6] == "name is a number, not a string; the entity was not imported"
    assert found[7] == "relation has no to; the relation was not imported"
    assert found[8] == (
        "observations[1] is a number, not a string; that observation was not imported"
    )
    assert "has no observations" in found[9]
    assert "control character U+0000" in found[10]
    assert "lone surrogate" in found[11]
    assert found[12].startswith("not valid UTF-8")


def test_duplicate_entity_lines_merge_their_new_observations_into_the_first() -> None:
    parsed = parse_memory(
        jsonl(entity("A", "person", "x"), entity("B"), entity("A", "robot", "x", "y", "y"))
    )

    assert [(e.name, e.entity_type, e.observations) for e in parsed.entities] == [
        ("A", "person", ["x", "y"]),
        ("B", "person", []),
    ]
    assert problems(parsed) == [
        "line 3: another entry for entity 'A' (first at line 1): 1 new observation(s) merged "
        "into it; its type 'robot' ignored for 'person'"
    ]


def test_a_repeated_relation_line_is_read_once_and_noted() -> None:
    parsed = parse_memory(jsonl(entity("A"), relation("A", "A"), relation("A", "A")))

    assert len(parsed.relations) == 1
    assert problems(parsed) == ["line 3: the same relation as line 2; imported once"]


def test_the_legacy_json_document_is_read() -> None:
    document = {
        "entities": [
            {"name": "A", "entityType": "person", "observations": ["x"]},
            {"name": "B", "entityType": "person", "observations": []},
            "junk",
        ],
        "relations": [{"from": "A", "to": "B", "relationType": "knows"}],
    }
    parsed = parse_memory(json.dumps(document, indent=2).encode())

    assert parsed.format == "legacy-json"
    assert [(e.name, e.observations) for e in parsed.entities] == [("A", ["x"]), ("B", [])]
    assert [r.key for r in parsed.relations] == [("A", "B", "knows")]
    assert problems(parsed) == ["entities[2]: is a string, not an object"]


def test_a_one_line_jsonl_file_is_not_mistaken_for_the_legacy_document() -> None:
    parsed = parse_memory(jsonl(entity("A")))

    assert parsed.format == "jsonl"
    assert [e.name for e in parsed.entities] == ["A"]


def test_an_unreadable_file_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryFileError, match=r"cannot read .*missing\.jsonl"):
        read_memory_file(tmp_path / "missing.jsonl")
    with pytest.raises(MemoryFileError, match="cannot read"):
        read_memory_file(tmp_path)


def test_an_empty_file_reads_as_an_empty_graph(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_bytes(b"")

    parsed = read_memory_file(path)

    assert (parsed.entities, parsed.relations, parsed.problems) == ([], [], [])


# --- importing ------------------------------------------------------------------------------

SAMPLE = jsonl(
    entity("Alice", "person", "works at Acme", "likes tea"),
    entity("Bob", "person"),
    entity("Acme", "company", "makes anvils"),
    relation("Alice", "Bob", "knows"),
    relation("Alice", "Acme", "works_at"),
)


def test_an_import_creates_the_file_graph_in_file_order(app: App) -> None:
    report = do_import(app, SAMPLE)

    assert graph_of(app) == {
        "entities": [
            {
                "name": "Alice",
                "entityType": "person",
                "observations": ["works at Acme", "likes tea"],
            },
            {"name": "Bob", "entityType": "person", "observations": []},
            {"name": "Acme", "entityType": "company", "observations": ["makes anvils"]},
        ],
        "relations": [
            {"from": "Alice", "to": "Bob", "relationType": "knows"},
            {"from": "Alice", "to": "Acme", "relationType": "works_at"},
        ],
    }
    assert (report.entities_created, report.observations_added, report.relations_created) == (
        3,
        3,
        2,
    )
    assert report.skipped == 0
    assert report.problems == []


def test_importing_the_same_file_twice_changes_nothing_the_second_time(app: App) -> None:
    do_import(app, SAMPLE)
    graph, position = graph_of(app), app.event_log.last_position()

    again = do_import(app, SAMPLE)

    assert graph_of(app) == graph
    assert app.event_log.last_position() == position
    assert not again.changed
    assert (again.entities_present, again.observations_present, again.relations_present) == (
        3,
        3,
        2,
    )
    assert again.skipped == 8


def test_existing_entities_get_only_the_observations_they_lack(app: App) -> None:
    app.graph.execute_blocking(
        CreateEntities(entities=[EntityInput("Alice", "human", ["likes tea", "own note"])])
    )

    report = do_import(app, SAMPLE)

    assert app.graph.query_blocking(lambda g: g.observations("Alice")) == [
        "likes tea",
        "own note",
        "works at Acme",
    ]
    assert app.graph.query_blocking(lambda g: g.entity_type("Alice")) == "human"
    assert report.entities_created == 2
    assert report.entities_present == 1
    assert report.observations_added == 2  # "works at Acme" on Alice, "makes anvils" on Acme
    assert report.observations_present == 1
    assert problems(report) == [
        "line 1: entity 'Alice' already exists with type 'human'; kept it (the file says 'person')"
    ]


def test_relations_to_missing_entities_are_reported_and_the_rest_imports(app: App) -> None:
    data = jsonl(
        entity("A"),
        relation("A", "Ghost"),
        relation("Nobody", "Ghost", "haunts"),
        entity("B"),
        relation("A", "B"),
    )

    report = do_import(app, data)

    assert graph_of(app)["relations"] == [{"from": "A", "to": "B", "relationType": "knows"}]
    assert report.relations_created == 1
    assert problems(report) == [
        "line 2: relation to missing entity 'Ghost'; not imported",
        "line 3: relation to missing entity 'Nobody' and 'Ghost'; not imported",
    ]
    assert [p.line for p in report.problems] == [2, 3]


def test_relations_may_point_at_entities_already_in_the_graph(app: App) -> None:
    app.graph.execute_blocking(CreateEntities(entities=[EntityInput("Old", "thing", [])]))

    report = do_import(app, jsonl(entity("New"), relation("New", "Old", "replaces")))

    assert report.relations_created == 1
    assert graph_of(app)["relations"] == [{"from": "New", "to": "Old", "relationType": "replaces"}]


def test_existing_relations_are_counted_as_present_not_created_again(app: App) -> None:
    app.graph.execute_blocking(
        CreateEntities(entities=[EntityInput("A", "t", []), EntityInput("B", "t", [])])
    )
    app.graph.execute_blocking(CreateRelations(relations=[RelationInput("A", "B", "knows")]))
    position = app.event_log.last_position()

    report = do_import(app, jsonl(entity("A", "t"), entity("B", "t"), relation("A", "B")))

    assert report.relations_present == 1
    assert report.relations_created == 0
    assert app.event_log.last_position() == position


def test_small_batches_import_the_same_graph_and_report_progress(app: App, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    many = jsonl(
        *(entity(f"e{i}", "t", f"o{i}") for i in range(25)),
        *(relation(f"e{i}", f"e{i + 1}") for i in range(24)),
    )

    report = do_import(app, many, batch_size=4, progress=lambda d, t: seen.append((d, t)))

    assert report.entities_created == 25
    assert report.relations_created == 24
    assert seen[0] == (0, 49)
    assert seen[-1] == (49, 49)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    other = start_actors(Settings(data_dir=tmp_path / "other"), InMemoryEventLog(node_id="n2"))
    try:
        import_memory(other.graph, parse_memory(many))
        assert graph_of(other) == graph_of(app)
    finally:
        stop_actors(other)


def test_observations_added_by_the_server_since_an_import_are_kept_on_reimport(app: App) -> None:
    do_import(app, SAMPLE)
    app.graph.execute_blocking(
        AddObservations(observations=[ObservationInput("Bob", ["new fact"])])
    )
    graph = graph_of(app)

    report = do_import(app, SAMPLE)

    assert graph_of(app) == graph
    assert not report.changed


# --- exporting ------------------------------------------------------------------------------


def test_an_empty_graph_exports_as_an_empty_file(app: App) -> None:
    assert app.graph.query_blocking(export_jsonl) == b""


def test_the_export_is_the_official_saveGraph_bytes(app: App) -> None:
    app.graph.execute_blocking(
        CreateEntities(
            entities=[
                EntityInput("Zoë", "persön", ['says "hi"', "🎉 party", "back\\slash", "a\u2028b"]),
                EntityInput("東京", "city", []),
            ]
        )
    )
    app.graph.execute_blocking(CreateRelations(relations=[RelationInput("Zoë", "東京", "visits")]))

    data = app.graph.query_blocking(export_jsonl)

    assert (
        data
        == (
            '{"type":"entity","name":"Zoë","entityType":"persön","observations":'
            '["says \\"hi\\"","🎉 party","back\\\\slash","a\u2028b"]}\n'
            '{"type":"entity","name":"東京","entityType":"city","observations":[]}\n'
            '{"type":"relation","from":"Zoë","to":"東京","relationType":"visits"}'
        ).encode()
    )


def test_import_of_an_export_gives_back_the_same_graph(app: App, tmp_path: Path) -> None:
    do_import(app, SAMPLE + b"\n" + jsonl(entity("Ünïcode 🎉", "t", 'q"uote', "tab\there")))
    app.graph.execute_blocking(
        AddObservations(observations=[ObservationInput("Bob", ["line\nbreak"])])
    )
    exported = app.graph.query_blocking(export_jsonl)

    other = start_actors(Settings(data_dir=tmp_path / "other"), InMemoryEventLog(node_id="n2"))
    try:
        report = import_memory(other.graph, parse_memory(exported))
        assert report.problems == []
        assert graph_of(other) == graph_of(app)
        assert other.graph.query_blocking(export_jsonl) == exported
    finally:
        stop_actors(other)


def test_write_atomic_replaces_the_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "memory.jsonl"
    target.write_bytes(b"old")
    target.chmod(0o640)

    write_atomic(target, b"new")

    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["memory.jsonl"]
