"""The official memory server (`@modelcontextprotocol/server-memory`), installed on demand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import StdioServerParameters

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"
REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / "bench" / ".cache" / "official"
ENTRY = PREFIX / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
INSTALL_TIMEOUT = 300


def _installed_version() -> str | None:
    try:
        manifest = json.loads((ENTRY.parent.parent / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = manifest.get("version")
    return version if isinstance(version, str) else None


def official_server_entry() -> Path:
    """`dist/index.js` of the pinned official server, installing it with npm when missing.

    Fails (never skips) when npm is unavailable or the install fails: the compatibility
    tests are what prove the drop-in claim, so they must not pass by not running.
    """
    if ENTRY.is_file() and _installed_version() == VERSION:
        return ENTRY
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            f"npm is not on PATH; install Node.js (with npm) so the test can install "
            f"{PACKAGE}@{VERSION} into {PREFIX}"
        )
    command = [npm, "install", "--prefix", str(PREFIX), f"{PACKAGE}@{VERSION}"]
    try:
        done = subprocess.run(
            [*command, "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(command)}` did not finish within {INSTALL_TIMEOUT} s")
    if done.returncode != 0 or not ENTRY.is_file():
        pytest.fail(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    return ENTRY


def official_server_params(memory_file: Path) -> StdioServerParameters:
    """Run the official server on `memory_file` (an absolute path, as MEMORY_FILE_PATH)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; install Node.js to run the compatibility tests")
    return StdioServerParameters(
        command=node,
        args=[str(official_server_entry())],
        env={"MEMORY_FILE_PATH": str(memory_file.resolve()), "PATH": os.environ.get("PATH", "")},
    )
