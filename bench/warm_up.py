"""The searches right after a spawn, one by one: who answered each and how long it took.

bench.compare spawns graphmem on a store of N entities, answers `initialize`, then times its
selective `search_nodes` calls first (one, five warm-ups, then 200 measured): all of them fall
in the server's first second or two, while the early path (graphmem.early_reads) answers and
then the server loads and warms its search index (SearchProjection.warm). This replays that
sequence on bench.compare's own data set and labels every request from the server's log
(GRAPHMEM_LOG_LEVEL=INFO): `early` (answered by graphmem.early_reads: the first
`early_reads_done.answered` calls), `server` (before the writer logged `search_warmed`) or
`server warm` (after it). Writes bench/results/warm_up-<label>.{json,md}.

    python -m bench.warm_up --graphmem-rev main --label main
    python -m bench.warm_up --graphmem-rev HEAD --label head --sizes 10000,50000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dataset import write_jsonl
from bench.machine import load_average, machine_facts
from bench.servers import graphmem_source, seed, start
from bench.workload import Arguments

RESULTS = Path(__file__).resolve().parent / "results"
# bench.compare's selective-search cell: the first call, five warm-ups, 200 measured.
CALLS = 206
# Requests per row of the table: the first ones one by one, then in groups.
GROUPS = ((0, 1), (1, 2), (2, 6), (6, 26), (26, 56), (56, 106), (106, 156), (156, 206))
WHO = ("early", "server", "server warm")


def spawn_once(store: Any, n: int, logs: Path, calls: int) -> list[dict[str, Any]]:
    """One spawn: per request, ms from spawn to its answer, its own ms, and who answered."""
    args = Arguments(n, seed=1)  # bench.compare's queries, in its order
    log = logs / f"warm_up-{n}.stderr.log"
    log.unlink(missing_ok=True)
    spawned = time.perf_counter()
    client = start(store, log, GRAPHMEM_LOG_LEVEL="INFO")
    rows: list[dict[str, Any]] = []
    try:
        for _ in range(calls):
            reply = client.call(*args("search_nodes_selective"))
            if reply.failed or reply.entity_count() != 1:
                raise RuntimeError(f"search failed: {reply.describe()}")
            rows.append({"at_ms": (time.perf_counter() - spawned) * 1e3, "ms": reply.seconds * 1e3})
    finally:
        client.close(timeout=60)
    for row, who in zip(rows, _who_answered(log, len(rows)), strict=True):
        row["who"] = who
    return rows


def _who_answered(log: Path, calls: int) -> list[str]:
    """From the server's log: the first `early_reads_done.answered` calls were answered
    early; of the server's own `tool_called` lines, those before `search_warmed` came while
    its index was still being built."""
    early = 0
    who: list[str] = []
    warm = False
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        event = entry.get("event")
        if event == "early_reads_done":
            early = int(entry.get("answered", 0))
        elif event == "search_warmed":
            warm = True
        elif event == "tool_called" and not entry.get("early"):
            who.append("server warm" if warm else "server")
    labels = ["early"] * early + who
    if len(labels) != calls:
        raise RuntimeError(f"{log}: {len(labels)} calls logged, {calls} made")
    return labels


def summarise(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per group of requests: median ms, and how many of the runs' calls each path answered."""
    table = []
    for first, last in GROUPS:
        cells = [row for run in runs for row in run[first:last]]
        if not cells:
            continue
        table.append(
            {
                "requests": f"{first + 1}" if last == first + 1 else f"{first + 1}-{last}",
                "median_ms": statistics.median(c["ms"] for c in cells),
                "max_ms": max(c["ms"] for c in cells),
                "answered_by_s": statistics.median(c["at_ms"] for c in cells) / 1e3,
                "who": {w: sum(c["who"] == w for c in cells) for w in WHO},
            }
        )
    return table


def per_path(runs: list[list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per path, over the 200 measured calls (bench.compare's cell): count and median ms."""
    cells = [row for run in runs for row in run[6:]]
    return {
        w: {
            "calls": sum(c["who"] == w for c in cells),
            "median_ms": statistics.median([c["ms"] for c in cells if c["who"] == w] or [0.0]),
        }
        for w in WHO
    } | {"all": {"calls": len(cells), "median_ms": statistics.median(c["ms"] for c in cells)}}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Selective searches right after a spawn ({result['label']})",
        "",
        f"{result['graphmem_source']}; load before {result['load_before']}, after "
        f"{result['load_after']}; {result['runs']} spawns per size; command "
        f"`{result['command']}`.",
        "",
        "Per group of requests (bench.compare's order: 1 first call, 5 warm-ups, 200 measured):",
        "median ms of the calls, when the group was answered (median s from spawn), and how",
        "many calls (over all spawns) each path answered: early / server before its index",
        "was warm / server warm.",
        "",
    ]
    for size in result["sizes"]:
        lines += [
            f"## N = {size['n']:,}",
            "",
            "Measured calls (7-206, bench.compare's cell): median "
            f"{size['measured']['all']['median_ms']:.2f} ms; "
            + "; ".join(
                f"{w} {size['measured'][w]['calls']} calls, median "
                f"{size['measured'][w]['median_ms']:.2f} ms"
                for w in WHO
            ),
            "",
            "| requests | median ms | max ms | answered by (s) | early / server / warm |",
            "|---|---:|---:|---:|---|",
        ]
        for row in size["table"]:
            who = " / ".join(str(row["who"][w]) for w in WHO)
            lines.append(
                f"| {row['requests']} | {row['median_ms']:.2f} | {row['max_ms']:.2f} | "
                f"{row['answered_by_s']:.2f} | {who} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.warm_up", description=__doc__)
    parser.add_argument("--sizes", default="10000,50000", help="N, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="spawns per size")
    parser.add_argument("--graphmem-rev", default=None, help="as bench.compare's")
    parser.add_argument("--label", default="head", help="names the result files")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--logs", type=Path, default=None, help="keep the server logs here")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "label": args.label,
        "command": "python -m bench.warm_up " + " ".join(argv or __import__("sys").argv[1:]),
        "load_before": load_average(),
        "machine": machine_facts(),
        "runs": args.runs,
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="graphmem-warm-up-") as tmp:
        root = Path(tmp)
        src, result["graphmem_source"] = graphmem_source(args.graphmem_rev, root)
        for n in (int(part) for part in args.sizes.split(",")):
            dataset = write_jsonl(root / f"graph-{n}.jsonl", n)
            store = seed("graphmem", dataset.path, root / f"graphmem-{n}", root / "seed.log", src)
            # The first spawn of a store keeps the SDK's answers (bench.startup's warm-up
            # spawns): not one a host restarting the server sees.
            logs = args.logs or root
            logs.mkdir(parents=True, exist_ok=True)
            spawn_once(store, n, logs, 1)
            runs = [spawn_once(store, n, logs, CALLS) for _ in range(args.runs)]
            result["sizes"].append(
                {"n": n, "table": summarise(runs), "measured": per_path(runs), "runs": runs}
            )
            print(f"N={n:,}: {result['sizes'][-1]['measured']}", flush=True)
    result["load_after"] = load_average()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    stem = args.out_dir / f"warm_up-{args.label}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
