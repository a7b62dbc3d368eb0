"""RSS of a stdio server at N entities, however the store was filled, side by side.

Run: python -m bench.stdio_rss [--n 50000] [--graphmem-rev REV ...] [--json PATH]

For each server (the official one, and graphmem at each `--graphmem-rev`, default the work
tree) two stores of the benchmark's data set (bench.dataset): one imported (graphmem
`import`; the official server's JSONL file copied), one filled through MCP
(`create_entities` then `create_relations`, 100 records a call, on one server process). On
each, a fresh server is spawned as a host spawns it (initialize, tools/list, one selective
`search_nodes`) and its RSS read from /proc (psutil): "after start", then again after 200
`create_entities` of one entity each ("after 200 writes"). The MCP-filled store is also read
in the process that filled it ("filling process"), as bench.compare reports it.

Each figure is the median of `--readings` readings (default 5), each after one more selective
search: a server's RSS moves with where its garbage collector stands (the official server's
filling process read 150-311 MiB across runs), so one reading is one draw of it. The JSON
keeps every reading (`<figure>_readings`); the table shows the median and the range.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.dataset import entity_name, entity_record, relation_record, unique_token, write_jsonl
from bench.machine import load_average, machine_facts
from bench.rpc import RpcClient
from bench.servers import ServerName, Store, graphmem_source, sample, seed, start

BATCH = 100
WRITES = 200
READINGS = 5
MIB = 1 << 20


def _records(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The data set's entities and relations as tool arguments (as bench.dataset writes them)."""
    rng = random.Random(0)
    entities = []
    for i in range(n):
        record = entity_record(i, rng)
        del record["type"]
        entities.append(record)
    relations = []
    for i in range(n if n >= 2 else 0):
        record = relation_record(i, n, rng)
        del record["type"]
        relations.append(record)
    return entities, relations


