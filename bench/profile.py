"""Where graphmem's time goes: py-spy samples of a `graphmem serve` process under one workload.

Run: python -m bench.profile [--n 50000] [--ops open_nodes,search_nodes_selective] [--calls 300]

Seeds a fresh data dir with N entities (as bench.compare does), starts graphmem, and for each
operation records the server with `py-spy record --format raw` while the raw client sends the
calls. Writes the collapsed stacks (flamegraph input) to bench/.cache/profiles/ and prints the
functions with the most samples, inclusive and self. Needs py-spy (`pip install -e '.[bench]'`)
and the right to ptrace the server (root, or kernel.yama.ptrace_scope = 0).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.dataset import write_jsonl
from bench.servers import graphmem_source, seed, start
from bench.workload import CHEAP, OPERATIONS, Arguments

OUT = Path(__file__).resolve().parent / ".cache" / "profiles"
LOGS = Path(__file__).resolve().parent / ".cache" / "logs"


# Leaf frames of a thread that waits rather than works: py-spy samples them too.
IDLE_LEAVES = frozenset(
    {
        "Condition.wait (threading.py)",
        "EpollSelector.select (selectors.py)",
        "Event.wait (threading.py)",
        "Thread.join (threading.py)",
        # The schema watcher (watchfiles) blocks in Rust, under its Python frame.
        "watch (main.py)",
    }
)
LAYERS = (
    ("mcp/", "MCP SDK"),
    ("mcp_types/", "MCP SDK"),
    ("pydantic", "pydantic"),
    ("anyio/", "anyio"),
    ("asyncio/", "asyncio"),
    ("graphmem/", "graphmem edge"),
    ("actors/", "actors"),
    ("projections/", "projections"),
    ("eventstore/", "eventstore"),
    ("pykka/", "pykka"),
    ("structlog/", "structlog"),
    ("opentelemetry/", "opentelemetry"),
    ("json/", "json"),
)


def _frame_name(frame: str) -> str:
    """`func (path/to/module.py:12)` -> `func (module.py)`: lines merged, paths shortened."""
    name, _, where = frame.partition(" (")
    module = where.rsplit(":", 1)[0].rstrip(")")
    parts = module.split("/")
    short = "/".join(parts[-2:]) if parts[-1] == "__init__.py" else parts[-1]
    return f"{name} ({short})"


def _layer(frame: str) -> str:
    where = frame.partition(" (")[2]
    return next((layer for prefix, layer in LAYERS if prefix in where), "other (stdlib, C)")


def summarize(collapsed: Path, top: int) -> list[str]:
    """Busy samples only (waiting threads left out): the `top` functions by inclusive and by
    self samples, and self samples by layer, as percentages of all busy samples."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    total = idle = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        raw = [f for f in stack.split(";")[1:] if f]  # [0] names the thread
        frames = [_frame_name(f) for f in raw]
        if not frames or frames[-1] in IDLE_LEAVES:
            idle += count
            continue
        total += count
        for name in set(frames):
            inclusive[name] += count
        own[frames[-1]] += count
        layers[_layer(raw[-1])] += count
    if not total:
        return ["no busy samples"]

    def rows(counter: Counter[str], limit: int) -> list[str]:
        return [f"  {100 * c / total:5.1f}%  {name}" for name, c in counter.most_common(limit)]

    return [
        f"{total} busy samples ({idle} idle left out); inclusive (function and its callees):",
        *rows(inclusive, top),
        "self (the function's own code, C calls included):",
        *rows(own, top),
        "self by layer:",
        *rows(layers, len(LAYERS) + 1),
    ]


def profile(
    n: int, operations: Sequence[str], calls: int, rate: int, top: int, rev: str | None
) -> None:
    # The venv's bin dir need not be on PATH when the venv's python is called directly.
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        raise SystemExit("py-spy is not on PATH: pip install -e '.[bench]'")
    OUT.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="graphmem-profile-") as tmp:
        root = Path(tmp)
        src, source = graphmem_source(rev, root)
        dataset = write_jsonl(root / "graph.jsonl", n)
        store = seed("graphmem", dataset.path, root / "store", LOGS / "seed.log", src)
        print(f"graphmem from {source}; N={n:,} imported in {store.seed_seconds:.1f} s")
        args = Arguments(n, seed=7)
        with start(store, LOGS / f"profile-{n}.stderr.log") as client:
            for operation in operations:
                for _ in range(3):
                    client.call(*args(operation))
                out = OUT / f"graphmem-{n}-{operation}.txt"
                command = [py_spy, "record", "--pid", str(client.pid), "--rate", str(rate)]
                command += ["--format", "raw", "--threads", "--output", str(out)]
                recorder = subprocess.Popen(
                    command,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)  # py-spy attaches
                started = time.perf_counter()
                count = calls if operation in CHEAP else max(3, calls // 50)
                for _ in range(count):
                    client.call(*args(operation))
                elapsed = time.perf_counter() - started
                recorder.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
                recorder.wait(timeout=60)
                print(
                    f"\n== {operation}: {count} calls, {1e3 * elapsed / count:.2f} ms/call; {out}"
                )
                print("\n".join(summarize(out, top)), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000, help="entities pre-loaded")
    parser.add_argument(
        "--ops", default=",".join(OPERATIONS), help=f"operations, of: {', '.join(OPERATIONS)}"
    )
    parser.add_argument("--calls", type=int, default=300, help="calls per cheap operation")
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--top", type=int, default=25, help="functions listed")
    parser.add_argument(
        "--graphmem-rev", default=None, metavar="REV", help="profile graphmem as committed at REV"
    )
    args = parser.parse_args(argv)
    operations = [op for op in args.ops.split(",") if op]
    unknown = set(operations) - set(OPERATIONS)
    if unknown:
        parser.error(f"unknown operations: {', '.join(sorted(unknown))}")
    profile(args.n, operations, args.calls, args.rate, args.top, args.graphmem_rev)


if __name__ == "__main__":
    main()
