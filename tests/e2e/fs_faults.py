"""Making the file system refuse a data dir, as root and as anyone else.

Read-only: a user's chmod, which root ignores, so as root a read-only bind mount of the dir in
a private mount namespace of the child process instead (nothing leaks to the host). Full: a
file size limit (RLIMIT_FSIZE, `ulimit -f`) on the child, which makes a write past it fail
with EFBIG as a full disk fails with ENOSPC.
"""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

_BIND_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'


def read_only(data_dir: Path) -> tuple[str, ...]:
    """Make `data_dir` read-only for graphmem processes; returns the command prefix to run
    them with. Skips the test when this machine allows neither way."""
    if os.geteuid() != 0:
        for path in [*data_dir.rglob("*"), data_dir]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        return ()
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("running as root (chmod does not bind root) and unshare is missing")
    for flags in ("-m", "-rm"):
        wrapper = (unshare, flags, "sh", "-c", _BIND_READ_ONLY, str(data_dir))
        probe = subprocess.run(
            [*wrapper, "sh", "-c", 'touch "$0/probe"', str(data_dir)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        refused = probe.returncode != 0 and b"Read-only" in probe.stderr
        if refused and not (data_dir / "probe").exists():
            return wrapper
    pytest.skip("running as root and a read-only bind mount is not permitted here")


def file_size_limit(limit: int) -> Callable[[], None]:
    """A preexec_fn that caps the size of any file the child writes at `limit` bytes."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return cap


def limited_command(limit: int, *args: str) -> list[str]:
    """`python -m graphmem ARGS` under a file size limit, for launchers with no preexec_fn
    (the MCP SDK's stdio client)."""
    code = (
        "import resource, runpy, sys\n"
        "limit = int(sys.argv[1])\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
        "sys.argv = ['graphmem', *sys.argv[2:]]\n"
        "runpy.run_module('graphmem', run_name='__main__')\n"
    )
    return [sys.executable, "-c", code, str(limit), *args]


def data_file_size(data_dir: Path) -> int:
    return max((data_dir / name).stat().st_size for name in ("data.mdb", "lock.mdb"))
