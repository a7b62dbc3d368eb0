"""A new day's decay run on a large graph, and the first reads after it, in process.

Run: python -m bench.decay_days [--entities 100000 --edges 300000] [--days 10]

The server's clock cannot move between calls, so graph_decay over stdio can time a new day's
run only once per process (bench.graph_family times the report of one as a dry run a day
later at each call). Here the graph writer's own steps are timed on the cached graph
(bench.graph_data), folded into a GraphProjection: for each of `--days` days, the run's
decision (the report and its DecayApplied, actors.graph_maintenance.decay at that day's
time), folding the event, then the first graph_stats (the FamilyIndex re-derives every value
the run moved) and the first listing by confidence (its order is rebuilt on first use).
Untimed first: the fold and the index's build (what a server does at start and first read).

At --entities 100000 --edges 300000 the results go to bench/results/decay_days.json; other
sizes to bench/.cache/quick/ unless --out-dir says.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from actors.graph_maintenance import decay, decay_command
from actors.graph_tunables import Decay
from actors.read_models import ReadModels
from bench.graph_data import CACHE, GraphSpec, cached
from bench.machine import load_average, machine_facts
from bench.workload import percentile
from eventstore.events import Envelope
from eventstore.hlc import stamp_of
from eventstore.lmdb_log import LmdbEventLog
from projections.graph import GraphProjection
from projections.graph_family import ListOptions, family_index, graph_entities, graph_stats
from projections.graph_time import DAY_MS

HERE = Path(__file__).resolve().parent
FULL = GraphSpec(100_000, 300_000)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.decay_days", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--entities", type=int, default=5_000)
    parser.add_argument("--edges", type=int, default=None, help="default 3 x entities")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=10, help="new days, one run each")
    parser.add_argument("--out-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    args = parser.parse_args(argv)
    args.edges = 3 * args.entities if args.edges is None else args.edges
    spec = GraphSpec(args.entities, args.edges, args.seed)
    if args.out_dir is None:
        args.out_dir = HERE / "results" if spec == FULL else HERE / ".cache" / "quick"
    args.command = " ".join(["python -m bench.decay_days", *(argv or [])])
    return args


def _ms(step: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = step()
    return (time.perf_counter() - started) * 1e3, value


def run(args: argparse.Namespace) -> dict[str, Any]:
    spec = GraphSpec(args.entities, args.edges, args.seed)
    log_dir, manifest = cached(spec, print, args.cache_dir)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-decay-days-") as tmp:
        for item in log_dir.iterdir():
            shutil.copyfile(item, Path(tmp) / item.name)
        event_log = LmdbEventLog.open(tmp)
        try:
            fold_ms, graph = _ms(lambda: _folded(event_log))
            index_ms, _ = _ms(lambda: family_index(graph).relation_count)
            print(f"folded in {fold_ms / 1e3:.1f} s, index built in {index_ms / 1e3:.1f} s")
            rows = _days(graph, event_log.last_position(), args.days)
        finally:
            event_log.close()
    return {
        "command": args.command,
        "load_before": args.load_before,
        "load_after": load_average(),
        "machine": machine_facts(),
        "graph": {k: v for k, v in manifest.items() if k in ("spec", "counts", "events")},
        "fold_ms": fold_ms,
        "index_build_ms": index_ms,
        "days": rows,
        "summary": {
            key: {"p50": percentile([r[key] for r in rows], 50), "max": max(r[key] for r in rows)}
            for key in ("decide_ms", "fold_ms", "first_stats_ms", "first_listing_ms")
        },
    }


def _folded(event_log: LmdbEventLog) -> GraphProjection:
    models = ReadModels.folding(event_log, ["graph"])
    models.catch_up()
    return models.get(GraphProjection)


def _days(graph: GraphProjection, position: int, days: int) -> list[dict[str, Any]]:
    command = decay_command(Decay())
    now = int(time.time() * 1000)
    rows = []
    for day in range(1, days + 1):
        at = now + day * DAY_MS
        decide_ms, (events, result) = _ms(partial(decay, graph, command, at))
        position += 1
        envelope = Envelope(
            position=position,
            origin="bench",
            origin_seq=position,
            hlc=stamp_of(at),
            tx=position,
            event=events[0],
        )
        fold_ms, _ = _ms(partial(graph.apply, envelope))
        stats = partial(graph_stats, graph, now_ms=at, stale_confidence=0.3, stale_days=90)
        stats_ms, _ = _ms(stats)
        listing = partial(graph_entities, graph, ListOptions(sort_by="confidence", limit=20))
        listing_ms, _ = _ms(listing)
        report = result.report
        row = {
            "day": day,
            "decide_ms": decide_ms,
            "fold_ms": fold_ms,
            "first_stats_ms": stats_ms,
            "first_listing_ms": listing_ms,
            "nodes_decayed": report.nodes_decayed,
            "edges_decayed": report.edges_decayed,
            "nodes_flagged": report.nodes_flagged,
            "edges_below": report.edges_below,
        }
        print(
            f"  day +{day}: run decided in {decide_ms:7.1f} ms ({report.nodes_decayed:,} "
            f"entities, {report.edges_decayed:,} edges moved), folded {fold_ms:.2f} ms, first "
            f"graph_stats {stats_ms:7.1f} ms, first listing by confidence {listing_ms:7.1f} ms"
        )
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.load_before = load_average()
    results = run(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "decay_days.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"load average before {results['load_before']}, after {results['load_after']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
