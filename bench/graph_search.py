"""graph_search's figures (issue 16 item 8): latency at 100,000 and 1,000,000 entities,
embedding throughput, and the time a first start takes to embed an existing graph.

Run: python -m bench.graph_search [--entities 100000] [--embedder semantic] [--calls 100]
                                  [--matrix-rows 1000000]

1. A real `graphmem serve --tools memory,graph` (subprocess, stdio, raw client) on a fresh copy
   of the generated graph (bench.graph_data, as bench.graph_family uses) with the embedder
   asked for and an empty embedding cache: the time until graph_search reports `pending: 0`
   is the first start's embedding of the whole graph. Then graph_search p50/p95 (query
   embedding, exact vector search and expansion included) with and without `entity_types`.
   Then a restart on the same data dir: the time until nothing is pending (the cache serves
   every vector: nothing is embedded again).
2. Embedding throughput of both embedders on the graph's own embed texts, in this process.
3. At --matrix-rows (1,000,000) a synthetic matrix of normalised float32 rows of each
   embedder's dimension in the service's VectorIndex: the exact top-k p50, plus the query
   embedding measured in 2 (the semantic model would take about half an hour to embed a 1M
   server's graph here; the hash embedder takes minutes, so 1 runs at 1M with it).

At 1M the first search with expansion builds the graph family's index (minutes): 1 waits
for it and reports how long. The scheduled decay is off (a run is due on the generated
graph). The servers' stderr goes to bench/.cache/logs/.

Results: bench/results/graph_search-<embedder>.json (--entities 100000),
graph_search-<embedder>-1m.json (--entities 1000000), else bench/.cache/quick/.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.graph_data import CACHE, GraphSpec, cached, fresh_copy
from bench.machine import machine_facts
from bench.rpc import RpcClient
from bench.servers import Store, sample, start
from bench.workload import percentile
from graphmem.embedding.embedders import Embedder
from graphmem.embedding.loader import embedder_problem, load_embedder
from graphmem.embedding.vectors import VectorIndex

RESULTS = Path(__file__).parent / "results"
QUICK = Path(__file__).parent / ".cache" / "quick"
LOGS = Path(__file__).parent / ".cache" / "logs"
# The sizes whose runs are the recorded figures (bench/results), and their files' suffixes.
RECORDED = {100_000: "", 1_000_000: "-1m"}
TOOLS = "memory,graph"
POLL_SECONDS = 2.0


def say(message: str) -> None:
    print(message, flush=True)


def structured(client: RpcClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = client.call(tool, arguments)
    if reply.failed:
        raise RuntimeError(f"{tool} failed: {reply.error or reply.result()}")
    content: dict[str, Any] = reply.result()["structuredContent"]
    return content


def wait_embedded(client: RpcClient, timeout: float) -> tuple[float, list[tuple[float, int]]]:
    """Seconds until graph_search reports nothing pending, and the (seconds, pending) trail."""
    began = time.perf_counter()
    trail = []
    while True:
        answer = structured(client, "graph_search", {"query": "warm up", "expand": False})
        elapsed = time.perf_counter() - began
        trail.append((round(elapsed, 1), answer["pending"]))
        if answer["pending"] == 0:
            return elapsed, trail
        if elapsed > timeout:
            raise TimeoutError(f"still {answer['pending']} pending after {timeout:g} s")
        time.sleep(POLL_SECONDS)


def first_expansion(client: RpcClient, query: str, timeout: float) -> float:
    """Seconds until a search with expansion first answers. The first one builds the graph
    family's index (every relation's current weight) on the writer: at 1,000,000 entities
    that outlasts a call's 60 s bound, and the calls meanwhile answer that the graph is busy."""
    began = time.perf_counter()
    while True:
        reply = client.call("graph_search", {"query": query})
        elapsed = time.perf_counter() - began
        if not reply.failed:
            return elapsed
        if elapsed > timeout:
            raise TimeoutError(f"no search with expansion answered in {timeout:g} s")
        say(f"the first search with expansion is still waiting ({elapsed:.0f} s)")
        time.sleep(POLL_SECONDS)


