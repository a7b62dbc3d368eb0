"""Start-up side by side, as a host starts a server: spawn -> `initialize`, `tools/list` and
the first `search_nodes` answered.

What a stdio client pays at every launch (issue 21, item 1). Every host (Claude Desktop,
Cursor, the SDK's ClientSession) sends `initialize`, then `notifications/initialized` and
`tools/list`, and only then its first `tools/call`; this client does the same, each request
after the answer to the one before. For an empty store and one of N entities (the benchmark's
data set), and for the oldest and newest protocol versions of the handshake era, each server
is spawned `--runs` times, the servers taking turns within a round so that they share the
machine's load; each spawn is timed from just before the process is created to the
`initialize` answer, to the `tools/list` answer, then to the answer of one selective
`search_nodes` (one entity matches). Figures are medians; ratios are graphmem / official.

graphmem runs three times: as it ships (initialize and tools/list answered early, and the
reads answered from the checkpoint while the server loads: graphmem.early_reads), with
`GRAPHMEM_EARLY_READS=0` (only initialize and tools/list answered early), and with
`GRAPHMEM_EARLY_HANDSHAKE=0` (everything answered by the SDK once loaded). A start that finds
no kept answers keeps the SDK's initialize and tools/list ones, in the data dir and in the
user's cache (named by install and settings, not store: a new store finds them): the first two
starts on each store are reported on their own (`first_spawn`; the run's first store is also
the install's), the medians are over the spawns after them, as a host restarts a server.

    python -m bench.startup                 # N = 50,000, 9 spawns per server, store and era
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
from bench.servers import Store, graphmem_source, seed, start
from bench.workload import ABSENT

RESULTS = Path(__file__).resolve().parent / "results"
# (label, server, extra graphmem environment)
VARIANTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("graphmem", "graphmem", {}),
    ("graphmem_no_early_reads", "graphmem", {"GRAPHMEM_EARLY_READS": "0"}),
    ("graphmem_sdk_handshake", "graphmem", {"GRAPHMEM_EARLY_HANDSHAKE": "0"}),
    ("official", "official", {}),
)


# The oldest and the newest protocol version of the handshake era (mcp_types.version).
ERAS = ("2024-11-05", "2025-11-25")
FIGURES = ("initialize_s", "tools_list_s", "first_search_s")
# Starts that keep answers for the next ones (initialize, then tools/list), not in the medians.
WARM_UP_SPAWNS = 2


def spawn_once(
    store: Store, query: str, logs: Path, env: dict[str, str], version: str
) -> dict[str, float]:
    """One spawn: seconds to the initialize, tools/list and first search answers."""
    spawned = time.perf_counter()
    client = start(store, logs / f"{store.server}.stderr.log", version=version, **env)
    initialized = time.perf_counter() - spawned
    try:
        tools = client.list_tools()
        listed = time.perf_counter() - spawned
        if "search_nodes" not in tools:
            raise RuntimeError(f"{store.server}: search_nodes not listed: {tools}")
        reply = client.call("search_nodes", {"query": query})
        first = time.perf_counter() - spawned
        if reply.failed or reply.entity_count() is None:  # not a search's answer
            raise RuntimeError(f"{store.server}: search_nodes failed: {reply.describe()}")
    finally:
        client.close(timeout=60)
    return {"initialize_s": initialized, "tools_list_s": listed, "first_search_s": first}


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def run_store(
    n: int,
    jsonl: Path,
    root: Path,
    runs: int,
    progress: Callable[[str], None],
    src: Path | None = None,
    variants: tuple[tuple[str, str, dict[str, str]], ...] = VARIANTS,
) -> list[dict[str, Any]]:
    """Every variant on its own copy of one graph of `n` entities, in each era (graphmem run
    from `src`, when given)."""
    rng = random.Random(n)
    stores = {
        label: seed(server, jsonl, root / label, root / "seed.log", src)  # type: ignore[arg-type]
        for label, server, _ in variants
    }
    results = []
    for version in ERAS:
        first: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in variants}
        for label, _, env in variants:  # each store's first starts in this era, on their own
            for _ in range(WARM_UP_SPAWNS):
                query = unique_token(0) if n else "absent"
                first[label].append(spawn_once(stores[label], query, root, env, version))
        samples: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in variants}
        for round_ in range(runs):
            query = unique_token(rng.randrange(n)) if n else unique_token(ABSENT)
            for label, _, env in variants:
                samples[label].append(spawn_once(stores[label], query, root, env, version))
            progress(
                f"  N={n:,} {version} round {round_ + 1}/{runs}: "
                + "  ".join(
                    f"{label} "
                    + "/".join(f"{samples[label][-1][key]:.3f}" for key in FIGURES)
                    + " s"
                    for label, _, _ in variants
                )
            )
        result: dict[str, Any] = {
            "n": n,
            "version": version,
            "runs": runs,
            "first_spawn": first,
            "median": {
                label: {key: round(_median(samples[label], key), 4) for key in FIGURES}
                for label, _, _ in variants
            },
            "samples": samples,
        }
        official = result["median"]["official"]
        result["ratio"] = {
            label: {key: round(result["median"][label][key] / official[key], 3) for key in FIGURES}
            for label, _, _ in variants
            if label != "official"
        }
        results.append(result)
    return results


COLUMNS = {
    "graphmem": "graphmem",
    "graphmem_no_early_reads": "graphmem, reads after load",
    "graphmem_sdk_handshake": "graphmem, SDK handshake",
}


def report(results: dict[str, Any]) -> str:
    """The markdown table of the medians and ratios."""
    labels = [label for label in results["stores"][0]["median"] if label != "official"]
    lines = [
        "Start-up as a host starts a server (initialize → notifications/initialized → "
        f"tools/list → tools/call), medians of {results['runs']} spawns per server, store and "
        f"protocol version (load average before {results['load_before']}, after "
        f"{results['load_after']}).",
        "",
        "| store, protocol | figure | "
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
            ("tools_list_s", "spawn → `tools/list` answered"),
            ("first_search_s", "spawn → first selective `search_nodes` answered"),
        ):
            lines.append(
                f"| {store['n']:,} entities, {store['version']} | {figure} | "
                + " | ".join(f"{median[label][key]:.3f} s" for label in labels)
                + f" | {median['official'][key]:.3f} s | "
                + " | ".join(f"{ratio[label][key]:.2f}" for label in labels)
                + " |"
            )
    lines.append("")
    lines.append(
        "First two spawns on each store (graphmem keeps the SDK's initialize and tools/list "
        "answers where it finds none), spawn → first search: "
        + "; ".join(
            f"{store['n']:,} {store['version']}: "
            + ", ".join(
                f"{label} "
                + " / ".join(
                    f"{spawn['first_search_s']:.3f}" for spawn in store["first_spawn"][label]
                )
                + " s"
                for label in store["first_spawn"]
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
    parser.add_argument(
        "--graphmem-rev",
        default=None,
        help="run graphmem from this git revision or source dir (default: the work tree, "
        "which must not change during the run)",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=[label for label, _, _ in VARIANTS if label != "official"],
        help="leave a graphmem variant out (repeatable)",
    )
    args = parser.parse_args()
    variants = tuple(v for v in VARIANTS if v[0] not in args.without)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="graphmem-startup-") as tmp:
        root = Path(tmp)
        src, source = graphmem_source(args.graphmem_rev, root)
        stores = []
        for n in (0, args.n):
            jsonl = root / f"graph-{n}.jsonl"
            write_jsonl(jsonl, n)
            stores.extend(run_store(n, jsonl, root / f"n{n}", args.runs, print, src, variants))
    results = {
        "runs": args.runs,
        "load_before": load_before,
        "load_after": load_average(),
        "machine": machine_facts(),
        "stores": stores,
        "graphmem_source": source,
        "sequence": "initialize -> notifications/initialized -> tools/list -> tools/call",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    table = report(results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
