"""The read model's speed on an imported store, two source trees alternating in fresh processes.

Run: python -m bench.readmodel_speed --data-dir DIR --entities N [--base TREE] [--rounds 3]
     [--json PATH]

For a store filled by `graphmem import` with bench.dataset's graph of N entities (see
bench.server_memory --data-dir), each round runs a fresh interpreter per tree (this one, and
`--base`: another checkout, e.g. `git archive main | tar -x -C TREE`), which measures, CPU time:

- `restore_s`: the graph restored from its checkpoint (GraphProjection.from_snapshot), best of 3;
- `encode_s`: that graph's snapshot taken (to_snapshot, what a checkpoint writes), best of 3;
- `open_nodes_first_ms`: 1,000 random entities opened once each (graphmem.tools.memory_reads,
  what the tool answers) on that restored graph, wall time a call: nearly all first reads of
  a record, which a restore may leave to be made; `open_nodes_again_ms` the same names again;
  `read_graph_page_ms`: 20 `read_graph` pages of 100 at random offsets (the first builds the
  name index), a call;
- through the real server in-process (bench.inprocess, the tool handler without a transport),
  wall time, best of the calls: `search_selective_ms` (a token one entity holds, 20 calls),
  `search_broad_ms` (a word every entity holds, 3 calls), `open_nodes_ms` (10 names, 20 calls).

Best of the rounds per tree: the box is shared, so a single run says little; the load
averages are recorded beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, entity_name, unique_token
from bench.emit import emit_figures
from bench.inprocess import served
from bench.machine import load_average
from eventstore.lmdb_log import LmdbEventLog
from graphmem.tools.memory_reads import graph_page, opened
from projections.graph import GraphProjection


def _cpu_best(action: Any, times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.process_time()
        action()
        best = min(best, time.process_time() - started)
    return round(best, 4)


async def _calls(data_dir: Path, n: int) -> dict[str, float]:
    async def best(call: Any, tool: str, arguments: dict[str, Any], times: int) -> float:
        fastest = float("inf")
        for _ in range(times):
            started = time.perf_counter()
            await call(tool, arguments)
            fastest = min(fastest, time.perf_counter() - started)
        return round(fastest * 1e3, 3)

    async with served(data_dir) as call:
        await call("search_nodes", {"query": unique_token(n // 2)})  # the index built
        names = [entity_name(i * (n // 10)) for i in range(10)]
        return {
            "search_selective_ms": await best(
                call, "search_nodes", {"query": unique_token(n // 3)}, 20
            ),
            "search_broad_ms": await best(call, "search_nodes", {"query": COMMON_WORD}, 3),
            "open_nodes_ms": await best(call, "open_nodes", {"names": names}, 20),
        }


def _snapshot_figures(data_dir: Path) -> dict[str, Any]:
    log = LmdbEventLog.open(data_dir)
    try:
        found = log.checkpoints.load(GraphProjection.name, GraphProjection.version)
        assert found is not None, "the store has no graph checkpoint of this tree's version"
        payload = bytes(found.payload)
    finally:
        log.close()
    restore_s = _cpu_best(lambda: GraphProjection.from_snapshot(payload))
    graph = GraphProjection.from_snapshot(payload)
    figures = {"restore_s": restore_s, **_first_reads(graph)}
    figures["encode_s"] = _cpu_best(graph.to_snapshot)
    return figures


def _first_reads(graph: GraphProjection) -> dict[str, float]:
    n = graph.entity_count()
    rng = random.Random(21)
    # The restore's first collection (which walks its large containers once, with or without
    # a lazy layout) done before timing, as a running server has long done it: else it lands
    # in whichever timed read first leaves survivors (a lazy first read keeps a key).
    gc.collect()
    names = [entity_name(rng.randrange(n)) for _ in range(1000)]

    def per_call(calls: int, action: Any) -> float:
        started = time.perf_counter()
        action()
        return round((time.perf_counter() - started) / calls * 1e3, 4)

    def open_each() -> None:
        for name in names:
            opened(graph, [name])

    def pages() -> None:
        for _ in range(20):
            graph_page(graph, rng.randrange(max(1, n - 100)), 100)

    return {
        "open_nodes_first_ms": per_call(len(names), open_each),
        "open_nodes_again_ms": per_call(len(names), open_each),
        "read_graph_page_ms": per_call(20, pages),
    }


def _child(data_dir: Path, n: int) -> dict[str, Any]:
    figures = _snapshot_figures(data_dir)
    figures.update(asyncio.run(_calls(data_dir, n)))
    return figures


def _run(tree: Path, data_dir: Path, n: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-m", "bench.readmodel_speed", "--child", str(data_dir), str(n)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def measure(data_dir: Path, n: int, base: Path | None, rounds: int) -> dict[str, Any]:
    here = Path(__file__).resolve().parent.parent
    trees = {"after": here} if base is None else {"base": base, "after": here}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    loads = [load_average()]
    for _ in range(rounds):
        for name, tree in trees.items():
            runs[name].append(_run(tree, data_dir, n))
            loads.append(load_average())
    best = {
        name: {key: min(run[key] for run in results) for key in results[0]}
        for name, results in runs.items()
    }
    return {"entities": n, "rounds": rounds, "best": best, "runs": runs, "load_averages": loads}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(_child(Path(argv[1]), int(argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--entities", type=int, required=True)
    parser.add_argument("--base", type=Path, default=None, help="another tree to alternate with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = measure(args.data_dir, args.entities, args.base, args.rounds)
    emit_figures(figures, args.json)


if __name__ == "__main__":
    main()
