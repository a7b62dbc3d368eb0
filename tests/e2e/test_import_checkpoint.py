"""`graphmem import` ends with one checkpoint at the log's end, even when saving it takes
longer than a stop allows a save (so the next start reads the checkpoint, not the log)."""

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
# The import in a real process whose stop gives a checkpoint save no time at all, as a stop
# gives a million-entity save too little (10 s): a save left to the stop is skipped.
NO_SAVE_AT_STOP = (
    "import sys\n"
    "import graphmem.app\n"
    "from graphmem.cli import main\n"
    "graphmem.app.STOP_SAVE_BUDGET = 0.0\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def env(level: str) -> dict[str, str]:
    found = {**os.environ, "GRAPHMEM_LOG_LEVEL": level}
    found.pop("GRAPHMEM_DIR", None)
    return found


def log_lines(stderr: bytes) -> list[dict[str, Any]]:
    """The JSON log lines; one may follow the progress bar's last redraw on its line."""
    lines = stderr.replace(b"\r", b"\n").splitlines()
    return [json.loads(line[line.index(b'{"') :]) for line in lines if b'{"' in line]


def test_the_import_saves_its_checkpoint_even_when_the_stop_would_skip_the_save(
    tmp_path: Path,
) -> None:
    source = tmp_path / "memory.jsonl"
    source.write_text(
        "\n".join(
            json.dumps(
                {"type": "entity", "name": f"e{i}", "entityType": "t", "observations": ["x"]}
            )
            for i in range(200)
        )
    )
    data_dir = tmp_path / "data"

    imported = subprocess.run(
        [sys.executable, "-c", NO_SAVE_AT_STOP, "--data-dir", str(data_dir), "import", str(source)],
        capture_output=True,
        env=env("INFO"),
        timeout=TIMEOUT,
        check=False,
    )

    assert imported.returncode == 0, imported.stderr.decode()
    saved = [e for e in log_lines(imported.stderr) if e["event"] == "checkpoint_saved"]
    assert [e["position"] for e in saved] == [400]  # once, after all 400 events
    # The next start restores it and has nothing left to fold from the log.
    exported = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "export"],
        capture_output=True,
        env=env("INFO"),
        timeout=TIMEOUT,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr.decode()
    loaded = [e for e in log_lines(exported.stderr) if e["event"] == "graph_loaded"]
    assert [(e["checkpoint"], e["position"], e["verified_tail"]) for e in loaded] == [(400, 400, 0)]
    assert exported.stdout.count(b"\n") == 199


def test_importing_the_same_file_again_saves_no_second_checkpoint(tmp_path: Path) -> None:
    source = tmp_path / "memory.jsonl"
    source.write_text(
        json.dumps({"type": "entity", "name": "A", "entityType": "t", "observations": ["x"]})
    )
    data_dir = tmp_path / "data"
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(source)]
    first = subprocess.run(argv, capture_output=True, env=env("INFO"), timeout=TIMEOUT, check=False)
    assert first.returncode == 0, first.stderr.decode()

    again = subprocess.run(argv, capture_output=True, env=env("INFO"), timeout=TIMEOUT, check=False)

    assert again.returncode == 0, again.stderr.decode()
    assert "entities:     0 created, 1 already present" in again.stdout.decode()
    # Nothing was added: the checkpoint the first import saved is still at the log's end.
    events = [e["event"] for e in log_lines(again.stderr)]
    assert "checkpoint_saved" not in events
    assert "graph_loaded" in events
