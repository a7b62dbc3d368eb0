"""Running the `graphmem` command as a real process, and what a fault report must look like."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

TIMEOUT = 120

Preexec = Callable[[], None]


def graphmem(
    data_dir: Path,
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    preexec_fn: Preexec | None = None,
    wrapper: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """`graphmem --data-dir DATA_DIR ARGS`, run to its end (bounded), output decoded;
    `wrapper` runs it inside another command (e.g. a mount namespace)."""
    environ = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING", **(env or {})}
    environ.pop("GRAPHMEM_DIR", None)
    environ.setdefault("GRAPHMEM_SCHEMAS_DIR", str(data_dir.parent / "no-user-schemas"))
    done = subprocess.run(
        [*wrapper, sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        input=stdin,
        capture_output=True,
        env=environ,
        timeout=TIMEOUT,
        check=False,
        preexec_fn=preexec_fn,  # only sets resource limits, before exec
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


def fault_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a command reports a fault with: it failed, said so on stderr in exactly
    one `graphmem ...:` line, and printed no traceback anywhere."""
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output, output
    said = [line for line in done.stderr.splitlines() if line.startswith("graphmem")]
    assert len(said) == 1, done.stderr
    return said[0]
