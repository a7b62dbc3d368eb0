"""Start-up side by side: spawn -> `initialize` answered, and spawn -> first `search_nodes`.

What a stdio client pays at every launch (issue 21, item 1). For an empty store and one of N
entities (the benchmark's data set), each server is spawned `--runs` times, the servers taking
turns within a round so that they share the machine's load; each spawn is timed from just
before the process is created to the `initialize` answer, then to the answer of one selective
`search_nodes` (one entity matches). Figures are medians; ratios are graphmem / official.

graphmem runs three times: as it ships (initialize answered early, and the reads answered from
the checkpoint while the server loads: graphmem.early_reads), with `GRAPHMEM_EARLY_READS=0`
(only initialize answered early), and with `GRAPHMEM_EARLY_HANDSHAKE=0` (initialize answered
by the SDK once everything is loaded, as before either). Its first spawn on a
store has no kept initialize answer yet: that one start is reported on its own
(`first_spawn`), the medians are over the spawns after it, as a host restarts a server.

    python -m bench.startup                 # N = 50,000, 9 spawns per server and store
    python -m bench.startup --n 5000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.dataset import unique_token, write_jsonl
from bench.machine import load_average, machine_facts
from bench.servers import Store, seed, start
from bench.workload import ABSENT

RESULTS = Path(__file__).resolve().parent / "results"
# (label, server, extra graphmem environment)
VARIANTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("graphmem", "graphmem", {}),
    ("graphmem_no_early_reads", "graphmem", {"GRAPHMEM_EARLY_READS": "0"}),
    ("graphmem_sdk_handshake", "graphmem", {"GRAPHMEM_EARLY_HANDSHAKE": "0"}),
    ("official", "official", {}),
)


def spawn_once(store: Store, query: str, logs: Path, env: dict[str, str]) -> dict[str, float]:
    """One spawn: seconds to the initialize answer and to the first search answer."""
    spawned = time.perf_counter()
    client = start(store, logs / f"{store.server}.stderr.log", **env)
    initialized = time.perf_counter() - spawned
    try:
        reply = client.call("search_nodes", {"query": query})
        first = time.perf_counter() - spawned
        if reply.failed:
            raise RuntimeError(f"{store.server}: search_nodes failed: {reply.describe()}")
    finally:
        client.close(timeout=60)
    return {"initialize_s": initialized, "first_search_s": first}


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def run_store(
    n: int, jsonl: Path, root: Path, runs: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Every variant on its own copy of one graph of `n` entities."""
    rng = random.Random(n)
    stores = {
        label: seed(server, jsonl, root / label, root / "seed.log")  # type: ignore[arg-type]
        for label, server, _ in VARIANTS
    }
    first: dict[str, dict[str, float]] = {}
    samples: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in VARIANTS}
    for label, _, env in VARIANTS:  # each store's first start, on its own
        first[label] = spawn_once(stores[label], unique_token(0) if n else "absent", root, env)
    for round_ in range(runs):
        query = unique_token(rng.randrange(n)) if n else unique_token(ABSENT)
        for label, _, env in VARIANTS:
            samples[label].append(spawn_once(stores[label], query, root, env))
        progress(
            f"  N={n:,} round {round_ + 1}/{runs}: "
            + "  ".join(
                f"{label} {samples[label][-1]['initialize_s']:.3f}/"
                f"{samples[label][-1]['first_search_s']:.3f} s"
                for label, _, _ in VARIANTS
            )
        )
    result: dict[str, Any] = {"n": n, "runs": runs, "first_spawn": first, "median": {}}
    for label, _, _ in VARIANTS:
        result["median"][label] = {
            key: round(_median(samples[label], key), 4)
            for key in ("initialize_s", "first_search_s")
        }
        result.setdefault("samples", {})[label] = samples[label]
    official = result["median"]["official"]
    result["ratio"] = {
        label: {
            key: round(result["median"][label][key] / official[key], 3)
            for key in ("initialize_s", "first_search_s")
        }
        for label, _, _ in VARIANTS
        if label != "official"
    }
    return result


COLUMNS = {
    "graphmem": "graphmem",
    "graphmem_no_early_reads": "graphmem, reads after load",
    "graphmem_sdk_handshake": "graphmem, SDK handshake",
}


def report(results: dict[str, Any]) -> str:
    """The markdown table of the medians and ratios."""
    labels = [label for label, _, _ in VARIANTS if label != "official"]
    lines = [
        f"Start-up, medians of {results['runs']} spawns per server and store "
        f"(load average before {results['load_before']}, after {results['load_after']}).",
        "",
        "| store | figure | "
        + " | ".join(COLUMNS[label] for label in labels)
        + " | official | "
        + " | ".join(f"ratio, {COLUMNS[label]}" for label in labels)
        + " |",
        "|---|---|" + "---|" * (2 * len(labels) + 1),
    ]
    for store in results["stores"]:
        median, ratio = store["median"], store["ratio"]
        for key, figure in (
            ("initialize_s", "spawn → `initialize` answered"),
            ("first_search_s", "spawn → first selective `search_nodes` answered"),
        ):
            lines.append(
                f"| {store['n']:,} entities | {figure} | "
                + " | ".join(f"{median[label][key]:.3f} s" for label in labels)
                + f" | {median['official'][key]:.3f} s | "
                + " | ".join(f"{ratio[label][key]:.2f}" for label in labels)
                + " |"
            )
    lines.append("")
    lines.append(
        "First spawn on each store (graphmem keeps no initialize answer yet): "
        + "; ".join(
            f"{store['n']:,}: "
            + ", ".join(
                f"{label} {store['first_spawn'][label]['initialize_s']:.3f} s"
                for label, _, _ in VARIANTS
            )
            for store in results["stores"]
        )
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000, help="entities in the larger store")
    parser.add_argument("--runs", type=int, default=9, help="spawns per server and store")
    parser.add_argument("--out", type=Path, default=RESULTS / "startup.json")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="graphmem-startup-") as tmp:
        root = Path(tmp)
        stores = []
        for n in (0, args.n):
            jsonl = root / f"graph-{n}.jsonl"
            write_jsonl(jsonl, n)
            stores.append(run_store(n, jsonl, root / f"n{n}", args.runs, print))
    results = {
        "runs": args.runs,
        "load_before": load_before,
        "load_after": load_average(),
        "machine": machine_facts(),
        "stores": stores,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    table = report(results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
