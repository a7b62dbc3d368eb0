"""Schema files from users: a file nested too deep, holding a number too long, too large, or a
symlink leading out of its folder is reported and skipped alone; the other files still load,
at start-up and on every rescan."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.schema_files import SchemaProblem, scan_folders
from actors.schema_registry import SchemaRegistryActor
from eventstore.events import Envelope, SchemaRegistered
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from projections.entity_schema import SchemaLimits, canonical_json
from projections.schemas import SchemaProjection

WAIT = 10.0
RESERVED = frozenset({"read_graph"})
DEEP = "[" * 1000 + "]" * 1000


def schema(type_name: str, description: str = "A thing", **extra: Any) -> dict[str, Any]:
    return {
        "name": f"add_{type_name}",
        "description": description,
        "properties": {"name": {"type": "string", "description": "Its name"}},
        **extra,
    }


def write(folder: Path, stem: str, text: str | dict[str, Any]) -> Path:
    path = folder / f"{stem}.schema.json"
    path.write_text(text if isinstance(text, str) else json.dumps(text), encoding="utf-8")
    return path


def reasons(problems: list[SchemaProblem]) -> dict[str, str]:
    return {p.path.name: p.reason for p in problems}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "schemas"
    path.mkdir()
    return path


# --- hostile JSON ---------------------------------------------------------------------------


def test_a_file_nested_1000_deep_is_a_problem_and_the_other_files_load(folder: Path) -> None:
    write(folder, "deep", '{"name": "add_deep", "description": "x", "x": ' + DEEP + "}")
    write(folder, "npc", schema("npc"))

    scan = scan_folders([folder], RESERVED)

    assert list(scan.definitions) == ["npc"]
    assert reasons(scan.problems) == {
        "deep.schema.json": "arrays and objects nest more than 64 levels deep (the limit)"
    }


def test_a_file_holding_a_4301_digit_number_is_a_problem(folder: Path) -> None:
    write(folder, "huge", '{"name": "add_huge", "x": ' + "1" * 4301 + "}")
    write(folder, "inf", '{"name": "add_inf", "x": 1e999}')
    write(folder, "nan", '{"name": "add_nan", "x": NaN}')

    found = reasons(scan_folders([folder], RESERVED).problems)

    assert found == {
        "huge.schema.json": "a number has 4,301 digits; the limit is 4,300",
        "inf.schema.json": "the number 1e999 is too large",
        "nan.schema.json": "not valid JSON: NaN is not allowed",
    }


# --- limits ---------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_naming_the_limit(folder: Path) -> None:
    write(folder, "big", schema("big", "x" * 2_000))
    write(folder, "npc", schema("npc"))

    scan = scan_folders([folder], RESERVED, SchemaLimits(max_file_bytes=1_000))

    assert list(scan.definitions) == ["npc"]
    reason = reasons(scan.problems)["big.schema.json"]
    assert "over the 1,000-byte limit for schema files" in reason
    assert "GRAPHMEM_MAX_SCHEMA_BYTES" in reason


def test_the_default_size_limit_is_one_mebibyte(folder: Path) -> None:
    padding = "x" * (1 << 20)
    write(folder, "big", schema("big", "A thing", padding=padding))

    found = reasons(scan_folders([folder], RESERVED).problems)

    assert "over the 1,048,576-byte limit" in found["big.schema.json"]


def test_a_long_description_or_too_many_properties_is_refused(folder: Path) -> None:
    write(folder, "wordy", schema("wordy", "x" * 8_193))
    many = {f"p{n}": {"type": "string", "description": "d"} for n in range(256)}
    write(folder, "wide", {**schema("wide"), "properties": many})
    write(folder, "ok", schema("ok", "x" * 8_192))

    scan = scan_folders([folder], RESERVED)

    assert list(scan.definitions) == ["ok"]
    assert reasons(scan.problems) == {
        "wordy.schema.json": "the description is 8,193 characters long; the limit is 8,192: "
        "shorten it",
        "wide.schema.json": "257 properties; a schema may have at most 256: split the type",
    }


# --- symlinks -------------------------------------------------------------------------------


def test_a_symlink_leading_out_of_the_folder_is_not_followed(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(schema("secret")))
    (folder / "secret.schema.json").symlink_to(outside)
    (folder / "dotdot.schema.json").symlink_to(Path("..") / "secret.json")

    scan = scan_folders([folder], RESERVED)

    assert scan.definitions == {}
    found = reasons(scan.problems)
    assert set(found) == {"secret.schema.json", "dotdot.schema.json"}
    assert found["secret.schema.json"] == (
        f"a symlink to {outside.resolve()}, outside the schema folder {folder.resolve()}; not "
        "followed (copy the file into the folder to use it)"
    )


def test_a_symlink_to_a_file_inside_the_folder_is_followed(folder: Path) -> None:
    (folder / "shared").mkdir()
    write(folder / "shared", "npc", schema("npc"))
    (folder / "npc.schema.json").symlink_to(Path("shared") / "npc.schema.json")

    scan = scan_folders([folder], RESERVED)

    assert list(scan.definitions) == ["npc"]
    assert scan.problems == []


def test_a_symlinked_folder_holds_its_own_files(folder: Path, tmp_path: Path) -> None:
    write(folder, "npc", schema("npc"))
    link = tmp_path / "linked"
    link.symlink_to(folder)

    scan = scan_folders([link], RESERVED)

    assert list(scan.definitions) == ["npc"]
    assert scan.problems == []


def test_a_symlink_loop_is_a_problem(folder: Path) -> None:
    os.symlink("b.schema.json", folder / "a.schema.json")
    os.symlink("a.schema.json", folder / "b.schema.json")
    write(folder, "npc", schema("npc"))

    scan = scan_folders([folder], RESERVED)

    assert list(scan.definitions) == ["npc"]
    assert set(reasons(scan.problems)) == {"a.schema.json", "b.schema.json"}


# --- the registry ---------------------------------------------------------------------------


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path / "data"), InMemoryEventLog(node_id="n1"))
    yield started
    stop_actors(started)


def in_force(app: App) -> list[str]:
    records = app.graph.query_models_blocking(lambda m: m.schemas.records())
    return sorted(r.type_name for r in records if r.digest)


def test_the_registry_starts_beside_a_deep_file_and_later_changes_still_take_effect(
    app: App, folder: Path
) -> None:
    write(folder, "deep", '{"name": "add_deep", "x": ' + DEEP + "}")
    write(folder, "huge", '{"name": "add_huge", "x": ' + "9" * 5000 + "}")
    write(folder, "npc", schema("npc"))
    proxy = SchemaRegistryActor.start([folder], app.graph, RESERVED, False).proxy()

    problems = proxy.problems().get(timeout=WAIT)

    assert {p.path.name for p in problems} == {"deep.schema.json", "huge.schema.json"}
    assert in_force(app) == ["npc"]
    write(folder, "quest", schema("quest"))
    write(folder, "npc", schema("npc", "Edited"))

    report = proxy.rescan().get(timeout=WAIT)

    assert report.registered == ("npc", "quest")
    assert in_force(app) == ["npc", "quest"]


def test_the_registry_applies_the_configured_size_limit(app: App, folder: Path) -> None:
    write(folder, "npc", schema("npc", "x" * 500))
    limits = SchemaLimits(max_file_bytes=200)
    proxy = SchemaRegistryActor.start([folder], app.graph, RESERVED, False, limits=limits).proxy()

    problems = proxy.problems().get(timeout=WAIT)

    assert [p.path.name for p in problems] == ["npc.schema.json"]
    assert in_force(app) == []


# --- schemas already in the log -------------------------------------------------------------


def registered(position: int, type_name: str, text: str) -> Envelope:
    event = SchemaRegistered(type_name, text, canonical_json(text)[1], "")
    return Envelope(
        position=position, origin="a", origin_seq=position, hlc=position, tx=position, event=event
    )


def test_a_deep_document_in_the_log_stays_out_of_force_and_the_fold_goes_on() -> None:
    deep = '{"name":"add_deep","description":"x","properties":{},"x":' + DEEP + "}"
    projection = SchemaProjection()

    projection.apply_all(
        [registered(1, "deep", deep), registered(2, "npc", json.dumps(schema("npc")))]
    )

    assert [s.type_name for s in projection.schemas()] == ["npc"]
    record = projection.record("deep")
    assert record is not None and record.schema is None
    restored = SchemaProjection.from_snapshot(projection.to_snapshot())
    assert [s.type_name for s in restored.schemas()] == ["npc"]


def test_a_document_in_the_log_nested_past_the_limit_but_decodable_stays_out_of_force() -> None:
    text = json.dumps(schema("npc", x=json.loads("[" * 70 + "]" * 70)))
    projection = SchemaProjection()

    projection.apply_all([registered(1, "npc", text)])

    assert projection.schemas() == []
