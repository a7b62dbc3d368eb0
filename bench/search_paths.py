"""Selective `search_nodes` per size and per path, in fresh servers alternating: what
bench.compare's "selective search at 1M within 1.5x of its 1k" compares, like with like.

Run: python -m bench.search_paths [--sizes 1000,50000,1000000] [--rounds 3] [--pairs 400]
     [--json PATH]

graphmem answers a small store's reads during its first second from the early reads
(graphmem.early_reads: no actor, no SDK), a store over ~140k entities never: so a selective
search timed right after a spawn is one path at 1k and another at 1M. For each size and
round this spawns a fresh server on a copy of one imported store (bench.dataset's graph),
makes bench.compare's first call, then times `--pairs` selective searches with an `open_nodes`
after each (both in the same moment of the server's life: a reference the target already
passes), either right away (`as-spawned`: what bench.compare timed before its ping) or after
a `ping` (`server`: every call the server's own, as bench.compare times them now). Per run:
p50 of each, the server's CPU per pair; then the median of the rounds and each size's ratio
to the smallest size on the same path.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.dataset import entity_name, sizes_argument, unique_token, write_jsonl
from bench.machine import load_average
from bench.servers import Store, sample, seed, start
from bench.workload import percentile

PATHS = ("as-spawned", "server")


def one_run(store: Store, n: int, path: str, pairs: int, scratch: Path) -> dict[str, Any]:
    """One fresh server on a copy of `store`: p50s and CPU over `pairs` search/open pairs."""
    copy = Store(store.server, scratch / "data", 0.0, store.src)
    shutil.rmtree(copy.path, ignore_errors=True)
    shutil.copytree(store.path, copy.path)
    rng = random.Random(1)
    client = start(copy, scratch / f"graphmem-{n}-{path}.stderr.log")
    try:
        client.call("search_nodes", {"query": unique_token(rng.randrange(n))})
        if path == "server":
            client.ping()
        before = sample(client.pid).cpu_seconds
        searched, opened = [], []
        for _ in range(pairs):
            query = {"query": unique_token(rng.randrange(n))}
            searched.append(client.call("search_nodes", query).seconds * 1e3)
            names = {"names": [entity_name(rng.randrange(n))]}
            opened.append(client.call("open_nodes", names).seconds * 1e3)
        cpu = sample(client.pid).cpu_seconds - before
    finally:
        client.close(timeout=120)
        shutil.rmtree(copy.path, ignore_errors=True)
    return {
        "n": n,
        "path": path,
        "search_p50_ms": round(percentile(searched, 50), 4),
        "open_nodes_p50_ms": round(percentile(opened, 50), 4),
        "cpu_ms_per_pair": round(cpu * 1e3 / pairs, 4),
    }


def summarise(runs: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for path in PATHS:
        base = None
        for n in sizes:
            mine = [run for run in runs if run["n"] == n and run["path"] == path]
            if not mine:
                continue
            row = {
                "n": n,
                "path": path,
                **{
                    key: round(statistics.median(run[key] for run in mine), 4)
                    for key in ("search_p50_ms", "open_nodes_p50_ms", "cpu_ms_per_pair")
                },
            }
            base = base or row
            row["search_ratio_to_smallest"] = round(row["search_p50_ms"] / base["search_p50_ms"], 2)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes_argument, default=[1_000, 50_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    loads = [load_average()]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-search-paths-") as tmp:
        root = Path(tmp)
        stores: dict[int, Store] = {}
        for n in args.sizes:
            dataset = write_jsonl(root / f"graph-{n}.jsonl", n)
            stores[n] = seed("graphmem", dataset.path, root / f"store-{n}", root / "seed.log")
            dataset.path.unlink()
        for _ in range(args.rounds):
            for n in args.sizes:
                for path in PATHS:
                    runs.append(one_run(stores[n], n, path, args.pairs, root))
                    loads.append(load_average())
                    print(json.dumps(runs[-1]), flush=True)
    summary = summarise(runs, args.sizes)
    for row in summary:
        print(json.dumps(row))
    figures = {"runs": runs, "summary": summary, "load_averages": loads}
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
