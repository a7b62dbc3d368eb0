"""SchemaRegistryActor: schema files into force, problems reported, retirements, hot reload."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest
from structlog.testing import capture_logs

from actors.commands import RegisterSchemas, SchemaDefinition
from actors.hooks import HookEvent, Hooks, HookVetoError
from actors.schema_registry import ScanReport, SchemaProblem, SchemaRegistryActor
from actors.subscribers import Published
from eventstore.events import SchemaRegistered, SchemaRetired
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from projections.entity_schema import canonical_json
from projections.schemas import SchemaRecord

WAIT = 10.0
RESERVED = frozenset({"add_nodes", "update_nodes", "delete_nodes", "read_graph"})

Registry = Callable[..., "pykka.ActorProxy[SchemaRegistryActor]"]


def schema(type_name: str, description: str = "A thing", **properties: Any) -> dict[str, Any]:
    return {
        "name": f"add_{type_name}",
        "description": description,
        "properties": {"name": {"type": "string", "description": "Its name"}, **properties},
    }


def write(folder: Path, type_name: str, document: Any = None, *, file: str | None = None) -> Path:
    path = folder / f"{file or type_name}.schema.json"
    text = json.dumps(schema(type_name) if document is None else document)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path / "data"), InMemoryEventLog(node_id="n1"))
    yield started
    stop_actors(started)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "schemas"
    path.mkdir()
    return path


@pytest.fixture
def registry(app: App, folder: Path) -> Registry:
    """Starts a registry over `folders` (default: the one folder), without a watcher, and
    waits for its start-up scan."""

    def start(*folders: Path, watch: bool = False) -> pykka.ActorProxy[SchemaRegistryActor]:
        ref = SchemaRegistryActor.start(folders or (folder,), app.graph, RESERVED, watch)
        proxy = ref.proxy()
        proxy.problems().get(timeout=WAIT)  # answered only once on_start has scanned
        return proxy

    return start


def records(app: App) -> dict[str, SchemaRecord]:
    found = app.graph.query_models_blocking(lambda m: m.schemas.records())
    return {r.type_name: r for r in found if r.digest}


def in_force(app: App) -> list[str]:
    return sorted(records(app))


def rescan(proxy: pykka.ActorProxy[SchemaRegistryActor]) -> ScanReport:
    report = proxy.rescan().get(timeout=WAIT)
    assert isinstance(report, ScanReport)
    return report


def logged_events(app: App) -> list[Any]:
    return [e.event for e in app.event_log.read_from(1)]


def test_a_folder_of_three_schemas_brings_three_types_and_nine_tools_into_force(
    app: App, folder: Path, registry: Registry
) -> None:
    for type_name in ("npc", "location", "quest"):
        write(folder, type_name)

    proxy = registry()

    assert in_force(app) == ["location", "npc", "quest"]
    schemas = app.graph.query_models_blocking(lambda m: m.schemas.schemas())
    assert len({name for s in schemas for name in s.tool_names}) == 9
    record = records(app)["npc"]
    assert record.source == str(folder.resolve() / "npc.schema.json")
    assert record.digest == canonical_json(schema("npc"))[1]
    assert proxy.problems().get(timeout=WAIT) == []


def test_a_rescan_of_unchanged_files_appends_nothing(
    app: App, folder: Path, registry: Registry
) -> None:
    write(folder, "npc")
    proxy = registry()
    position = app.event_log.last_position()

    report = rescan(proxy)

    assert report == ScanReport(("npc",), (), (), ())
    assert app.event_log.last_position() == position


def test_an_edited_file_registers_the_new_version(
    app: App, folder: Path, registry: Registry
) -> None:
    write(folder, "npc")
    proxy = registry()
    write(folder, "npc", schema("npc", "Edited"))

    report = rescan(proxy)

    assert report.registered == ("npc",)
    assert isinstance(logged_events(app)[-1], SchemaRegistered)
    npc = app.graph.query_models_blocking(lambda m: m.schemas.schema("npc"))
    assert npc is not None and npc.description == "Edited"


def test_a_deleted_file_retires_its_type(app: App, folder: Path, registry: Registry) -> None:
    path = write(folder, "npc")
    write(folder, "location")
    proxy = registry()
    path.unlink()

    report = rescan(proxy)

    assert report.retired == ("npc",)
    assert logged_events(app)[-1] == SchemaRetired(type_name="npc")
    assert in_force(app) == ["location"]


def test_a_file_renamed_to_another_type_retires_the_old_type(
    app: App, folder: Path, registry: Registry
) -> None:
    write(folder, "npc")
    proxy = registry()
    write(folder, "character", file="npc")

    report = rescan(proxy)

    assert (report.registered, report.retired) == (("character",), ("npc",))
    assert in_force(app) == ["character"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not valid JSON: Expecting property name enclosed in double quotes"),
        (b'{"name": NaN}', "not valid JSON: NaN is not allowed"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        (json.dumps({**schema("npc"), "name": "npc"}).encode(), 'must start with "add_"'),
        (json.dumps(schema("npc", role={"type": "date"})).encode(), "type 'date' is not one of"),
    ],
)
def test_a_broken_file_is_reported_and_skipped_while_the_others_load(
    app: App, folder: Path, registry: Registry, content: bytes, reason: str
) -> None:
    write(folder, "location")
    broken = folder / "npc.schema.json"
    broken.write_bytes(content)

    with capture_logs() as logs:
        proxy = registry()
        problems = proxy.problems().get(timeout=WAIT)

    assert in_force(app) == ["location"]
    assert [p.path for p in problems] == [broken.resolve()]
    assert reason in problems[0].reason
    skipped = [e for e in logs if e["event"] == "schema_file_skipped"]
    assert [(e["file"], e["log_level"]) for e in skipped] == [(str(broken.resolve()), "warning")]
    assert reason in skipped[0]["reason"]


def test_breaking_a_file_in_force_changes_nothing_until_it_is_fixed(
    app: App, folder: Path, registry: Registry
) -> None:
    path = write(folder, "npc")
    proxy = registry()
    position = app.event_log.last_position()
    path.write_text('{"name": "add_npc", ', encoding="utf-8")

    report = rescan(proxy)

    assert (report.registered, report.retired) == ((), ())
    assert [p.path for p in report.problems] == [path.resolve()]
    assert app.event_log.last_position() == position
    assert in_force(app) == ["npc"]

    write(folder, "npc", schema("npc", "Fixed"))
    assert rescan(proxy).registered == ("npc",)
    assert proxy.problems().get(timeout=WAIT) == []


def test_a_type_whose_tools_clash_with_built_in_tools_is_a_problem(
    app: App, folder: Path, registry: Registry
) -> None:
    path = write(folder, "nodes")

    problems = registry().problems().get(timeout=WAIT)

    assert problems == [
        SchemaProblem(
            path.resolve(),
            "type 'nodes' would define tool add_nodes, which a built-in tool already has; "
            'give the schema another "name"',
        )
    ]
    assert in_force(app) == []


def test_a_type_defined_twice_in_one_folder_keeps_the_first_file(
    app: App, folder: Path, registry: Registry
) -> None:
    write(folder, "npc", schema("npc", "First"), file="a")
    second = write(folder, "npc", schema("npc", "Second"), file="b")

    problems = registry().problems().get(timeout=WAIT)

    assert [p.path for p in problems] == [second.resolve()]
    assert "already defined by a.schema.json" in problems[0].reason
    npc = app.graph.query_models_blocking(lambda m: m.schemas.schema("npc"))
    assert npc is not None and npc.description == "First"


def test_a_later_folder_overrides_an_earlier_one_until_its_file_is_removed(
    app: App, tmp_path: Path, folder: Path, registry: Registry
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    write(folder, "npc", schema("npc", "Shipped"))
    override = write(user, "npc", schema("npc", "Mine"))

    proxy = registry(folder, user)

    def description() -> str | None:
        npc = app.graph.query_models_blocking(lambda m: m.schemas.schema("npc"))
        return None if npc is None else npc.description

    assert description() == "Mine"
    override.unlink()
    assert rescan(proxy).registered == ("npc",)
    assert description() == "Shipped"


def test_a_schema_from_outside_the_registrys_folders_is_never_retired(
    app: App, tmp_path: Path, registry: Registry
) -> None:
    text, digest = canonical_json(schema("elf"))
    elsewhere = str(tmp_path / "elsewhere" / "elf.schema.json")
    app.graph.execute_blocking(RegisterSchemas([SchemaDefinition("elf", text, digest, elsewhere)]))
    programmatic = canonical_json(schema("orc"))
    app.graph.execute_blocking(RegisterSchemas([SchemaDefinition("orc", *programmatic)]))

    report = rescan(registry())

    assert report.retired == ()
    assert in_force(app) == ["elf", "orc"]


def test_folders_that_do_not_exist_hold_no_schemas_and_no_problems(
    app: App, tmp_path: Path, registry: Registry
) -> None:
    proxy = registry(tmp_path / "missing", watch=True)

    assert rescan(proxy) == ScanReport((), (), (), ())
    assert in_force(app) == []


def test_a_vetoed_registration_is_reported_and_writes_nothing(tmp_path: Path, folder: Path) -> None:
    def veto(event: HookEvent) -> None:
        if event.phase == "before" and isinstance(event.command, RegisterSchemas):
            raise HookVetoError("no new schemas today")

    vetoing = start_actors(
        Settings(data_dir=tmp_path / "data"), InMemoryEventLog(node_id="n1"), hooks=Hooks([veto])
    )
    write(folder, "npc")
    try:
        ref = SchemaRegistryActor.start([folder], vetoing.graph, RESERVED, False)
        report = rescan(ref.proxy())

        assert report.rejected is not None and "no new schemas today" in report.rejected
        assert report.registered == ()
        assert in_force(vetoing) == []
    finally:
        stop_actors(vetoing)


def test_a_new_file_is_loaded_by_the_watcher(app: App, folder: Path, registry: Registry) -> None:
    write(folder, "npc")
    arrived = threading.Event()

    def on_events(published: Published) -> None:
        if any(
            isinstance(e.event, SchemaRegistered) and e.event.type_name == "quest"
            for e in published.envelopes
        ):
            arrived.set()

    app.graph.subscribe(on_events)
    registry(watch=True)
    write(folder, "quest")

    assert arrived.wait(WAIT), "the watcher did not load the new schema file"
    assert in_force(app) == ["npc", "quest"]


def test_a_deleted_file_is_retired_by_the_watcher(
    app: App, folder: Path, registry: Registry
) -> None:
    path = write(folder, "npc")
    retired = threading.Event()

    def on_events(published: Published) -> None:
        if any(e.event == SchemaRetired(type_name="npc") for e in published.envelopes):
            retired.set()

    app.graph.subscribe(on_events)
    registry(watch=True)
    path.unlink()

    assert retired.wait(WAIT), "the watcher did not retire the deleted schema file"
    assert in_force(app) == []


def test_stopping_the_registry_stops_its_watcher(folder: Path, registry: Registry) -> None:
    proxy = registry(watch=True)
    assert any(t.name == "schema-watcher" for t in threading.enumerate())

    proxy.actor_ref.stop(block=True, timeout=WAIT)

    assert not any(t.name == "schema-watcher" for t in threading.enumerate())
