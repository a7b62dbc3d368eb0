"""Hostile files given to real processes: `graphmem import` of a file with lines nested 1,000
deep or numbers of 4,301 digits reports them per line and imports the rest; `graphmem serve`
with such a schema file (and one too large, and a symlink out of its folder) starts, reports
them on stderr, serves the good types and still takes later schema changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import mcp.types as types
import pytest

from graphmem.config import Settings
from tests.e2e.support import legacy_session, write_schema
from tests.schema_samples import NPC_SCHEMA

pytestmark = pytest.mark.slow

TIMEOUT = 120
WAIT = 15.0
DEEP = "[" * 1000 + "]" * 1000


def graphmem(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING", **env}
    full_env.pop("GRAPHMEM_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=TIMEOUT,
        check=False,
    )


def entity(name: str) -> str:
    return json.dumps({"type": "entity", "name": name, "entityType": "t", "observations": ["x"]})


def test_import_reports_deep_and_huge_number_lines_and_imports_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "memory.jsonl"
    lines = [
        '{"params":{"x":' + DEEP + "}}",
        entity("A"),
        '{"type":"entity","name":' + "1" * 4301 + "}",
        '{"type":"entity","name":"B\x00"',
        entity("B"),
        "[1, 2]",
    ]
    source.write_bytes("\n".join(lines).encode() + b"\n\xff\xfe\n")
    data_dir = tmp_path / "data"

    imported = graphmem(data_dir, "import", str(source))

    assert imported.returncode == 0, imported.stderr
    assert "Traceback" not in imported.stderr + imported.stdout
    summary = imported.stdout
    assert "entities:     2 created" in summary
    assert "problems:     5" in summary
    assert "line 1: not imported: arrays and objects nest more than 64 levels deep" in summary
    assert "line 3: not imported: a number has 4,301 digits; the limit is 4,300" in summary
    assert "line 4: not valid JSON" in summary
    assert "line 6: is an array, not an object" in summary
    assert "line 7: not valid UTF-8" in summary
    exported = graphmem(data_dir, "export")
    assert [json.loads(line)["name"] for line in exported.stdout.splitlines()] == ["A", "B"]


@pytest.mark.parametrize("value", [DEEP, "1" * 4301])
def test_import_of_a_legacy_document_refused_for_its_shape_is_one_line(
    tmp_path: Path, value: str
) -> None:
    source = tmp_path / "memory.json"
    document = {"entities": [{"name": "A", "entityType": "t", "observations": [], "x": "X"}]}
    source.write_text(json.dumps(document, indent=2).replace('"X"', value))

    imported = graphmem(tmp_path / "data", "import", str(source))

    assert imported.returncode == 1
    assert "Traceback" not in imported.stderr + imported.stdout
    message = imported.stderr.strip()
    assert message.startswith("graphmem import: cannot import this JSON document: ")
    assert "\n" not in message


@pytest.mark.anyio
async def test_serve_starts_beside_hostile_schema_files_and_later_changes_take_effect(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "deep", '{"name": "add_deep", "description": "x", "x": ' + DEEP + "}")
    write_schema(folder, "huge", '{"name": "add_huge", "x": ' + "1" * 4301 + "}")
    write_schema(folder, "big", {**NPC_SCHEMA, "name": "add_big", "description": "x" * 6000})
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({**NPC_SCHEMA, "name": "add_secret"}))
    (folder / "secret.schema.json").symlink_to(outside)
    write_schema(folder, "npc", NPC_SCHEMA)
    stderr_path = tmp_path / "stderr.log"
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            changed.set()

    with stderr_path.open("w") as errlog:
        async with legacy_session(
            tmp_path / "data",
            message_handler=on_message,
            errlog=errlog,
            GRAPHMEM_SCHEMAS_DIR=str(folder),
            GRAPHMEM_MAX_SCHEMA_BYTES="5000",
        ) as s:
            before = {t.name for t in (await s.list_tools()).tools}
            assert "add_npc" in before
            assert not {"add_deep", "add_huge", "add_big", "add_secret"} & before

            # A deep file arriving while serving must not stop the next change either.
            write_schema(folder, "deeper", '{"name": "add_deeper", "x": ' + DEEP + "}")
            write_schema(folder, "quest", {**NPC_SCHEMA, "name": "add_quest"})
            with anyio.fail_after(WAIT):
                await changed.wait()

            after = {t.name for t in (await s.list_tools()).tools}
            assert after == before | {"add_quest", "update_quest", "delete_quest"}
    logged = [json.loads(line) for line in stderr_path.read_text().splitlines() if line]
    skipped = {
        Path(entry["file"]).name: entry["reason"]
        for entry in logged
        if entry.get("event") == "schema_file_skipped"
    }
    assert set(skipped) == {
        "deep.schema.json",
        "deeper.schema.json",
        "huge.schema.json",
        "big.schema.json",
        "secret.schema.json",
    }
    assert "nest more than 64 levels deep" in skipped["deep.schema.json"]
    assert "over the 5,000-byte limit" in skipped["big.schema.json"]
    assert "outside the schema folder" in skipped["secret.schema.json"]
    assert not any("Traceback" in json.dumps(entry) for entry in logged)


def test_the_schema_size_limit_is_read_from_the_environment() -> None:
    assert Settings.from_env({}).schema_limits.max_file_bytes == 1 << 20
    settings = Settings.from_env({"GRAPHMEM_MAX_SCHEMA_BYTES": "65_536"})
    assert settings.schema_limits.max_file_bytes == 65_536
