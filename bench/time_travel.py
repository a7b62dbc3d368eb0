"""As-of reads on a large log: how long `as_of` takes to resolve and its models to build.

The log is bench.log_data's realistic mix (`build_log`), with the graph checkpoints a service that
wrote it would have kept: one every `--every` events, thinned by the same Retention. Each
measured point is read cold (nothing cached): resolve the position (and a time, by binary search),
restore the nearest checkpoint at or before it, fold the rest (the target: 1 s for these), then
answer one search (which builds the as-of search) and one open_nodes.

Run: python -m bench.time_travel [--events N] [--every N] [--dir DIR]; `python -m bench.core`
runs it too. Prints a table and writes bench/results/time_travel.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from actors.catch_up import catch_up
from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT, restore_newest
from actors.time_travel import AsOfModels, TimeTravel, iso_ms
from bench.log_data import build_log, host_facts
from eventstore.checkpoints import Retention
from eventstore.hlc import ms_of
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from projections.graph import GraphProjection

RESULTS = Path(__file__).parent / "results" / "time_travel.json"
TARGET_S = 1.0


def save_checkpoints(log: LmdbEventLog, every: int, kept: int) -> list[int]:
    """Fold the log, saving the graph every `every` events as the writer would (with its
    retention); returns the positions kept."""
    retention = Retention(every, kept)
    graph = GraphProjection()
    fresh = log.read_from(1)
    while chunk := list(itertools.islice(fresh, every)):
        graph.apply_all(chunk)
        log.checkpoints.save(
            Checkpoint(graph.name, graph.version, graph.position, graph.to_snapshot()),
            retention=retention,
        )
    return [info.position for info in log.checkpoints.entries(GraphProjection.name)]


def _points(last: int, kept: list[int], count: int, seed: int) -> list[int]:
    """The worst points (just before each checkpoint: the longest folds), the first and the
    last position, and random ones."""
    rng = random.Random(seed)
    worst = [p - 1 for p in kept if p > 1]
    chosen = {1, last, *worst, *(rng.randint(1, last) for _ in range(count))}
    return sorted(chosen)


def _one_point(log: LmdbEventLog, position: int) -> dict[str, Any]:
    """One cold as-of read, phase by phase, as TimeTravel.query does it (models_at)."""
    travel = TimeTravel(log, cache_size=0)
    started = time.perf_counter()
    point = travel.resolve(position)
    resolve_s = time.perf_counter() - started
    assert point.hlc is not None
    started = time.perf_counter()
    by_time = travel.resolve(iso_ms(ms_of(point.hlc)))
    resolve_time_s = time.perf_counter() - started
    assert by_time.position >= position

    cpu = time.process_time()
    started = time.perf_counter()
    graph = restore_newest(log, GraphProjection, position) or GraphProjection()
    restore_s = time.perf_counter() - started
    restore_cpu_s = time.process_time() - cpu
    checkpoint = graph.position
    started = time.perf_counter()
    catch_up(log, graph.apply_all, graph.position, upto=position)
    fold_s = time.perf_counter() - started
    build_cpu_s = time.process_time() - cpu
    assert graph.position == position
    started = time.perf_counter()
    names = AsOfModels(graph).search.search(graph, "mentors lisbon")  # builds the search
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    picked = next(iter(graph.entity_names()), "")
    graph.entities_named([picked, *names], listing_order=True)
    graph.relations_of_any([picked])
    open_s = time.perf_counter() - started
    # Whichever form as_of takes: a time costs a binary search over the log.
    build = max(resolve_s, resolve_time_s) + restore_s + fold_s
    return {
        "position": position,
        "checkpoint": checkpoint,
        "folded_events": position - checkpoint,
        "resolve_s": resolve_s,
        "resolve_time_s": resolve_time_s,
        "restore_s": restore_s,
        "restore_cpu_s": restore_cpu_s,
        "fold_s": fold_s,
        "search_index_s": index_s,
        "open_s": open_s,
        "build_s": build,
        "build_cpu_s": build_cpu_s,
        "within_target": build <= TARGET_S,
        "with_search_s": build + index_s + open_s,
    }


def measure(root: Path, n_events: int, every: int, kept: int, points: int) -> dict[str, Any]:
    """Build the log and its checkpoints under `root`, then read as of each point."""
    started = time.perf_counter()
    log = build_log(root / "as-of", n_events)
    build_s = time.perf_counter() - started
    try:
        started = time.perf_counter()
        checkpoints = save_checkpoints(log, every, kept)
        checkpoint_s = time.perf_counter() - started
        last = log.last_position()
        rows = [_one_point(log, p) for p in _points(last, checkpoints, points, seed=0)]
        # The same model again: paging through one point is a cache hit.
        travel = TimeTravel(log)
        started = time.perf_counter()
        travel.query(last, lambda m: m.graph.entity_count())
        end_to_end_s = time.perf_counter() - started
        started = time.perf_counter()
        travel.query(last, lambda m: m.graph.entity_count())
        cached_s = time.perf_counter() - started
    finally:
        log.close()
    totals = sorted(row["build_s"] for row in rows)
    return {
        "events": last,
        "checkpoint_every": every,
        "checkpoints_kept": checkpoints,
        "build_s": build_s,
        "checkpoints_s": checkpoint_s,
        "points": rows,
        "worst_build_s": totals[-1],
        "median_build_s": totals[len(totals) // 2],
        "worst_with_search_s": max(row["with_search_s"] for row in rows),
        "time_travel_query_at_the_end_s": end_to_end_s,
        "cached_query_s": cached_s,
        "target_s": TARGET_S,
        "all_within_target": all(row["within_target"] for row in rows),
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\nas-of reads on a {report['events']:,}-event log, checkpoints at "
        f"{', '.join(f'{p:,}' for p in report['checkpoints_kept'])} "
        "(seconds; build = resolve + restore + fold, the 1 s target; cpu = CPU time of the "
        "restore, and of restore + fold):"
    )
    print(
        f"{'position':>10} {'folded':>8} {'resolve':>8} {'by time':>8} {'restore':>8} "
        f"{'cpu':>6} {'fold':>7} {'build':>7} {'cpu':>7} {'search':>7} {'open':>7}"
    )
    for row in report["points"]:
        print(
            f"{row['position']:>10,} {row['folded_events']:>8,} {row['resolve_s']:>8.3f} "
            f"{row['resolve_time_s']:>8.3f} {row['restore_s']:>8.3f} "
            f"{row['restore_cpu_s']:>6.3f} {row['fold_s']:>7.3f} {row['build_s']:>7.3f} "
            f"{row['build_cpu_s']:>7.3f} {row['search_index_s']:>7.3f} {row['open_s']:>7.3f}"
        )
    print(
        f"build: worst {report['worst_build_s']:.2f} s, median {report['median_build_s']:.2f} s "
        f"(target {report['target_s']:.0f} s: "
        f"{'met' if report['all_within_target'] else 'MISSED'}); with the first search, worst "
        f"{report['worst_with_search_s']:.2f} s; a cached point "
        f"{report['cached_query_s'] * 1e3:.2f} ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=CHECKPOINT_EVERY)
    parser.add_argument("--kept", type=int, default=CHECKPOINTS_KEPT)
    parser.add_argument("--points", type=int, default=6, help="random points besides the worst")
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-bench-") as tmp:
        report = measure(Path(tmp), args.events, args.every, args.kept, args.points)
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    args.out.write_text(
        json.dumps({"when": when, "machine": host_facts(), "as_of": report}, indent=2) + "\n"
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
