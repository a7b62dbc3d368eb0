"""Machine facts recorded beside the figures: CPU, memory, load, toolchain and package versions."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from bench.servers import OFFICIAL_VERSION, official_sdk_version, official_version

PACKAGES = ("graphmem", "mcp", "msgspec", "lmdb", "pykka", "pydantic", "structlog", "anyio")
REPO = Path(__file__).resolve().parent.parent


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _run(*argv: str) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_facts() -> dict[str, Any]:
    """What the figures came from. `git` is only read, never changed."""
    memory = psutil.virtual_memory()
    dirty = _run("git", "-C", str(REPO), "status", "--porcelain")
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "ram_bytes": memory.total,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "node": _run("node", "--version"),
        "npm": _run("npm", "--version"),
        "packages": {name: _package(name) for name in PACKAGES},
        "official_server": {
            "package": "@modelcontextprotocol/server-memory",
            "pinned": OFFICIAL_VERSION,
            "installed": official_version(),
            "sdk": official_sdk_version(),
        },
        "git_commit": _run("git", "-C", str(REPO), "rev-parse", "HEAD"),
        "git_dirty_files": len(dirty.splitlines()) if dirty else 0,
    }
