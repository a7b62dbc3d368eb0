"""graph_cypher on a large graph (issue 19, item 6): projection build, a two-hop query, a
filtered aggregation, and a write's visibility to the next query.

Run: python -m bench.graph_cypher [--entities 100000 --edges 300000] [--calls 60]

Takes the realistic graph of bench.graph_data (built or from bench/.cache/graph-family/),
serves a fresh copy with `graphmem serve --tools memory,graph` over stdio (bench/rpc.py, one
call in flight) and times graph_cypher end to end, MCP round trip included:

- build: the first graph_cypher call once the start-up embedding pass is done (the worker is
  built at the first query: the whole-graph read, off the writer's thread, the worker's spawn
  and the Arrow COPY of every entity and relation), and the server's own log of it;
- two-hop: `(a {name})-[:RELATES]->()-[:RELATES]->(c)` from random start names, p50 (target
  20 ms), and from the biggest hub (reported);
- Neo4j labels: `(p:Person)-[w:WORKS_ON]->(x:Project)` from random people (reported);
- aggregation: Person edges over 0.5 that are current, grouped by target type (target 200 ms);
- after a write: graph_relate a new edge, then the query that must see it; every query must
  (visible n/n), and its latency is reported.

Targets are judged on p50. At the issue's scale results go to
bench/results/graph_cypher.{json,md}; other sizes to bench/.cache/quick/.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.graph_data import CACHE, GraphSpec, cached, fresh_copy
from bench.graph_family import _settle
from bench.machine import load_average, machine_facts
from bench.rpc import RpcClient
from bench.servers import Store, sample, start
from bench.workload import percentile
from graphmem.app import running, start_cypher
from graphmem.config import Settings

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
QUICK_RESULTS = HERE / ".cache" / "quick"
LOGS = HERE / ".cache" / "logs"
FULL = GraphSpec(100_000, 300_000)

TWO_HOP = (
    "MATCH (a:Entity {name: $name})-[:RELATES]->(b)-[:RELATES]->(c) "
    "RETURN DISTINCT c.name AS name LIMIT 100"
)
NEO4J = (
    "MATCH (p:Person {name: $name})-[w:WORKS_ON]->(x:Project) "
    "RETURN x.name AS project, w.weight AS weight"
)
AGGREGATION = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) "
    "WHERE a.type = 'Person' AND r.weight > 0.5 AND r.invalid_at IS NULL "
    "RETURN b.type AS type, count(*) AS n, avg(r.weight) AS weight ORDER BY n DESC"
)
AFTER_WRITE = (
    "MATCH (a:Entity {name: $from})-[r:RELATES {type: 'BENCHED'}]->(b:Entity {name: $to}) "
    "RETURN r.weight AS weight"
)
TARGETS_MS = {"two_hop": 20.0, "aggregation": 200.0, "build": 10_000.0}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.graph_cypher", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--entities", type=int, default=5_000)
    parser.add_argument("--edges", type=int, default=None, help="default 3 x entities")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--calls", type=int, default=60, help="measured calls per query")
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--dir", type=Path, default=None, help="where the data copy goes")
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.edges is None:
        args.edges = 3 * args.entities
    args.command = "python -m bench.graph_cypher " + " ".join(argv or sys.argv[1:])
    return args


def _cypher(client: RpcClient, query: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    reply = client.call("graph_cypher", {"cypher": query, "params": params})
    if reply.failed:
        raise RuntimeError(f"graph_cypher failed: {reply.describe()}")
    content: dict[str, Any] = reply.result().get("structuredContent") or {}
    return reply.seconds * 1e3, content


def _timed(
    client: RpcClient, query: str, params: Callable[[int], dict[str, Any]], calls: int
) -> dict[str, Any]:
    _cypher(client, query, params(0))  # warm-up
    ms: list[float] = []
    engine_ms: list[float] = []
    rows = 0
    for i in range(calls):
        took, answer = _cypher(client, query, params(i + 1))
        ms.append(took)
        engine_ms.append(float(answer["execution_time_ms"]))
        rows += int(answer["result_count"])
    return {
        "calls": calls,
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "max_ms": max(ms),
        "engine_p50_ms": percentile(engine_ms, 50),
        "mean_rows": rows / calls,
    }


def _after_writes(client: RpcClient, calls: int) -> dict[str, Any]:
    ms: list[float] = []
    visible = 0
    for i in range(calls):
        source, target = f"Bench Source {i}", f"Bench Target {i}"
        write = client.call(
            "graph_relate",
            {
                "from_name": source,
                "from_type": "Person",
                "to_name": target,
                "to_type": "Project",
                "relation": "BENCHED",
                "weight": 0.42,
            },
        )
        if write.failed:
            raise RuntimeError(f"graph_relate failed: {write.describe()}")
        took, answer = _cypher(client, AFTER_WRITE, {"from": source, "to": target})
        ms.append(took)
        visible += answer["results"] == [{"weight": 0.42}]
    return {"calls": calls, "visible": visible, "p50_ms": percentile(ms, 50), "max_ms": max(ms)}


def run(args: argparse.Namespace, progress: Callable[[str], None] = say) -> dict[str, Any]:
    spec = GraphSpec(args.entities, args.edges, args.seed)
    log_dir, manifest = cached(spec, progress, args.cache_dir)
    rng = random.Random(args.seed)
    names: list[str] = manifest["names"]
    people = [n for n, t in zip(names, manifest["types"], strict=True) if t == "Person"]
    starts = [rng.choice(names) for _ in range(args.calls + 1)]
    persons = [rng.choice(people) for _ in range(args.calls + 1)]
    results: dict[str, Any] = {
        "command": args.command,
        "load_before": load_average(),
        "machine": machine_facts(),
        "graph": {k: v for k, v in manifest.items() if k in ("spec", "counts")},
    }
    LOGS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-cypher-bench-") as tmp:
        store = Store("graphmem", fresh_copy(log_dir, Path(tmp) / "data"), 0.0)
        stderr_log = LOGS / "graph-cypher.stderr.log"
        stderr_log.unlink(missing_ok=True)
        progress("building the projection in this process (the build alone)")
        build_alone = _build_alone(store.path)
        client = start(store, stderr_log, GRAPHMEM_TOOLS="memory,graph")
        try:
            if "graph_cypher" not in client.list_tools():
                raise SystemExit("graph_cypher is not listed: pip install -e '.[cypher]'")
            # The start-up embedding of every entity would share the CPU with the build.
            progress("waiting for the start-up embedding pass")
            _settle(client)
            progress("building the projection (first graph_cypher call)")
            build_ms, answer = _cypher(client, "MATCH (e:Entity) RETURN count(*) AS n", {})
            results["build"] = {
                "first_call_ms": build_ms,
                "entities": answer["results"][0]["n"],
                **build_alone,
            }
            _, counted = _cypher(client, "MATCH ()-[r:RELATES]->() RETURN count(*) AS n", {})
            results["build"]["relations"] = counted["results"][0]["n"]
            progress(f"built in {build_ms / 1e3:.1f} s; timing queries")
            results["two_hop"] = _timed(client, TWO_HOP, lambda i: {"name": starts[i]}, args.calls)
            hub = manifest["hubs"][0]
            results["two_hop_hub"] = _timed(client, TWO_HOP, lambda i: {"name": hub}, 10)
            results["neo4j_labels"] = _timed(
                client, NEO4J, lambda i: {"name": persons[i]}, args.calls
            )
            results["aggregation"] = _timed(
                client, AGGREGATION, lambda i: {}, max(10, args.calls // 3)
            )
            results["after_write"] = _after_writes(client, max(10, args.calls // 3))
            worker = [
                child for child in _children(client.pid) if "graphmem.cypher.worker" in child[1]
            ]
            results["server_rss_bytes"] = sample(client.pid).rss_bytes
            results["worker_rss_bytes"] = sample(worker[0][0]).rss_bytes if worker else None
        finally:
            client.close(timeout=120)
    results["load_after"] = load_average()
    results["verdicts"] = {
        "build": _verdict(results["build"]["alone_s"] * 1e3, TARGETS_MS["build"]),
        "two_hop": _verdict(results["two_hop"]["p50_ms"], TARGETS_MS["two_hop"]),
        "aggregation": _verdict(results["aggregation"]["p50_ms"], TARGETS_MS["aggregation"]),
        "after_write": "PASS"
        if results["after_write"]["visible"] == results["after_write"]["calls"]
        else "FAIL",
    }
    return results


def _build_alone(data_dir: Path) -> dict[str, Any]:
    """The build as the server does it (graphmem.app.start_cypher), in this process on the
    same data: the whole-graph read as of the writer's position, off its thread, then the
    worker's spawn and load; timed without MCP or the start-up embedding pass."""
    settings = Settings.from_env(
        {"GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_LOG_LEVEL": "WARNING", "GRAPHMEM_TOOLS": "graph"}
    )
    with running(settings, serve_stale=True) as app:
        service = start_cypher(app, warm=False).cypher
        assert service is not None, "the cypher extra is installed"
        try:
            started = time.perf_counter()
            service.sync()
            total = time.perf_counter() - started
        finally:
            service.stop()
    return {"alone_s": round(total, 3)}


