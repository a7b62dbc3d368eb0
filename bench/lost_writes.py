"""The lost-write scenarios: concurrent creates, then a fresh process counts what survived.

`two-process`: two server processes on the same store, each sending 50 one-entity
create_entities calls with one call in flight, both at once. `eight-in-flight`: one connection
with eight calls in flight, 100 creates in all. Every reply is checked; an acknowledged write
that a fresh `read_graph` does not show is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.rpc import Reply, RpcClient
from bench.servers import ServerName, Store, seed, start
from bench.workload import Arguments

PER_PROCESS = 50
IN_FLIGHT = 8
IN_FLIGHT_TOTAL = 100


def _creates(args: Arguments, prefix: str, count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("create_entities", {"entities": [args.new_entity(f"{prefix}-{k:03d}")]})
        for k in range(count)
    ]


def _count_present(store: Store, logs: Path, prefixes: tuple[str, ...]) -> tuple[int, int]:
    """(entities with one of `prefixes`, all entities), read by a fresh server process."""
    with start(store, logs / f"{store.server}-lost-writes-check.stderr.log") as client:
        reply = client.call("read_graph", {})
    if reply.failed:
        raise RuntimeError(f"read_graph failed: {reply.describe()}")
    names = [entity["name"] for entity in reply.result()["structuredContent"]["entities"]]
    return sum(1 for name in names if name.startswith(prefixes)), len(names)


def _two_process(store: Store, logs: Path, args: Arguments) -> tuple[list[Reply], tuple[str, ...]]:
    prefixes = ("lost-a", "lost-b")
    clients = [start(store, logs / f"{store.server}-lost-writes-{p}.stderr.log") for p in prefixes]
    barrier = threading.Barrier(len(clients))
    replies: list[Reply] = []
    lock = threading.Lock()

    def drive(client: RpcClient, prefix: str) -> None:
        calls = _creates(args, prefix, PER_PROCESS)
        barrier.wait(timeout=60)
        mine = [client.call(tool, arguments) for tool, arguments in calls]
        with lock:
            replies.extend(mine)

    threads = [
        threading.Thread(target=drive, args=(client, prefix))
        for client, prefix in zip(clients, prefixes, strict=True)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    finally:
        for client in clients:
            client.close(timeout=60)
    return replies, prefixes


def _in_flight(store: Store, logs: Path, args: Arguments) -> tuple[list[Reply], tuple[str, ...]]:
    prefixes = ("lost-w",)
    with start(store, logs / f"{store.server}-lost-writes-window.stderr.log") as client:
        replies = client.call_window(_creates(args, prefixes[0], IN_FLIGHT_TOTAL), IN_FLIGHT)
    return replies, prefixes


SCENARIOS: dict[str, tuple[int, Callable[..., tuple[list[Reply], tuple[str, ...]]]]] = {
    "two-process": (2 * PER_PROCESS, _two_process),
    "eight-in-flight": (IN_FLIGHT_TOTAL, _in_flight),
}


def run_lost_writes(
    server: ServerName,
    jsonl: Path,
    n: int,
    workdir: Path,
    logs: Path,
    repeats: int,
    src: Path | None = None,
) -> list[dict[str, Any]]:
    """Each scenario `repeats` times on a fresh store seeded from `jsonl` (N entities)."""
    rows = []
    for scenario, (expected, drive) in SCENARIOS.items():
        found: list[int] = []
        errors: list[int] = []
        totals: list[int] = []
        for repeat in range(repeats):
            fresh = workdir / f"{server}-{scenario}-{repeat}"
            store = seed(server, jsonl, fresh, logs / "seed.log", src)
            replies, prefixes = drive(store, logs, Arguments(n, seed=repeat))
            present, total = _count_present(store, logs, prefixes)
            found.append(present)
            errors.append(sum(1 for reply in replies if reply.failed))
            totals.append(total)
        rows.append(
            {
                "server": server,
                "scenario": scenario,
                "preloaded": n,
                "expected": expected,
                "found": found,
                "lost": [expected - f for f in found],
                "error_replies": errors,
                "entities_after": totals,
            }
        )
    return rows
