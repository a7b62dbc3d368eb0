"""`graphmem restore` gives the restored data dir a new node id, as real processes: the old
id, set in GRAPHMEM_NODE_ID, is refused in one line that says what to do; the data dir's own
new id writes on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.cli_support import graphmem


def _seed(data_dir: Path, source: Path, *names: str, env: dict[str, str]) -> None:
    lines = (
        json.dumps({"type": "entity", "name": n, "entityType": "t", "observations": []})
        for n in names
    )
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = graphmem(data_dir, "import", str(source), env=env)
    assert done.returncode == 0, done.stderr


def test_a_restored_data_dir_refuses_its_old_node_id_in_one_line_and_writes_as_its_new_one(
    tmp_path: Path,
) -> None:
    data, backup = tmp_path / "data", tmp_path / "backup"
    desk = {"GRAPHMEM_NODE_ID": "desk"}
    _seed(data, tmp_path / "one.jsonl", "kept", env=desk)
    assert graphmem(data, "backup", str(backup)).returncode == 0
    _seed(data, tmp_path / "two.jsonl", "after-the-backup", env=desk)

    restored = graphmem(data, "restore", "--force", str(backup), env=desk)
    assert restored.returncode == 0, restored.stderr
    assert "GRAPHMEM_NODE_ID is set to desk" in restored.stdout

    refused = graphmem(data, "serve", stdin=b"", env=desk)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith("graphmem serve: the data dir"), (
        refused.stderr
    )
    assert "no longer writes as node 'desk'" in refused.stderr
    assert "Traceback" not in refused.stderr

    _seed(data, tmp_path / "three.jsonl", "after-the-restore", env={})
    exported = graphmem(data, "export")
    assert exported.returncode == 0, exported.stderr
    assert {json.loads(line)["name"] for line in exported.stdout.splitlines()} == {
        "kept",
        "after-the-restore",
    }
    shown = json.loads(graphmem(data, "replication", "status", "--json").stdout)
    assert "desk" in [o["origin"] for o in shown["origins"] if o["former"]]
    assert shown["node"] not in ("desk", "")
