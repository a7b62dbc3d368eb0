"""A reader that stops early (`graphmem log | head`) ends a command quietly: exit code 0 and
no traceback, whichever command was writing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.damage import write_people

pytestmark = pytest.mark.slow

TIMEOUT = 120
PEOPLE = 3000  # 6000 events: far more output than a pipe buffers


@pytest.mark.parametrize("args", [["log"], ["log", "--json"], ["export"]], ids=" ".join)
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, args: list[str]) -> None:
    data_dir = tmp_path / "data"
    write_people(data_dir, PEOPLE)
    env = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING"}
    env.pop("GRAPHMEM_DIR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()  # the reader takes one line, then goes away
        process.stdout.close()
        err = process.stderr.read().decode()
        code = process.wait(timeout=TIMEOUT)

    assert "Traceback" not in err, err
    assert code == 0, err