def _children(pid: int) -> list[tuple[int, str]]:
    import psutil  # noqa: PLC0415 - the bench extra's

    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            found.append((child.pid, " ".join(child.cmdline())))
        except psutil.Error:
            continue
    return found


def _verdict(value: float, target: float) -> str:
    return "PASS" if value <= target else "FAIL"


def markdown(results: dict[str, Any]) -> str:
    counts = results["graph"]["counts"]
    build = results["build"]
    lines = [
        "# graph_cypher at scale",
        "",
        f"`{results['command']}` — {counts['entities']:,} entities, {counts['edges']:,} edges; "
        f"load average before {results['load_before']}, after {results['load_after']}.",
        "End to end over stdio (MCP round trip included); engine = the worker's own time.",
        "",
        "| measure | p50 ms | p95 ms | engine p50 ms | target | verdict |",
        "|---|---|---|---|---|---|",
        f"| first graph_cypher call of a served graph | {build['first_call_ms']:.0f} | | "
        "| report | report |",
        f"| projection build alone (in process, no MCP) | {build['alone_s'] * 1e3:.0f} | | "
        "| 10,000 ms | " + _verdict(build["alone_s"] * 1e3, TARGETS_MS["build"]) + " |",
    ]
    for key, label, target in (
        ("two_hop", "two-hop, random start", "20 ms"),
        ("two_hop_hub", "two-hop, biggest hub", "report"),
        ("neo4j_labels", "(p:Person)-[:WORKS_ON]->(x:Project)", "report"),
        ("aggregation", "filtered aggregation", "200 ms"),
    ):
        row = results[key]
        verdict = results["verdicts"].get(key, "report")
        lines.append(
            f"| {label} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} | {row['engine_p50_ms']:.2f} "
            f"| {target} | {verdict} |"
        )
    after = results["after_write"]
    lines.append(
        f"| query right after a write (visible {after['visible']}/{after['calls']}) "
        f"| {after['p50_ms']:.2f} | | | visible | {results['verdicts']['after_write']} |"
    )
    lines += [
        "",
        f"Projection: {build['entities']:,} entities, {build['relations']:,} relations; "
        f"server RSS {results['server_rss_bytes'] / 2**20:.0f} MiB, worker RSS "
        + (
            f"{results['worker_rss_bytes'] / 2**20:.0f} MiB."
            if results["worker_rss_bytes"]
            else "unknown."
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    full = (args.entities, args.edges) == (FULL.entities, FULL.edges)
    out: Path = args.out_dir or (RESULTS if full else QUICK_RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph_cypher.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "graph_cypher.md").write_text(markdown(results))
    print(markdown(results))
    return 0 if all(v == "PASS" for v in results["verdicts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
