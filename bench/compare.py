"""graphmem against the official memory server: same data, same raw stdio client, same run.

Run: python -m bench.compare [--sizes 0,1000,10000,50000]
     [--graphmem-only-sizes 200000,1000000] [--quick] [--core]

For each size N it writes an official-format JSONL of N entities, gives each server a fresh
copy (the official server a file, graphmem a data dir filled by `graphmem import`), times every
tool, then runs the lost-write scenarios at N = 1,000 and checks the issue's targets. Writes
compare.json, compare.md and compare.png to bench/results/ (a --quick run to
bench/.cache/quick/ unless --out-dir says otherwise). See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import core
from bench.dataset import sizes_argument, write_jsonl
from bench.lost_writes import run_lost_writes
from bench.machine import load_average, machine_facts
from bench.report import chart, check_targets, label, markdown, target_lines
from bench.servers import (
    REPO,
    SERVERS,
    ServerName,
    ensure_official,
    graphmem_source,
    seed,
    source_fingerprint,
)
from bench.workload import OPERATIONS, plan_for, run_size

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
QUICK_RESULTS = HERE / ".cache" / "quick"
LOGS = HERE / ".cache" / "logs"
LOST_WRITES_N = 1_000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sizes", type=sizes_argument, default=None, help="N for both servers")
    parser.add_argument(
        "--graphmem-only-sizes", type=sizes_argument, default=None, help="N for graphmem alone"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: N = 0 and 1,000, few calls"
    )
    parser.add_argument(
        "--lost-write-repeats", type=int, default=None, help="runs per scenario (default 3)"
    )
    parser.add_argument("--out-dir", type=Path, default=None, help="where the reports go")
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument(
        "--core", action="store_true", help="also run the core log benchmarks (bench.core)"
    )
    parser.add_argument(
        "--graphmem-rev",
        default=None,
        metavar="REV",
        help="benchmark graphmem as committed at REV (git archive into the scratch dir), "
        "not the work tree as it is: others may be editing it during a long run",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        metavar="FILE",
        help="measure nothing: rebuild the reports from an earlier compare.json",
    )
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = [0, 1_000] if args.quick else [0, 1_000, 10_000, 50_000]
    if args.graphmem_only_sizes is None:
        args.graphmem_only_sizes = [] if args.quick else [200_000, 1_000_000]
    if args.lost_write_repeats is None:
        args.lost_write_repeats = 1 if args.quick else 3
    if args.out_dir is None:
        args.out_dir = QUICK_RESULTS if args.quick else RESULTS
    return args


def say(message: str) -> None:
    print(message, flush=True)


def _run_sizes(
    args: argparse.Namespace, root: Path, src: Path | None, results: dict[str, Any]
) -> None:
    both = set(args.sizes)
    for n in sorted(both | set(args.graphmem_only_sizes)):
        servers: tuple[ServerName, ...] = SERVERS if n in both else ("graphmem",)
        started = time.perf_counter()
        dataset = write_jsonl(root / f"graph-{n}.jsonl", n)
        say(
            f"N={n:,}: wrote {dataset.bytes / 2**20:.1f} MB of JSONL in "
            f"{time.perf_counter() - started:.1f} s"
        )
        row: dict[str, Any] = {
            "n": n,
            "dataset": {
                "entities": dataset.entities,
                "relations": dataset.relations,
                "bytes": dataset.bytes,
            },
            "plan": vars(plan_for(n, args.quick)),
            "servers": {},
        }
        for server in servers:
            workdir = root / f"{server}-{n}"
            store = seed(server, dataset.path, workdir, LOGS / "seed.log", src)
            if server == "graphmem":
                say(f"  graphmem import of N={n:,}: {store.seed_seconds:.1f} s")
            fingerprint = source_fingerprint(src or REPO) if server == "graphmem" else None
            row["servers"][server] = run_size(store, n, plan_for(n, args.quick), LOGS, progress=say)
            row["servers"][server].update(started_at=time.strftime("%H:%M:%S"))
            if fingerprint is not None:
                row["servers"][server]["source_fingerprint"] = fingerprint
            shutil.rmtree(workdir, ignore_errors=True)
        results["sizes"].append(row)
        if n != LOST_WRITES_N:
            dataset.path.unlink()
        _write_json(args.out_dir, results)  # a crash later keeps what was measured


def _write_json(out_dir: Path, results: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "compare.json").write_text(json.dumps(results, indent=1) + "\n")


def _summary(results: dict[str, Any]) -> list[str]:
    lines = [f"{'N':>9} {'operation':<26} {'graphmem p50/p95 ms':>22} {'official p50/p95 ms':>22}"]
    for row in results["sizes"]:
        for operation in OPERATIONS:
            cells = []
            for server in SERVERS:
                cell = row["servers"].get(server, {}).get("ops", {}).get(operation)
                cells.append("—" if cell is None else f"{cell['p50_ms']:.2f}/{cell['p95_ms']:.2f}")
            lines.append(f"{row['n']:>9,} {label(operation):<26} {cells[0]:>22} {cells[1]:>22}")
    return lines


def _report(out_dir: Path, results: dict[str, Any]) -> None:
    checks = check_targets(results)
    results["targets"] = checks
    _write_json(out_dir, results)
    (out_dir / "compare.md").write_text(markdown(results, checks))
    chart(results, out_dir / "compare.png")
    say("\n".join(["", *_summary(results), "", "Targets:", *target_lines(checks)]))
    say(f"\nwrote {out_dir}/compare.{{json,md,png}}; server logs in {LOGS}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json is not None:
        _report(args.out_dir, json.loads(args.from_json.read_text()))
        return 0
    ensure_official()
    LOGS.mkdir(parents=True, exist_ok=True)
    wall = time.perf_counter()
    results: dict[str, Any] = {
        "command": " ".join(["python -m bench.compare", *(argv or sys.argv[1:])]),
        "quick": args.quick,
        "load_before": load_average(),
        "machine": machine_facts(),
        "client": "raw JSON-RPC over stdio (bench/rpc.py), protocolVersion 2025-06-18",
        "sizes": [],
        "lost_writes": [],
    }
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-compare-") as tmp:
        root = Path(tmp)
        src, results["graphmem_source"] = graphmem_source(args.graphmem_rev, root)
        say(f"graphmem from {results['graphmem_source']}")
        _run_sizes(args, root, src, results)
        lost_jsonl = root / f"graph-{LOST_WRITES_N}.jsonl"
        if not lost_jsonl.exists():
            write_jsonl(lost_jsonl, LOST_WRITES_N)
        for server in SERVERS:
            say(f"lost writes: {server}, N={LOST_WRITES_N:,}, {args.lost_write_repeats} runs each")
            rows = run_lost_writes(
                server,
                lost_jsonl,
                LOST_WRITES_N,
                root / "lost",
                LOGS,
                args.lost_write_repeats,
                src,
            )
            for row in rows:
                say(f"  {row['scenario']:<16} expected {row['expected']} found {row['found']}")
            results["lost_writes"].extend(rows)
    results["load_after"] = load_average()
    results["wall_seconds"] = time.perf_counter() - wall
    _report(args.out_dir, results)
    if args.core:
        core.main([])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
