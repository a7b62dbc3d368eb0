"""The memory floor of an idle stdio server: what every `graphmem serve` holds besides the data.

Run: python -m bench.floor [--spawns 5] [--graphmem-rev REV ...] [--json PATH]

For each graphmem tree (the work tree, or each `--graphmem-rev`, all in one run so the figures
share the machine's state) a store is created and served once (its kept handshake answers
written, as a user's second start finds them), then `--spawns` servers are spawned on it as a
host spawns one: `initialize`, `tools/list`, one `create_entities` (held until the server has
loaded: the whole stack is in) and one `search_nodes`. The kernel's figures are read from
/proc/PID/status (VmRSS, RssAnon: the heap; RssFile: mapped files, the libraries and the LMDB
map) and /proc/PID/smaps (resident KiB by mapping, the largest shown), medians of the spawns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.machine import load_average, machine_facts
from bench.rpc import RpcClient
from bench.servers import Store, graphmem_source, start

KIB_PER_MIB = 1024
TOP_MAPPINGS = 12
STATUS_KEYS = ("VmRSS", "RssAnon", "RssFile")


def status_mib(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon and RssFile of a live process, MiB."""
    figures: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in STATUS_KEYS:
            figures[key] = int(value.split()[0]) / KIB_PER_MIB
    return figures


def mappings_kib(pid: int) -> dict[str, int]:
    """Resident KiB by mapping (a file's basename, `[heap]`, or `anon` for unnamed maps)."""
    by_name: dict[str, int] = defaultdict(int)
    name = "anon"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            name = Path(fields[5]).name if len(fields) > 5 else "anon"
        elif fields and fields[0] == "Rss:":
            by_name[name] += int(fields[1])
    return dict(by_name)


def _idle_server(store: Store, log: Path) -> RpcClient:
    client = start(store, log)
    client.list_tools()
    entity = {"name": "floor", "entityType": "note", "observations": ["one write"]}
    for tool, arguments in (
        ("create_entities", {"entities": [entity]}),
        ("search_nodes", {"query": "floor"}),
    ):
        reply = client.call(tool, arguments)
        if reply.failed:
            client.close(timeout=30)
            raise RuntimeError(f"{tool} failed: {reply.describe()}")
    return client


def measure(src: Path | None, work: Path, spawns: int) -> dict[str, Any]:
    """Medians over `spawns` idle servers on one store (after a first start that made it)."""
    work.mkdir(parents=True, exist_ok=True)
    store = Store("graphmem", work / "data", 0.0, src)
    _idle_server(store, work / "first.stderr.log").close(timeout=60)
    statuses: list[dict[str, float]] = []
    maps: list[dict[str, int]] = []
    for i in range(spawns):
        client = _idle_server(store, work / f"spawn-{i}.stderr.log")
        try:
            statuses.append(status_mib(client.pid))
            maps.append(mappings_kib(client.pid))
        finally:
            client.close(timeout=60)
    names = {name for one in maps for name in one}
    mapped = {name: statistics.median(one.get(name, 0) for one in maps) for name in names}
    largest = sorted(mapped.items(), key=lambda item: -item[1])[:TOP_MAPPINGS]
    return {
        "median_mib": {k: round(statistics.median(s[k] for s in statuses), 1) for k in STATUS_KEYS},
        "spawns_mib": statuses,
        "largest_mappings_kib": dict(largest),
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        f"Idle stdio server, median of {results['spawns']} spawns (MiB; load average before "
        f"{results['load_before']}, after {results['load_after']}).",
        "",
        "| graphmem | " + " | ".join(STATUS_KEYS) + " |",
        "|---|" + "---|" * len(STATUS_KEYS),
    ]
    for label, figures in results["trees"].items():
        row = [f"{figures['median_mib'][k]:.1f}" for k in STATUS_KEYS]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    for label, figures in results["trees"].items():
        lines += ["", f"Largest resident mappings, {label} (KiB):"]
        lines += [
            f"  {kib:>8,.0f}  {name}" for name, kib in figures["largest_mappings_kib"].items()
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument(
        "--graphmem-rev",
        action="append",
        default=None,
        metavar="REV",
        help="graphmem as committed at REV (repeat to compare; default: the work tree)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    load_before = load_average()
    trees: dict[str, dict[str, Any]] = {}
    sources: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-floor-") as tmp:
        root = Path(tmp)
        for i, rev in enumerate(args.graphmem_rev or [None]):
            label = f"graphmem@{rev}" if rev else "graphmem (work tree)"
            tree = root / f"src-{i}"
            tree.mkdir()
            src, sources[label] = graphmem_source(rev, tree)
            trees[label] = measure(src, root / f"run-{i}", args.spawns)
            print(f"  {label}: {trees[label]['median_mib']}", flush=True)
    results = {
        "spawns": args.spawns,
        "load_before": load_before,
        "load_after": load_average(),
        "machine": machine_facts(),
        "graphmem_sources": sources,
        "trees": trees,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        args.json.with_suffix(".md").write_text(report(results))
    print(report(results))


if __name__ == "__main__":
    main()
