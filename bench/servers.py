"""The two servers under test: how to install, seed, start and watch each one.

The official server (`@modelcontextprotocol/server-memory`, pinned) is installed with npm into
`bench/.cache/official` when missing and started as `node dist/index.js` on a copy of the data
file; graphmem is started as `python -m graphmem serve` on a data dir filled by
`graphmem import` beforehand.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil  # type: ignore[import-untyped]

from bench.rpc import PROTOCOL_VERSION, RpcClient, base_env

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"
OFFICIAL_VERSION = "2026.8.31"
REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / ".cache" / "official"
OFFICIAL_PACKAGE_DIR = CACHE / "node_modules" / "@modelcontextprotocol" / "server-memory"
OFFICIAL_ENTRY = OFFICIAL_PACKAGE_DIR / "dist" / "index.js"
INSTALL_TIMEOUT = 300

ServerName = Literal["graphmem", "official"]
SERVERS: tuple[ServerName, ...] = ("graphmem", "official")


def _package_version(package_json: Path) -> str | None:
    try:
        version = json.loads(package_json.read_text()).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def official_version() -> str | None:
    return _package_version(OFFICIAL_PACKAGE_DIR / "package.json")


def official_sdk_version() -> str | None:
    sdk = CACHE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    return _package_version(sdk)


def ensure_official() -> Path:
    """`dist/index.js` of the pinned official server, installing it with npm when missing."""
    if OFFICIAL_ENTRY.is_file() and official_version() == OFFICIAL_VERSION:
        return OFFICIAL_ENTRY
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(f"npm is not on PATH: install Node.js to benchmark {OFFICIAL_PACKAGE}")
    command = [npm, "install", "--prefix", str(CACHE), f"{OFFICIAL_PACKAGE}@{OFFICIAL_VERSION}"]
    print(f"installing the official server: {' '.join(command)}", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [*command, "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    if done.returncode != 0 or not OFFICIAL_ENTRY.is_file():
        raise SystemExit(f"npm install failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return OFFICIAL_ENTRY


PACKAGES = ("graphmem", "actors", "projections", "eventstore")


def source_fingerprint(root: Path) -> str:
    """A short hash of graphmem's Python sources under `root`: which code a figure came from."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _graphmem_env(src: Path | None, **extra: str) -> dict[str, str]:
    # PYTHONPATH comes before the editable install's .pth entry, so `src` wins when given.
    return base_env(**({"PYTHONPATH": str(src)} if src else {}), **extra)


def graphmem_source(rev: str | None, root: Path) -> tuple[Path | None, dict[str, Any]]:
    """Where graphmem runs from: the work tree (None), a `git archive` of `rev` (read-only),
    or, when `rev` names a directory, a copy of that source tree taken now (uncommitted code
    measured on code that cannot change under the run)."""
    if rev is None:
        return None, {"from": "work tree", "fingerprint": source_fingerprint(REPO)}
    if Path(rev).is_dir():
        src = root / "graphmem-src"
        ignore = shutil.ignore_patterns(".git", ".venv", ".cache", "__pycache__", "*.pyc")
        shutil.copytree(rev, src, ignore=ignore)
        return src, {"from": f"a copy of {rev}", "fingerprint": source_fingerprint(src)}
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    src = root / "graphmem-src"
    src.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    info = {"from": f"git archive {rev}", "commit": commit, "fingerprint": source_fingerprint(src)}
    info["accelerators"] = compile_accelerators(src)
    return src, info


_COMPILE = """
import sys, tempfile
from pathlib import Path
root = Path(sys.argv[1])
sys.path.insert(0, str(root))
import hatch_build
with tempfile.TemporaryDirectory() as temp:
    print(" ".join(sorted(hatch_build._compile(root, root, Path(temp)))))
"""


def compile_accelerators(src: Path) -> list[str]:
    """The C accelerators of an archived revision compiled beside its sources, as its install
    would (hatch_build.py): without them a revision would be measured on its pure-Python
    twins. Their module names; none for a revision without any (or without a compiler)."""
    if not (src / "hatch_build.py").exists():
        return []
    built = subprocess.run(
        [sys.executable, "-c", _COMPILE, str(src)], capture_output=True, text=True, check=False
    )
    return built.stdout.split() if built.returncode == 0 else []


@dataclass(frozen=True)
class Store:
    """One server's data, ready to serve: a file for the official server, a dir for graphmem."""

    server: ServerName
    path: Path
    seed_seconds: float  # graphmem import time; 0 for the official server's file copy
    src: Path | None = None  # graphmem's source tree, when not the installed one

    def disk_bytes(self) -> int:
        if self.path.is_file():
            return self.path.stat().st_size
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())


def seed(
    server: ServerName, jsonl: Path, workdir: Path, log: Path, src: Path | None = None
) -> Store:
    """A fresh store for `server` holding the graph in `jsonl` (graphmem run from `src`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if server == "official":
        target = workdir / "memory.jsonl"
        shutil.copyfile(jsonl, target)
        return Store(server, target, 0.0)
    data_dir = workdir / "graphmem-data"
    started = time.perf_counter()
    with log.open("ab") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(jsonl)],
            stdout=sink,
            stderr=subprocess.DEVNULL,  # tqdm's progress bar
            env=_graphmem_env(src, GRAPHMEM_LOG_LEVEL="WARNING"),
            cwd=src,  # `-m` puts the working dir first on sys.path
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"graphmem import of {jsonl} failed (exit {done.returncode}); see {log}")
    return Store(server, data_dir, time.perf_counter() - started, src)


def start(
    store: Store, stderr_log: Path, *, version: str = PROTOCOL_VERSION, **graphmem_env: str
) -> RpcClient:
    """Spawn the store's server on it and complete the `initialize` handshake (offering
    protocol `version`); graphmem gets `graphmem_env` besides its usual environment."""
    if store.server == "official":
        node = shutil.which("node")
        if node is None:
            raise SystemExit("node is not on PATH")
        argv = [node, str(ensure_official())]
        env = base_env(MEMORY_FILE_PATH=str(store.path.resolve()))
    else:
        argv = [sys.executable, "-m", "graphmem", "serve"]
        # WARNING: the per-call INFO line is the server's own cost, but not what we compare.
        env = _graphmem_env(
            store.src,
            GRAPHMEM_DIR=str(store.path.resolve()),
            **{"GRAPHMEM_LOG_LEVEL": "WARNING", **graphmem_env},
        )
    client = RpcClient(argv, env, stderr_log, cwd=store.src)  # `-m` puts the cwd on sys.path
    client.initialize(version)
    return client


@dataclass(frozen=True)
class ProcessSample:
    rss_bytes: int
    peak_rss_bytes: int  # VmHWM: the high-water mark since the process started
    cpu_seconds: float  # user + system, all threads


def sample(pid: int) -> ProcessSample:
    process = psutil.Process(pid)
    with process.oneshot():
        rss = process.memory_info().rss
        times = process.cpu_times()
    peak = rss
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    except OSError:
        pass
    return ProcessSample(rss, peak, times.user + times.system)
