"""`graphmem import` and `graphmem export` run as real processes against a real data dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TIMEOUT = 120

MEMORY = "\n".join(
    [
        '{"type":"entity","name":"Alice","entityType":"person","observations":["works at Acme"]}',
        '{"type":"entity","name":"Zoë","entityType":"person","observations":["🎉 \\"quoted\\""]}',
        "this line is not JSON",
        '{"type":"relation","from":"Alice","to":"Zoë","relationType":"knows"}',
        '{"type":"relation","from":"Alice","to":"Ghost","relationType":"fears"}',
    ]
).encode()

EXPORTED = (
    '{"type":"entity","name":"Alice","entityType":"person","observations":["works at Acme"]}\n'
    '{"type":"entity","name":"Zoë","entityType":"person","observations":["🎉 \\"quoted\\""]}\n'
    '{"type":"relation","from":"Alice","to":"Zoë","relationType":"knows"}'
).encode()


def graphmem(data_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING"}
    env.pop("GRAPHMEM_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )


def test_import_reports_counts_and_problems_then_export_writes_the_official_bytes(
    tmp_path: Path,
) -> None:
    source = tmp_path / "memory.jsonl"
    source.write_bytes(MEMORY)
    data_dir = tmp_path / "data"

    imported = graphmem(data_dir, "import", str(source))

    assert imported.returncode == 0, imported.stderr.decode()
    summary = imported.stdout.decode()
    assert "entities:     2 created, 0 already present" in summary
    assert "observations: 2 added, 0 already present" in summary
    assert "relations:    1 created, 0 already present" in summary
    assert "problems:     2" in summary
    assert "line 3: not valid JSON" in summary
    assert "line 5: relation to missing entity 'Ghost'; not imported" in summary
    assert "importing" in imported.stderr.decode()  # the progress bar

    exported = graphmem(data_dir, "export")

    assert exported.returncode == 0, exported.stderr.decode()
    assert exported.stdout == EXPORTED


def test_importing_again_changes_nothing_and_export_to_a_file_is_atomic(tmp_path: Path) -> None:
    source = tmp_path / "memory.jsonl"
    source.write_bytes(MEMORY)
    data_dir = tmp_path / "data"
    assert graphmem(data_dir, "import", str(source), "--batch-size", "1").returncode == 0

    again = graphmem(data_dir, "import", str(source))

    assert again.returncode == 0, again.stderr.decode()
    assert "entities:     0 created, 2 already present" in again.stdout.decode()
    assert "skipped (already present): 5" in again.stdout.decode()
    target = tmp_path / "out" / "export.jsonl"
    target.parent.mkdir()
    target.write_bytes(b"stale")
    written = graphmem(data_dir, "export", "-o", str(target))
    assert written.returncode == 0, written.stderr.decode()
    assert written.stdout == b""
    assert target.read_bytes() == EXPORTED
    assert [p.name for p in target.parent.iterdir()] == ["export.jsonl"]


def test_the_legacy_memory_json_document_imports(tmp_path: Path) -> None:
    source = tmp_path / "memory.json"
    source.write_text(
        '{\n  "entities": [\n    {"name": "A", "entityType": "t", "observations": ["x"]}\n  ],\n'
        '  "relations": [\n    {"from": "A", "to": "A", "relationType": "self"}\n  ]\n}\n'
    )

    imported = graphmem(tmp_path / "data", "import", str(source))

    assert imported.returncode == 0, imported.stderr.decode()
    assert "legacy JSON document" in imported.stdout.decode()
    assert graphmem(tmp_path / "data", "export").stdout == (
        b'{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n'
        b'{"type":"relation","from":"A","to":"A","relationType":"self"}'
    )


def test_an_unreadable_file_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    missing = graphmem(tmp_path / "data", "import", str(tmp_path / "nope.jsonl"))

    assert missing.returncode == 1
    assert "graphmem import: cannot read" in missing.stderr.decode()
    assert "nope.jsonl" in missing.stderr.decode()

    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a memory file\n")
    not_memory = graphmem(tmp_path / "data", "import", str(junk))

    assert not_memory.returncode == 1
    assert "is not a memory file" in not_memory.stderr.decode()


def test_each_subcommand_says_what_it_does(tmp_path: Path) -> None:
    for command, words in (("import", "Idempotent"), ("export", "official memory server")):
        shown = graphmem(tmp_path, command, "--help")
        assert shown.returncode == 0
        assert words in " ".join(shown.stdout.decode().split())