def _batches(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start_ in range(0, len(items), BATCH):
        yield items[start_ : start_ + BATCH]


def _checked(client: RpcClient, tool: str, arguments: dict[str, Any]) -> None:
    reply = client.call(tool, arguments)
    if reply.failed:
        raise RuntimeError(f"{tool} failed: {reply.describe()}")


def _host_start(store: Store, logs: Path, query: str, env: dict[str, str]) -> RpcClient:
    client = start(store, logs / f"{store.server}.stderr.log", **env)
    client.list_tools()
    _checked(client, "search_nodes", {"query": query})
    return client


def _writes(client: RpcClient) -> None:
    for i in range(WRITES):
        entity = {"name": f"written-{i}", "entityType": "note", "observations": ["a write"]}
        _checked(client, "create_entities", {"entities": [entity]})


def _mib(client: RpcClient) -> float:
    return round(sample(client.pid).rss_bytes / MIB, 1)


def _read(client: RpcClient, query: str, figures: dict[str, Any], key: str, readings: int) -> None:
    """`figures[key]`: the median of `readings` readings, each after one more selective search
    (the first as the process stands); every reading under `<key>_readings`."""
    taken = []
    for i in range(max(1, readings)):
        if i:
            _checked(client, "search_nodes", {"query": query})
        taken.append(_mib(client))
    figures[key] = statistics.median(taken)
    figures[f"{key}_readings"] = taken


def measure(
    label: str,
    server: ServerName,
    src: Path | None,
    n: int,
    jsonl: Path,
    root: Path,
    say: Callable[[str], None],
    env: dict[str, str] | None = None,
    *,
    fill: bool = True,
    idle: float = 0.0,
    readings: int = READINGS,
) -> dict[str, Any]:
    """One server's figures (MiB) on an imported and an MCP-filled store of `n` entities."""
    work = root / label
    query = unique_token(n // 2)
    figures: dict[str, Any] = {}
    imported = seed(server, jsonl, work / "imported", work / "seed.log", src)
    client = _host_start(imported, work, query, env or {})
    try:
        _read(client, query, figures, "imported_after_start", readings)
        _writes(client)
        _read(client, query, figures, "imported_after_writes", readings)
    finally:
        client.close(timeout=60)
    if not fill:
        say(f"  {label}: {figures}")
        return figures
    empty_jsonl = root / "empty.jsonl"
    empty_jsonl.write_text("")
    filled = seed(server, empty_jsonl, work / "filled", work / "seed.log", src)
    back = {"GRAPHMEM_GRAPH_IMAGE_IDLE": str(max(1, int(idle) - 10))} if idle else {}
    client = start(filled, work / f"{server}.stderr.log", **back)
    try:
        entities, relations = _records(n)
        for batch in _batches(entities):
            _checked(client, "create_entities", {"entities": batch})
        for batch in _batches(relations):
            _checked(client, "create_relations", {"relations": batch})
        _checked(client, "search_nodes", {"query": query})
        _read(client, query, figures, "filled_filling_process", readings)
        if idle:
            # Both servers left idle as long, then asked one search (graphmem, told to go
            # back to its image 10 s before: GRAPHMEM_GRAPH_IMAGE_IDLE, off by default).
            time.sleep(idle)
            _checked(client, "search_nodes", {"query": query})
            _read(client, query, figures, "filled_filling_process_idle", readings)
    finally:
        client.close(timeout=120)
    client = _host_start(filled, work, query, env or {})
    try:
        _read(client, query, figures, "filled_after_start", readings)
        _writes(client)
        _read(client, query, figures, "filled_after_writes", readings)
    finally:
        client.close(timeout=60)
    say(f"  {label}: {figures}")
    return figures


FIGURES = {
    "imported_after_start": "imported, fresh start (initialize, tools/list, a search)",
    "imported_after_writes": f"imported, then {WRITES} MCP creates",
    "filled_filling_process": "filled through MCP writes, the filling process",
    "filled_filling_process_idle": "filled through MCP writes, the filling process, idle",
    "filled_after_start": "filled through MCP writes, fresh start",
    "filled_after_writes": f"filled through MCP writes, fresh start then {WRITES} creates",
}


def _cell(figures: dict[str, Any], key: str) -> str:
    """The median, and the range of the readings when there were several."""
    taken = figures.get(f"{key}_readings") or [figures[key]]
    spread = f" ({min(taken):.1f}-{max(taken):.1f})" if len(taken) > 1 else ""
    return f"{figures[key]:.1f}{spread}"


def report(results: dict[str, Any]) -> str:
    labels = list(results["servers"])
    official = results["servers"]["official"]
    graphmem = [label for label in labels if label != "official"]
    lines = [
        f"RSS of a stdio server at {results['n']:,} entities (MiB; load average before "
        f"{results['load_before']}, after {results['load_after']}).",
        "",
        "| store | "
        + " | ".join(labels)
        + " | "
        + " | ".join(f"ratio, {g}" for g in graphmem)
        + " |",
        "|---|" + "---|" * (len(labels) + len(graphmem)),
    ]
    for key, figure in FIGURES.items():
        if key not in official:
            continue
        row = [_cell(results["servers"][label], key) for label in labels]
        ratios = [f"{results['servers'][g][key] / official[key]:.2f}" for g in graphmem]
        lines.append(f"| {figure} | " + " | ".join(row + ratios) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument(
        "--graphmem-rev",
        action="append",
        default=None,
        metavar="REV",
        help="graphmem as committed at REV (repeat to compare; default: the work tree)",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--no-fill",
        dest="fill",
        action="store_false",
        help="only the imported store (filling through MCP takes the official server minutes: "
        "it rewrites its whole file on every call)",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also read the filling process after SECONDS idle (graphmem told to go back "
        "to its image after SECONDS - 10)",
    )
    parser.add_argument(
        "--early-reads-off",
        action="store_true",
        help="also measure the last tree with GRAPHMEM_EARLY_READS=0",
    )
    parser.add_argument(
        "--readings",
        type=int,
        default=READINGS,
        help=f"readings per figure, each after one more selective search (default {READINGS})",
    )
    args = parser.parse_args()
    load_before = load_average()
    servers: dict[str, dict[str, Any]] = {}
    sources: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-stdio-rss-") as tmp:
        root = Path(tmp)
        jsonl = root / f"graph-{args.n}.jsonl"
        write_jsonl(jsonl, args.n)
        servers["official"] = measure(
            "official",
            "official",
            None,
            args.n,
            jsonl,
            root,
            print,
            fill=args.fill,
            idle=args.idle,
            readings=args.readings,
        )
        for rev in args.graphmem_rev or [None]:
            label = f"graphmem@{rev}" if rev else "graphmem"
            tree = root / f"src-{len(sources)}"
            tree.mkdir()
            src, sources[label] = graphmem_source(rev, tree)
            servers[label] = measure(
                label,
                "graphmem",
                src,
                args.n,
                jsonl,
                root,
                print,
                fill=args.fill,
                idle=args.idle,
                readings=args.readings,
            )
        if args.early_reads_off:  # the last tree again, without the second graph at start-up
            label = f"{label}, early reads off"
            servers[label] = measure(
                label,
                "graphmem",
                src,
                args.n,
                jsonl,
                root,
                print,
                {"GRAPHMEM_EARLY_READS": "0"},
                fill=args.fill,
                readings=args.readings,
            )
    results = {
        "n": args.n,
        "load_before": load_before,
        "load_after": load_average(),
        "machine": machine_facts(),
        "graphmem_sources": sources,
        "servers": servers,
        "entity_name_example": entity_name(0),
    }
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        args.json.with_suffix(".md").write_text(report(results))
    print(report(results))


if __name__ == "__main__":
    main()