def latency(client: RpcClient, calls: list[dict[str, Any]]) -> dict[str, Any]:
    for arguments in calls[:5]:  # warm-up
        structured(client, "graph_search", arguments)
    times = []
    seeds = []
    for arguments in calls:
        reply = client.call("graph_search", arguments)
        if reply.failed:
            raise RuntimeError(f"graph_search failed: {reply.error or reply.result()}")
        times.append(reply.seconds * 1e3)
        seeds.append(len(reply.result()["structuredContent"]["seeds"]))
    return {
        "calls": len(times),
        "p50_ms": round(percentile(times, 50), 2),
        "p95_ms": round(percentile(times, 95), 2),
        "mean_seeds": round(statistics.fmean(seeds), 2),
    }


def search_calls(manifest: dict[str, Any], count: int, seed: int = 5) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    names: list[str] = manifest["names"]
    types: list[str] = manifest["types"]

    def typo(name: str) -> str:  # one letter dropped: what an agent mistypes
        at = rng.randrange(len(name))
        return name[:at] + name[at + 1 :]

    picks = [rng.randrange(len(names)) for _ in range(count)]
    return {
        "graph_search (a mistyped name, expand)": [
            {"query": typo(names[i]), "min_similarity": 0.3} for i in picks
        ],
        "graph_search (a name, entity_types, expand)": [
            {"query": names[i], "entity_types": [types[i]]} for i in picks
        ],
        "graph_search (a phrase, no expansion)": [
            {"query": f"{names[i].split()[0]} works on", "expand": False, "min_similarity": 0.2}
            for i in picks
        ],
    }


