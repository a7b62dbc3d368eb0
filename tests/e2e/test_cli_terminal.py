"""What a person at a terminal sees on stderr: a one-shot command writes plain `warning: ...`
lines, not JSON, and no info lines unless GRAPHMEM_LOG_LEVEL asks; `serve`, and any command
whose stderr is not a terminal, keeps the JSON lines scripts read."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.damage import damage_checkpoint, write_people
from tests.e2e.cli_support import graphmem

pytestmark = pytest.mark.slow

TIMEOUT = 120.0
EVENTS = 20  # 10 people, two events each


def _environ(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GRAPHMEM_LOG_LEVEL", "GRAPHMEM_DIR")}
    env["GRAPHMEM_SCHEMAS_DIR"] = str(data_dir.parent / "no-user-schemas")
    return {**env, **extra}


def on_terminal(data_dir: Path, *args: str, **env: str) -> tuple[int, bytes, str]:
    """`graphmem --data-dir DATA_DIR ARGS` with stderr on a pseudo-terminal (stdin empty,
    stdout a pipe); returns the exit code, stdout, and what the terminal showed."""
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            env=_environ(data_dir, **env),
        ) as process:
            os.close(follower)
            follower = -1
            shown = _read_until_closed(leader, process)
            assert process.stdout is not None
            out = process.stdout.read()
            code = process.wait(timeout=TIMEOUT)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return code, out, shown.decode(errors="replace").replace("\r\n", "\n")


def _read_until_closed(leader: int, process: subprocess.Popen[bytes]) -> bytes:
    """All the terminal receives until the process closes it (bounded)."""
    shown = bytearray()
    deadline = time.monotonic() + TIMEOUT
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([leader], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            return bytes(shown)
        if not chunk:
            return bytes(shown)
        shown += chunk
    process.kill()
    raise AssertionError(f"the terminal was not closed within {TIMEOUT} s: {bytes(shown)!r}")


def json_lines(text: str) -> list[dict[str, object]]:
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def events(logged: list[dict[str, object]]) -> list[str]:
    return [str(e["event"]) for e in logged]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A log of 10 people whose graph checkpoint is damaged: loading it logs a warning."""
    folder = tmp_path / "data"
    assert write_people(folder, EVENTS // 2) == EVENTS
    assert graphmem(folder, "export").returncode == 0  # checkpoints at the end
    damage_checkpoint(folder, "graph", EVENTS)
    return folder


def test_a_one_shot_command_on_a_terminal_prints_plain_warnings_and_no_json(
    data_dir: Path,
) -> None:
    code, out, shown = on_terminal(data_dir, "export")

    assert code == 0, shown
    assert len(out.splitlines()) == EVENTS // 2
    assert json_lines(shown) == [], shown
    warnings = [line for line in shown.splitlines() if line.startswith("warning: ")]
    assert any("checkpoint_ignored" in line and "checksum" in line for line in warnings), shown
    assert "info:" not in shown  # the start-up's info lines are left out
    code, out, shown = on_terminal(data_dir, "stats")
    assert (code, shown) == (0, "")
    assert out.startswith(b"data dir")


def test_a_one_shot_command_on_a_terminal_shows_info_lines_when_asked(data_dir: Path) -> None:
    code, _, shown = on_terminal(data_dir, "export", GRAPHMEM_LOG_LEVEL="INFO")

    assert code == 0, shown
    assert json_lines(shown) == [], shown
    assert any(line.startswith("info: graphmem_started") for line in shown.splitlines()), shown


def test_a_command_whose_stderr_is_not_a_terminal_keeps_json_lines(data_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "export"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_environ(data_dir),
        timeout=TIMEOUT,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    logged = json_lines(done.stderr.decode())
    assert "graphmem_started" in events(logged)
    assert any(e.startswith("checkpoint_ignored") for e in events(logged))
    assert all("timestamp" in e for e in logged)


def test_serve_logs_json_lines_even_on_a_terminal(data_dir: Path) -> None:
    code, out, shown = on_terminal(data_dir, "serve")  # stdin empty: the client is gone

    assert code == 0, shown
    assert out == b""
    lines = [line for line in shown.splitlines() if line.strip()]
    logged = json_lines(shown)
    assert len(logged) == len(lines), shown
    assert {"graphmem_started", "graphmem_stopped"} <= set(events(logged))
    assert any(e.startswith("checkpoint_ignored") for e in events(logged))


def test_a_refusal_on_a_terminal_is_one_plain_line(tmp_path: Path) -> None:
    code, out, shown = on_terminal(tmp_path / "nothing", "stats")

    assert code == 1
    assert out == b""
    assert shown.splitlines() == [
        f"graphmem stats: no graphmem log in {tmp_path / 'nothing'} (set GRAPHMEM_DIR or "
        "--data-dir)"
    ]
