"""`graphmem import` into an empty store (the bulk path) and into one that holds a graph (the
graph writer's commands), seen as a user sees them: the summary, the next start, the export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

TIMEOUT = 120
ROOT = Path(__file__).resolve().parents[2]


def run(data_dir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GRAPHMEM_LOG_LEVEL": "INFO", **extra}
    env.pop("GRAPHMEM_DIR", None)
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args]
    return subprocess.run(argv, capture_output=True, env=env, timeout=TIMEOUT, check=False)


def logged(result: subprocess.CompletedProcess[bytes], event: str) -> list[dict[str, Any]]:
    """The JSON log lines of `event` on stderr (some follow a progress bar's redraw)."""
    found = []
    for raw in result.stderr.replace(b"\r", b"\n").splitlines():
        if f'"event":"{event}"'.encode() in raw:
            found.append(json.loads(raw[raw.index(b'{"') :]))
    return found


def write_lines(path: Path, *items: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(item, ensure_ascii=False) for item in items))
    return path


def entity(name: str, *observations: str) -> dict[str, Any]:
    return {"type": "entity", "name": name, "entityType": "person", "observations": observations}


def relation(source: str, target: str) -> dict[str, Any]:
    return {"type": "relation", "from": source, "to": target, "relationType": "knows"}


def test_an_import_into_an_empty_store_is_restored_from_its_checkpoint_at_the_next_start(
    tmp_path: Path,
) -> None:
    source = write_lines(
        tmp_path / "memory.jsonl",
        entity("Zoë", "likes tea", "likes tea"),
        entity("ada", "writes\ncode"),
        relation("ada", "Zoë"),
        relation("ada", "nobody"),
        {"type": "entity", "name": 7},
    )

    imported = run(tmp_path / "data", "import", str(source))

    assert imported.returncode == 0, imported.stderr.decode()
    summary = imported.stdout.decode()
    assert "entities:     2 created, 0 already present" in summary
    assert "observations: 3 added, 0 already present" in summary
    assert "relations:    1 created, 0 already present" in summary
    assert "line 4: relation to missing entity 'nobody'; not imported" in summary
    assert "line 5: name is a number, not a string" in summary
    (saved,) = logged(imported, "checkpoint_saved")
    assert saved["position"] == 6  # two creations, three observations, one relation
    exported = run(tmp_path / "data", "export")
    (loaded,) = logged(exported, "graph_loaded")
    # Restored from the import's checkpoint at the log's end: nothing folded from the log.
    assert loaded["checkpoint"] == loaded["position"] == 6
    assert loaded["verified_tail"] == 0
    assert exported.stdout.decode().splitlines() == [
        '{"type":"entity","name":"Zoë","entityType":"person",'
        '"observations":["likes tea","likes tea"]}',
        '{"type":"entity","name":"ada","entityType":"person","observations":["writes\\ncode"]}',
        '{"type":"relation","from":"ada","to":"Zoë","relationType":"knows"}',
    ]


def test_an_import_into_a_store_that_holds_a_graph_adds_only_what_it_lacks(
    tmp_path: Path,
) -> None:
    first = write_lines(tmp_path / "first.jsonl", entity("ada", "writes code"))
    second = write_lines(
        tmp_path / "second.jsonl",
        entity("ada", "writes code", "reads"),
        entity("bob"),
        relation("bob", "ada"),
    )
    assert run(tmp_path / "data", "import", str(first)).returncode == 0

    imported = run(tmp_path / "data", "import", str(second))

    assert imported.returncode == 0, imported.stderr.decode()
    summary = imported.stdout.decode()
    assert "entities:     1 created, 1 already present" in summary
    assert "observations: 1 added, 1 already present" in summary
    assert "relations:    1 created, 0 already present" in summary
    assert run(tmp_path / "data", "export").stdout.decode().splitlines() == [
        '{"type":"entity","name":"ada","entityType":"person",'
        '"observations":["writes code","reads"]}',
        '{"type":"entity","name":"bob","entityType":"person","observations":[]}',
        '{"type":"relation","from":"bob","to":"ada","relationType":"knows"}',
    ]


def test_an_import_into_an_empty_store_with_a_hook_runs_its_commands_through_the_hook(
    tmp_path: Path,
) -> None:
    source = write_lines(tmp_path / "memory.jsonl", entity("Forbidden", "x"), entity("ada"))
    hooks = tmp_path / "hooks.jsonl"

    imported = run(
        tmp_path / "data",
        "import",
        str(source),
        "--batch-size",
        "1",
        GRAPHMEM_HOOKS="tests.e2e.sample_hooks:policy",
        GRAPHMEM_TEST_HOOK_LOG=str(hooks),
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )

    assert imported.returncode == 0, imported.stderr.decode()
    summary = imported.stdout.decode()
    assert "entities:     1 created, 0 already present" in summary
    assert "Forbidden is a reserved name" in summary  # the before-hook refused its batch
    # The after-hook saw the one committed creation, ada's, at the log's first position.
    assert [json.loads(line)["positions"] for line in hooks.read_text().splitlines()] == [[1]]