def server_part(args: argparse.Namespace, results: dict[str, Any]) -> list[str]:
    spec = GraphSpec(args.entities, args.edges or 3 * args.entities, args.seed)
    log_dir, manifest = cached(spec, say, args.cache_dir)
    results["graph"] = {k: manifest[k] for k in ("spec", "counts")}
    env = {
        "GRAPHMEM_TOOLS": TOOLS,
        "GRAPHMEM_EMBEDDER": args.embedder,
        # The generated graph's dates are old, so a decay run is due at every start and holds
        # the writer meanwhile (minutes at 1,000,000 entities): measured by bench.graph_family,
        # not here.
        "GRAPHMEM_DECAY_SCHEDULE": "off",
    }
    # The servers' stderr outlives the run's temporary data: a server that goes away is
    # explained there (and its end is quoted in the error).
    LOGS.mkdir(parents=True, exist_ok=True)
    stderr_log = LOGS / f"graph-search-{args.embedder}-{args.entities}.stderr.log"
    stderr_log.unlink(missing_ok=True)
    say(f"server stderr: {stderr_log}")
    with tempfile.TemporaryDirectory(prefix="graphmem-search-bench-") as tmp:
        store = Store("graphmem", fresh_copy(log_dir, Path(tmp) / "data"), 0.0)
        spawned = time.perf_counter()
        client = start(store, stderr_log, **env)
        ready = time.perf_counter() - spawned
        say(f"server ready in {ready:.1f} s; embedding {args.entities:,} entities ...")
        try:
            seconds, trail = wait_embedded(client, args.embed_timeout)
            entities = manifest["counts"]["entities"]
            results["first_start"] = {
                "server_ready_s": round(ready, 2),
                "embed_all_s": round(seconds, 1),
                "entities_per_s": round(entities / seconds, 1),
                "pending_trail": trail[:: max(1, len(trail) // 20)],
            }
            say(f"first start: every entity embedded in {seconds:.1f} s")
            expanded = first_expansion(client, manifest["names"][0], args.embed_timeout)
            results["first_start"]["first_expanded_search_s"] = round(expanded, 1)
            say(f"the first search with expansion answered after {expanded:.1f} s")
            rows = {}
            for label, calls in search_calls(manifest, args.calls).items():
                rows[label] = latency(client, calls)
                say(f"{label}: {rows[label]}")
            results["graph_search"] = rows
            memory = sample(client.pid)
            results["server_rss_mb"] = round(memory.rss_bytes / 2**20)
            results["server_peak_rss_mb"] = round(memory.peak_rss_bytes / 2**20)
        finally:
            client.close(timeout=120)
        spawned = time.perf_counter()
        client = start(store, stderr_log, **env)
        try:
            seconds, _ = wait_embedded(client, args.embed_timeout)
            results["restart"] = {
                "ready_s": round(time.perf_counter() - spawned - seconds, 2),
                "vectors_from_cache_s": round(seconds, 2),
            }
            say(f"restart: every vector from the cache in {seconds:.1f} s")
        finally:
            client.close(timeout=120)
    return [f"{n} — {t}" for n, t in zip(manifest["names"], manifest["types"], strict=True)]


def throughput(embedder: Embedder, texts: Sequence[str]) -> dict[str, float]:
    embedder.embed(list(texts[:32]))  # warm-up
    began = time.perf_counter()
    embedder.embed(list(texts))
    seconds = time.perf_counter() - began
    queries = []
    for text in texts[:50]:
        began = time.perf_counter()
        embedder.embed([text])
        queries.append((time.perf_counter() - began) * 1e3)
    return {
        "texts": len(texts),
        "texts_per_s": round(len(texts) / seconds, 1),
        "query_embed_p50_ms": round(statistics.median(queries), 3),
    }


def matrix_part(embedder: Embedder, rows: int, query_ms: float) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    index = VectorIndex(embedder.dim)
    types = ("Person", "Project", "Technology", "Concept", "Organization")
    chunk = 100_000
    for start_row in range(0, rows, chunk):
        block = rng.standard_normal((min(chunk, rows - start_row), embedder.dim), np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        index.set_many(
            [
                (f"e{start_row + i}", types[(start_row + i) % 5], b"", block[i])
                for i in range(block.shape[0])
            ]
        )
    queries = rng.standard_normal((30, embedder.dim), np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    plain, typed = [], []
    for q in queries:
        began = time.perf_counter()
        index.top_k(q, 26)
        plain.append((time.perf_counter() - began) * 1e3)
        began = time.perf_counter()
        index.top_k(q, 26, types=lambda t: t == "Project")
        typed.append((time.perf_counter() - began) * 1e3)
    top_k_ms = statistics.median(plain)
    return {
        "rows": rows,
        "dim": embedder.dim,
        "top_k_p50_ms": round(top_k_ms, 2),
        "top_k_typed_p50_ms": round(statistics.median(typed), 2),
        "with_query_embedding_ms": round(top_k_ms + query_ms, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", default="semantic")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--matrix-rows", type=int, default=1_000_000)
    parser.add_argument("--embed-timeout", type=float, default=3600.0)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args(argv)
    for name in {args.embedder, "hash"}:
        if problem := embedder_problem(name):
            raise SystemExit(problem)
    results: dict[str, Any] = {
        "command": "python -m bench.graph_search " + " ".join(argv or []),
        "machine": machine_facts(),
        "embedder": args.embedder,
    }
    texts = [] if args.skip_server else server_part(args, results)
    if not texts:
        texts = [f"Entity {i} — Person — works on project {i % 97}" for i in range(5000)]
    sample_texts = random.Random(1).sample(texts, min(4000, len(texts)))
    results["throughput"] = {}
    results["matrix"] = {}
    for name in ("hash", "semantic"):
        if embedder_problem(name):
            continue
        embedder = load_embedder(name)
        chosen = sample_texts if name == "hash" else sample_texts[:1000]
        results["throughput"][name] = throughput(embedder, chosen)
        say(f"{name} throughput: {results['throughput'][name]}")
        if args.matrix_rows:
            query_ms = results["throughput"][name]["query_embed_p50_ms"]
            results["matrix"][name] = matrix_part(embedder, args.matrix_rows, query_ms)
            say(f"{name} at {args.matrix_rows:,} rows: {results['matrix'][name]}")
    write(args, results)
    return 0


def write(args: argparse.Namespace, results: dict[str, Any]) -> None:
    suffix = RECORDED.get(args.entities)
    out = QUICK if suffix is None or args.skip_server else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"graph_search-{args.embedder}{suffix or ''}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    say(f"written {path}")


if __name__ == "__main__":
    raise SystemExit(main())
