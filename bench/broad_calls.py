"""Whole-graph answers side by side, call by call: broad `search_nodes` and `read_graph`.

bench.compare times each server's calls in a block of its own, minutes apart; on a shared
machine whose load swings, the two blocks see different machines. Here both servers run at
once on copies of one graph of N entities, and their calls alternate (graphmem, official,
graphmem, ...), so each pair shares the load of its moment. Per call: the wall time to the
whole answer read by the client, and the server's own CPU time (user + system, all threads,
read from /proc before and after). Figures are medians; ratios are graphmem / official.

    python -m bench.broad_calls               # N = 50,000, 7 calls per server and tool
    python -m bench.broad_calls --n 10000 --calls 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, write_jsonl
from bench.machine import load_average, machine_facts
from bench.rpc import RpcClient
from bench.servers import SERVERS, sample, seed, start

RESULTS = Path(__file__).resolve().parent / "results"
CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("search_nodes_broad", "search_nodes", {"query": COMMON_WORD}),
    ("read_graph", "read_graph", {}),
)


def timed(client: RpcClient, tool: str, arguments: dict[str, Any]) -> dict[str, float]:
    before = sample(client.pid).cpu_seconds
    reply = client.call(tool, arguments)
    cpu = sample(client.pid).cpu_seconds - before
    if reply.failed:
        raise RuntimeError(f"{tool} failed: {reply.describe()}")
    return {"wall_ms": reply.seconds * 1000, "cpu_ms": cpu * 1000, "bytes": reply.size}


def run(n: int, calls: int, root: Path) -> dict[str, Any]:
    jsonl = root / f"graph-{n}.jsonl"
    write_jsonl(jsonl, n)
    clients = {
        server: start(seed(server, jsonl, root / server, root / "seed.log"), root / f"{server}.log")
        for server in SERVERS
    }
    samples: dict[str, dict[str, list[dict[str, float]]]] = {
        label: {server: [] for server in SERVERS} for label, _, _ in CALLS
    }
    try:
        for label, tool, arguments in CALLS:
            for server in SERVERS:  # one warm-up each: caches and lazily built indexes
                timed(clients[server], tool, arguments)
            for _ in range(calls):
                for server in SERVERS:
                    samples[label][server].append(timed(clients[server], tool, arguments))
    finally:
        for client in clients.values():
            client.close(timeout=300)
    result: dict[str, Any] = {"n": n, "calls": calls, "median": {}, "ratio": {}, "samples": samples}
    for label, _, _ in CALLS:
        median = {
            server: {
                key: round(statistics.median(s[key] for s in samples[label][server]), 1)
                for key in ("wall_ms", "cpu_ms", "bytes")
            }
            for server in SERVERS
        }
        result["median"][label] = median
        result["ratio"][label] = {
            key: round(median["graphmem"][key] / median["official"][key], 3)
            for key in ("wall_ms", "cpu_ms")
        }
    return result


def report(results: dict[str, Any]) -> str:
    lines = [
        f"Whole-graph answers at {results['n']:,} entities, calls alternating between the two "
        f"servers, medians of {results['calls']} (load average before {results['load_before']}, "
        f"after {results['load_after']}).",
        "",
        "| call | graphmem wall | official wall | ratio | graphmem CPU | official CPU | ratio "
        "| reply |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, _, _ in CALLS:
        median, ratio = results["median"][label], results["ratio"][label]
        g, o = median["graphmem"], median["official"]
        lines.append(
            f"| {label} | {g['wall_ms']:.0f} ms | {o['wall_ms']:.0f} ms | {ratio['wall_ms']:.2f} "
            f"| {g['cpu_ms']:.0f} ms | {o['cpu_ms']:.0f} ms | {ratio['cpu_ms']:.2f} "
            f"| {g['bytes'] / 2**20:.1f} MB |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=7, help="calls per server and tool")
    parser.add_argument("--out", type=Path, default=RESULTS / "broad_calls.json")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="graphmem-broad-") as tmp:
        results = run(args.n, args.calls, Path(tmp))
    results.update(load_before=load_before, load_after=load_average(), machine=machine_facts())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    table = report(results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
