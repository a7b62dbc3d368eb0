"""The per-size workload: time each tool on one server over a fresh store, one call in flight.

Reads run on exactly N entities (selective search, broad search, open_nodes, read_graph), then
the writes grow the graph (create_entities, add_observations). Each operation gets warm-up
calls, then its measured calls, with the server's CPU time sampled around them; all of them
after the first call and a `ping`, answered by the server itself (see `run_size`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, entity_name, unique_token
from bench.rpc import Reply, RpcClient
from bench.servers import Store, sample, start

OPERATIONS = (
    "search_nodes_selective",
    "search_nodes_broad",
    "open_nodes",
    "read_graph",
    "create_entities",
    "add_observations",
)
CHEAP = ("search_nodes_selective", "open_nodes", "create_entities", "add_observations")
HEAVY = ("search_nodes_broad", "read_graph")
ABSENT = 99_999_999  # an index no pre-loaded entity has: what reads ask for at N = 0


@dataclass(frozen=True)
class Plan:
    """How many calls each operation gets at one size."""

    warmups: int
    cheap_calls: int
    broad_calls: int
    read_graph_calls: int
    budget_s: float  # stop an operation's measured calls past this (after at least `floor`)
    floor: int = 3

    def calls(self, operation: str) -> int:
        if operation == "search_nodes_broad":
            return self.broad_calls
        if operation == "read_graph":
            return self.read_graph_calls
        return self.cheap_calls


def plan_for(n: int, quick: bool) -> Plan:
    if quick:
        return Plan(warmups=2, cheap_calls=30, broad_calls=5, read_graph_calls=3, budget_s=20)
    if n <= 1_000:
        broad, read = 100, 20
    elif n <= 10_000:
        broad, read = 20, 10
    elif n <= 50_000:
        broad, read = 10, 5
    elif n <= 200_000:
        broad, read = 5, 3
    else:
        broad, read = 3, 3
    return Plan(warmups=5, cheap_calls=200, broad_calls=broad, read_graph_calls=read, budget_s=150)


def percentile(values: list[float], p: float) -> float:
    """Nearest rank, as in the reference contract."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


class Arguments:
    """Tool arguments for each operation; writes use names and texts no store holds yet."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.rng = random.Random(seed)
        self.created: list[str] = []
        self._serial = 0

    def _existing(self) -> str:
        if self.n:
            return entity_name(self.rng.randrange(self.n))
        return self.rng.choice(self.created) if self.created else entity_name(ABSENT)

    def _serial_next(self) -> int:
        self._serial += 1
        return self._serial

    def __call__(self, operation: str) -> tuple[str, dict[str, Any]]:
        if operation == "search_nodes_selective":
            index = self.rng.randrange(self.n) if self.n else ABSENT
            return "search_nodes", {"query": unique_token(index)}
        if operation == "search_nodes_broad":
            return "search_nodes", {"query": COMMON_WORD}
        if operation == "open_nodes":
            return "open_nodes", {"names": [self._existing()]}
        if operation == "read_graph":
            return "read_graph", {}
        if operation == "create_entities":
            return "create_entities", {
                "entities": [self.new_entity(f"bench-{self._serial_next()}")]
            }
        if operation == "add_observations":
            content = f"follow-up note {self._serial_next()} from the planning session"
            return "add_observations", {
                "observations": [{"entityName": self._existing(), "contents": [content]}]
            }
        raise ValueError(f"unknown operation {operation}")

    def new_entity(self, name: str) -> dict[str, Any]:
        self.created.append(name)
        return {
            "name": name,
            "entityType": "person",
            "observations": [
                "joined the platform team this quarter",
                f"prefers written updates over a {COMMON_WORD}",
                f"badge token {name} issued at onboarding",
            ],
        }


def _measure(client: RpcClient, operation: str, args: Arguments, plan: Plan) -> dict[str, Any]:
    errors: list[str] = []
    failures = 0

    def run() -> Reply:
        nonlocal failures
        reply = client.call(*args(operation))
        if reply.failed:
            failures += 1
            if len(errors) < 3:
                errors.append(reply.describe())
        return reply

    warm = 1 if operation in HEAVY and args.n >= 50_000 else plan.warmups
    last = None
    for _ in range(warm):
        last = run()
    before = sample(client.pid).cpu_seconds
    seconds: list[float] = []
    started = time.perf_counter()
    wanted = plan.calls(operation)
    while len(seconds) < wanted:
        last = run()
        seconds.append(last.seconds)
        if time.perf_counter() - started > plan.budget_s and len(seconds) >= plan.floor:
            break
    cpu = sample(client.pid).cpu_seconds - before
    ms = [s * 1e3 for s in seconds]
    return {
        "calls": len(ms),
        "planned_calls": wanted,
        "warmups": warm,
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "mean_ms": sum(ms) / len(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "cpu_ms_per_call": cpu * 1e3 / len(ms),
        "errors": failures,  # warm-ups included
        "error_samples": errors,
        "response_bytes": last.size if last else 0,
        "entities_returned": last.entity_count() if last else None,
        "samples_ms": [round(v, 4) for v in ms],
    }


def run_size(
    store: Store,
    n: int,
    plan: Plan,
    logs: Path,
    seed: int = 1,
    progress: Callable[[str], None] = print,
    server_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """All operations against one server on `store` (N pre-loaded entities); graphmem gets
    `server_env` besides its usual environment."""
    args = Arguments(n, seed)
    spawned = time.perf_counter()
    client = start(store, logs / f"{store.server}-{n}.stderr.log", **(server_env or {}))
    try:
        result: dict[str, Any] = {
            "startup_ms": (time.perf_counter() - spawned) * 1e3,
            "initialize_ms": client.startup_seconds * 1e3,
            "disk_bytes_before": store.disk_bytes(),
            "seed_seconds": store.seed_seconds,
        }
        first = client.call(*args("search_nodes_selective"))
        result["first_call_ms"] = first.seconds * 1e3
        # Every measured call the server's own: a graphmem store small enough for the early
        # reads (under ~140k entities) would otherwise have its first second of reads answered
        # by the thread that answers while the server loads, and a larger one none, so a cell
        # at 1k and one at 1M timed different code (at 1k the share moved with the timing:
        # 0.15-0.45 ms p50 between runs). The first call above keeps the start-up's figure.
        client.ping()
        result["rss_bytes_loaded"] = sample(client.pid).rss_bytes
        ops: dict[str, Any] = {}
        for operation in OPERATIONS:
            ops[operation] = _measure(client, operation, args, plan)
            cell = ops[operation]
            progress(
                f"  {store.server:<8} N={n:<9,} {operation:<24} p50 {cell['p50_ms']:9.2f} ms  "
                f"p95 {cell['p95_ms']:9.2f} ms  cpu {cell['cpu_ms_per_call']:8.2f} ms/call  "
                f"({cell['calls']} calls, {cell['errors']} errors)"
            )
        after = sample(client.pid)
        result.update(
            ops=ops,
            rss_bytes_after_writes=after.rss_bytes,
            peak_rss_bytes=after.peak_rss_bytes,
        )
    finally:
        client.close(timeout=120)
    result["disk_bytes_after"] = store.disk_bytes()
    return result
