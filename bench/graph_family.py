"""The graph family's latencies on a large graph: every graph tool against its target.

Run: python -m bench.graph_family [--entities 100000 --edges 300000] [--calls 200]

Builds (or takes from bench/.cache/graph-family/) a realistic graph written straight into an
LMDB log (bench.graph_data), gives a fresh copy of it to `graphmem serve --tools memory,graph`
started as a subprocess over stdio, and times each operation of bench.graph_calls with the raw
client (bench/rpc.py): warm-up calls excluded, then p50 / p95 / p99 over the measured calls,
one call in flight. The server is started twice: the first start folds the log (cold), the
second starts from the checkpoints the first one saved (warm); the calls run on the second.
Tools the server does not list are skipped with a note. The issue's targets (a tenth of the
contract's §12 latencies, at ten times its scale) are judged on p50.

At --entities 100000 --edges 300000 (the issue's scale) the results go to
bench/results/graph_family.{json,md}; other sizes to bench/.cache/quick/ unless --out-dir says.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.graph_calls import GRAPH_TOOLS, OPERATIONS, CallArgs, Operation
from bench.graph_data import CACHE, GraphSpec, cached, fresh_copy
from bench.machine import load_average, machine_facts
from bench.profile import summarize
from bench.rpc import Reply, RpcClient, ServerGoneError
from bench.servers import Store, sample, start
from bench.workload import percentile

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
QUICK_RESULTS = HERE / ".cache" / "quick"
PROFILES = HERE / ".cache" / "profiles"
LOGS = HERE / ".cache" / "logs"
FULL = GraphSpec(100_000, 300_000)
MB = 1024 * 1024
TOOLS = "memory,graph"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.graph_family", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--entities", type=int, default=5_000, help="entities (default 5,000)")
    parser.add_argument("--edges", type=int, default=None, help="edges (default 3 x entities)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--calls", type=int, default=200, help="measured calls of a cheap operation (others scale)"
    )
    parser.add_argument(
        "--warmups", type=int, default=10, help="unmeasured calls first (fewer for heavy ones)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="record each operation's measured calls with py-spy (bench/.cache/profiles/)",
    )
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per operation, at most")
    parser.add_argument(
        "--stuck", type=float, default=300.0, help="kill the server after this long on one call"
    )
    parser.add_argument("--only", default=None, help="comma-separated labels or tools to run")
    parser.add_argument("--out-dir", type=Path, default=None, help="where the results go")
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help="where built graphs are kept")
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument(
        "--logs-dir", type=Path, default=LOGS, help="where the server's stderr goes"
    )
    args = parser.parse_args(argv)
    given = list(argv) if argv is not None else sys.argv[1:]
    args.command = " ".join(["python -m bench.graph_family", *given])
    if args.edges is None:
        args.edges = 3 * args.entities
    spec = GraphSpec(args.entities, args.edges, args.seed)
    if args.out_dir is None:
        args.out_dir = RESULTS if spec == FULL else QUICK_RESULTS
    return args


def say(message: str) -> None:
    print(message, flush=True)


def _summary(reply: Reply) -> dict[str, Any]:
    """A few facts about an answer (list lengths, counts) so a figure can be read in context."""
    if reply.failed:
        return {"error": reply.describe()}
    structured = reply.result().get("structuredContent") or {}
    facts: dict[str, Any] = {}
    for key, value in structured.items():
        if isinstance(value, list):
            facts[key] = len(value)
        elif isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) < 40):
            facts[key] = value
        elif isinstance(value, dict) and isinstance(value.get("total"), int):
            facts[f"{key}.total"] = value["total"]
    return facts


class Recorder:
    """py-spy recording a server while an operation's measured calls run (as bench.profile)."""

    def __init__(self, pid: int, out: Path) -> None:
        py_spy = shutil.which("py-spy") or shutil.which(
            "py-spy", path=str(Path(sys.executable).parent)
        )
        if py_spy is None:
            raise SystemExit("py-spy is not on PATH: pip install -e '.[bench]'")
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        command = [py_spy, "record", "--pid", str(pid), "--rate", "250", "--format", "raw"]
        self.process = subprocess.Popen(
            [*command, "--threads", "--output", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # py-spy attaches

    def stop(self) -> list[str]:
        self.process.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        self.process.wait(timeout=60)
        return summarize(self.out, 45)


def _profile_path(operation: Operation) -> Path:
    name = "".join(c if c.isalnum() else "-" for c in operation.label)
    return PROFILES / f"graph-{name}.txt"


class Watchdog:
    """Kills the server when no call has finished for `seconds`: the client's blocking read
    then ends (ServerGoneError) instead of waiting forever on a stuck server."""

    def __init__(self, client: RpcClient, seconds: float) -> None:
        self.client, self.seconds = client, seconds
        self.last = time.monotonic()
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def pet(self) -> None:
        self.last = time.monotonic()

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            if time.monotonic() - self.last > self.seconds:
                self.fired = True
                self.client.proc.kill()
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _wanted(operation: Operation, calls: int) -> int:
    return max(1, operation.calls * calls // 200)


def _settle(client: RpcClient, most_s: float = 600.0) -> None:
    """Until merge suggestions report no entity waiting for its vector (at most `most_s`)."""
    deadline = time.monotonic() + most_s
    while time.monotonic() < deadline:
        reply = client.call("graph_merge_suggestions", {"entity_id": "-", "log_to_audit": False})
        content = reply.result().get("structuredContent") or {}
        if reply.failed or content.get("pending_embeddings", 0) == 0:
            return
        time.sleep(0.5)


def measure(
    client: RpcClient,
    operation: Operation,
    args: CallArgs,
    *,
    calls: int,
    warmups: int,
    budget_s: float,
    watchdog: Watchdog | None = None,
    profile: Path | None = None,
) -> dict[str, Any]:
    """One operation: warm-ups (the first timed on its own: lazy indexes), then measured calls."""
    row: dict[str, Any] = {
        "label": operation.label,
        "tool": operation.tool,
        "target_ms": operation.target_ms,
        "note": operation.note,
    }
    errors: list[str] = []
    failures = write_failures = 0

    def run() -> Reply:
        nonlocal failures
        reply = client.call(operation.tool, operation.arguments(args))
        if watchdog is not None:
            watchdog.pet()
        if reply.failed:
            failures += 1
            if len(errors) < 3:
                errors.append(reply.describe())
        return reply

    if operation.settle:
        _settle(client)
    first = run()
    for _ in range(max(0, warmups - 1)):
        run()
    failures_in_warmup = failures
    wanted = _wanted(operation, calls)
    seconds: list[float] = []
    recorder = None if profile is None else Recorder(client.pid, profile)
    cpu_before = sample(client.pid).cpu_seconds
    started = time.perf_counter()
    last = first
    while len(seconds) < wanted:
        if operation.after_write:
            write = (operation.write or CallArgs.relate_new)(args)
            write_failures += client.call("graph_relate", write).failed
            if watchdog is not None:
                watchdog.pet()
        last = run()
        seconds.append(last.seconds)
        if time.perf_counter() - started > budget_s and len(seconds) >= 3:
            break
    cpu = sample(client.pid).cpu_seconds - cpu_before
    if recorder is not None:
        row["profile"] = {"file": str(profile), "summary": recorder.stop()}
    ms = [s * 1e3 for s in seconds]
    row.update(
        calls=len(ms),
        planned_calls=wanted,
        warmups=max(1, warmups),
        first_call_ms=first.seconds * 1e3,
        p50_ms=percentile(ms, 50),
        p95_ms=percentile(ms, 95),
        p99_ms=percentile(ms, 99),
        mean_ms=sum(ms) / len(ms),
        max_ms=max(ms),
        # With a write before each call the process's CPU covers both: not the read's own.
        cpu_ms_per_call=None if operation.after_write else cpu * 1e3 / len(ms),
        errors=failures - failures_in_warmup,
        warmup_errors=failures_in_warmup,
        write_errors=write_failures,
        error_samples=errors,
        response_bytes=last.size,
        last_answer=_summary(last),
    )
    row["verdict"] = verdict(row)
    return row


def verdict(row: dict[str, Any]) -> str:
    if row.get("skipped"):
        return "skipped"
    if row["errors"] >= row["calls"]:
        return "errors"
    if row["target_ms"] is None:
        return "report"
    return "PASS" if row["p50_ms"] <= row["target_ms"] else "FAIL"


def _start(store: Store, logs: Path) -> tuple[RpcClient, float]:
    spawned = time.perf_counter()
    client = start(store, logs / "graph-family.stderr.log", GRAPHMEM_TOOLS=TOOLS)
    return client, (time.perf_counter() - spawned) * 1e3


def run(args: argparse.Namespace, progress: Callable[[str], None] = say) -> dict[str, Any]:
    spec = GraphSpec(args.entities, args.edges, args.seed)
    began = time.perf_counter()
    log_dir, manifest = cached(spec, progress, args.cache_dir)
    progress(
        f"graph {spec.key}: {manifest['counts']['entities']:,} entities, "
        f"{manifest['counts']['edges']:,} edges ({time.perf_counter() - began:.1f} s)"
    )
    chosen = None if args.only is None else set(args.only.split(","))
    operations = [
        op for op in OPERATIONS if chosen is None or op.label in chosen or op.tool in chosen
    ]
    logs: Path = args.logs_dir
    logs.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "command": args.command,
        "load_before": load_average(),
        "machine": machine_facts(),
        "client": "raw JSON-RPC over stdio (bench/rpc.py), protocolVersion 2025-06-18",
        "graph": {k: v for k, v in manifest.items() if k in ("spec", "counts", "events")},
        "queries": {
            kind: sorted(q["matches"] for q in queries)
            for kind, queries in manifest["queries"].items()
        },
    }
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-graph-bench-") as tmp:
        store = Store("graphmem", fresh_copy(log_dir, Path(tmp) / "data"), 0.0)
        results["disk_bytes"] = store.disk_bytes()
        client, cold_ms = _start(store, logs)
        cold = sample(client.pid)
        client.close(timeout=300)
        client, warm_ms = _start(store, logs)
        watchdog = Watchdog(client, args.stuck)
        try:
            listed = client.list_tools()
            loaded = sample(client.pid)
            results["server"] = {
                "startup_cold_ms": cold_ms,
                "startup_warm_ms": warm_ms,
                "rss_cold_loaded_bytes": cold.rss_bytes,
                "rss_loaded_bytes": loaded.rss_bytes,
                "graph_tools_listed": sorted(t for t in listed if t.startswith("graph_")),
            }
            progress(
                f"server start-up: {cold_ms / 1e3:.2f} s folding the log, {warm_ms / 1e3:.2f} s "
                f"from its checkpoint; RSS {loaded.rss_bytes / MB:.0f} MB loaded"
            )
            missing = [tool for tool in GRAPH_TOOLS if tool not in listed]
            if missing:
                progress(f"the server does not list {', '.join(missing)}: skipped")
            call_args = CallArgs(manifest, int(time.time() * 1000))
            rows = []
            for operation in operations:
                absent = [
                    tool
                    for tool in (operation.tool, *(["graph_relate"] * operation.after_write))
                    if tool not in listed
                ]
                if absent:
                    row = {
                        "label": operation.label,
                        "tool": operation.tool,
                        "target_ms": operation.target_ms,
                        "skipped": f"the server does not list {absent[0]}",
                        "verdict": "skipped",
                    }
                else:
                    row = measure(
                        client,
                        operation,
                        call_args,
                        calls=args.calls,
                        # Heavy operations (few planned calls) get fewer warm-ups too.
                        warmups=min(args.warmups, max(1, operation.calls // 10)),
                        budget_s=args.budget,
                        watchdog=watchdog,
                        profile=_profile_path(operation) if args.profile else None,
                    )
                rows.append(row)
                progress(_line(row))
                if "profile" in row:
                    progress("\n".join(row["profile"]["summary"]))
            after = sample(client.pid)
            results["server"].update(
                rss_after_bytes=after.rss_bytes, peak_rss_bytes=after.peak_rss_bytes
            )
        except ServerGoneError:
            if watchdog.fired:
                raise SystemExit(f"a call took over {args.stuck:g} s: server killed") from None
            raise
        finally:
            watchdog.stop()
            client.close(timeout=300)
    results["operations"] = rows
    results["load_after"] = load_average()
    results["wall_seconds"] = time.perf_counter() - began
    return results


def _target(row: dict[str, Any]) -> str:
    return "—" if row["target_ms"] is None else f"<= {row['target_ms']:g}"


def _line(row: dict[str, Any]) -> str:
    if row.get("skipped"):
        return f"  {row['label']:<52} skipped: {row['skipped']}"
    errors = f", {row['errors']} errors" if row["errors"] else ""
    return (
        f"  {row['label']:<52} p50 {row['p50_ms']:8.2f}  p95 {row['p95_ms']:8.2f}  "
        f"p99 {row['p99_ms']:8.2f} ms  target {_target(row):>7}  {row['verdict']:<7} "
        f"({row['calls']} calls{errors})"
    )


def table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| operation | target p50 ms | p50 ms | p95 ms | p99 ms | first call ms | CPU ms/call "
        "| calls | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in results["operations"]:
        if row.get("skipped"):
            lines.append(
                f"| {row['label']} | {_target(row)} | — | — | — | — | — | 0 "
                f"| skipped: {row['skipped']} |"
            )
            continue
        cpu = row["cpu_ms_per_call"]
        errors = f" ({row['errors']} errors)" if row["errors"] else ""
        lines.append(
            f"| {row['label']} | {_target(row)} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} "
            f"| {row['p99_ms']:.2f} | {row['first_call_ms']:.1f} "
            f"| {'—' if cpu is None else f'{cpu:.2f}'} | {row['calls']} "
            f"| {row['verdict']}{errors} |"
        )
    return lines


def markdown(results: dict[str, Any]) -> str:
    m, counts, server = results["machine"], results["graph"]["counts"], results["server"]
    spec = results["graph"]["spec"]
    median = {kind: values[len(values) // 2] for kind, values in results["queries"].items()}
    return "\n".join(
        [
            "# The graph family on a large graph",
            "",
            f"Run {m['date']} on {m['cpu_model']} ({m['logical_cores']} logical cores), Python "
            f"{m['python']}, graphmem at {str(m['git_commit'])[:10]} ({m['git_dirty_files']} "
            f"files changed in the work tree); load average before {results['load_before']}, "
            f"after {results['load_after']}. Command: `{results['command']}`.",
            "",
            f"Graph: {counts['entities']:,} entities, {counts['edges']:,} edges "
            f"({counts['superseded_edges']:,} superseded, {counts['dated_edges']:,} dated, "
            f"{counts['contradictions']:,} CONTRADICTS), median degree "
            f"{counts['median_degree']}, largest {counts['max_degree']:,} "
            f"({counts['hubs_over_1000_edges']} entities over 1,000 edges); seed {spec['seed']}, "
            f"{results['disk_bytes'] / MB:.0f} MB on disk. Search queries match a median of "
            + ", ".join(f"{v:,} ({k})" for k, v in median.items())
            + " names.",
            "",
            f"Server (`graphmem serve --tools {TOOLS}`): start-up "
            f"{server['startup_cold_ms'] / 1e3:.2f} s folding the log, "
            f"{server['startup_warm_ms'] / 1e3:.2f} s from its checkpoint (spawn to the end of "
            f"`initialize`); RSS {server['rss_cold_loaded_bytes'] / MB:.0f} MB after the "
            f"cold start, {server['rss_loaded_bytes'] / MB:.0f} MB after the warm one, "
            f"{server.get('rss_after_bytes', 0) / MB:.0f} MB after the run "
            f"(peak {server.get('peak_rss_bytes', 0) / MB:.0f} MB).",
            "",
            "p50 / p95 / p99 by nearest rank over the measured calls, one call in flight, "
            "warm-ups excluded; the first call (the first warm-up) is shown on its own. "
            "Targets: a tenth of the contract's §12 latencies, judged on p50. Rows marked "
            '"after a write" make one untimed graph_relate before each timed call.',
            "",
            *table(results),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "graph_family.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (args.out_dir / "graph_family.md").write_text(text)
    say("\n" + "\n".join(table(results)))
    say(f"\nwrote {args.out_dir}/graph_family.{{json,md}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
