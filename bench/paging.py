"""Paged read_graph latency as deleted history and the live graph grow.

For each case a fresh data dir is seeded in-process (bench.inprocess: `live + deleted`
entities with three observations and a relation each, then `deleted` of them deleted), and
`read_graph {limit: 10, offset}` is called at offsets spread over the live graph, one call at a
time, through the server's tool handler (no transport: the server's own work). Prints p50/p95
per case and writes them as JSON.

Run: python -m bench.paging [--cases 5000:10000,5000:60000,100000:0] [--calls 40]
     [--json bench/results/paging.json] [--label after]
To measure another tree (the code before a change), copy this file and bench/inprocess.py into
it and run it there: `git archive REV | tar -x -C /tmp/old`, copy, `cd /tmp/old && python -m
bench.paging --label before`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.inprocess import rss_mib, seed, served


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(live: int, deleted: int, calls: int, limit: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="graphmem-paging-") as scratch:
        async with served(Path(scratch)) as call:
            started = time.perf_counter()
            await seed(call, live, deleted)
            seeded = time.perf_counter() - started
            began = time.perf_counter()
            # The first page builds the name index (one sort of the alive names) where there
            # is one: reported on its own, not among the pages measured after it.
            await call("read_graph", {"limit": limit, "offset": 0})
            first = (time.perf_counter() - began) * 1000
            times = []
            for k in range(calls):
                offset = (k * 7919) % max(1, live - limit)
                began = time.perf_counter()
                await call("read_graph", {"limit": limit, "offset": offset})
                times.append((time.perf_counter() - began) * 1000)
            return {
                "live": live,
                "deleted": deleted,
                "limit": limit,
                "calls": calls,
                "first_page_ms": round(first, 3),
                "page_ms_p50": round(statistics.median(times), 3),
                "page_ms_p95": round(_percentile(times, 0.95), 3),
                "seed_s": round(seeded, 1),
                "rss_mib": round(rss_mib(), 1),
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="5000:10000,5000:60000,100000:0")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--label", default="current")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for case in args.cases.split(","):
        live, deleted = (int(x) for x in case.split(":"))
        result = asyncio.run(measure(live, deleted, args.calls, args.limit))
        results.append(result)
        print(
            f"{args.label}: live {live:>7,} deleted {deleted:>7,}  read_graph limit "
            f"{args.limit}: p50 {result['page_ms_p50']:8.3f} ms  p95 "
            f"{result['page_ms_p95']:8.3f} ms  first page {result['first_page_ms']:.1f} ms "
            f"(seeded in {result['seed_s']} s)",
            flush=True,
        )
    if args.json is not None:
        existing = json.loads(args.json.read_text()) if args.json.exists() else {}
        existing[args.label] = results
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(existing, indent=2) + "\n")


if __name__ == "__main__":
    main()
