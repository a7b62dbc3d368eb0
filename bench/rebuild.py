"""Rebuild benchmark: the log folded from scratch into fresh read models (actors.rebuild).

Run on one core, as the target is stated for one: `taskset -c 1 python -m bench.rebuild
[--events N] [--dir DIR]`. Builds bench.core's realistic log (1M events by default), then
measures: reading and decoding alone; a fold into the graph alone, into the graph and schema
view (what the graph writer serves: its start-up fold when no checkpoint fits), and into every
checkpointed model (graph, schemas, conflicts); a rebuild's direct path (the plain prefix,
actors.rebuild.read_prefix) phase by phase; `graphmem rebuild` as a whole (direct path
or fold, compare, save); and the graph writer's start-up from the log alone. Prints a
summary and writes bench/results/rebuild.json; `measure` and `print_report` are reused by
bench.core.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from actors.bridge import BlockingReply
from actors.graph_writer import Ask, AskModels, GraphWriterActor, Rebuild
from actors.read_models import ReadModels
from actors.rebuild import RebuildResult, read_prefix, rebuild_checkpoints, stored_records
from bench.log_data import build_log, host_facts, replay, start_up
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from projections.graph import GraphProjection
from projections.plain_prefix import PLAIN_DECODER, PlainPrefix
from projections.projection import registered

RESULTS = Path(__file__).parent / "results" / "rebuild.json"
TARGET_EVENTS_PER_S = 500_000
RUNS = 3


def _best(run: Callable[[], Any]) -> float:
    """The fastest of RUNS runs, in seconds (each starts from scratch)."""
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def _fold(event_log: LmdbEventLog, names: tuple[str, ...]) -> Callable[[], Any]:
    def run() -> ReadModels:
        models = ReadModels.folding(event_log, names)
        models.catch_up()
        return models

    return run


def _direct(event_log: LmdbEventLog) -> dict[str, float]:
    """The direct path (actors.rebuild.read_prefix) phase by phase, each the best of RUNS:
    reading the stored records alone, reading and decoding them with the plain decoder, the
    whole scan into columns, each model's snapshot from the columns, and the three restored
    (what a fresh fold hands a server before folding the rest)."""
    end = event_log.last_position()
    timings: dict[str, list[float]] = {}

    def timed(name: str, run: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        result = run()
        timings.setdefault(name, []).append(time.perf_counter() - started)
        return result

    collecting = gc.isenabled()
    gc.disable()  # as read_prefix runs
    try:
        for _ in range(RUNS):
            _direct_once(event_log, end, timed)
    finally:
        if collecting:
            gc.enable()
    best = {name: min(values) for name, values in timings.items()}
    graph_s = best["scan"] + best["graph"]
    all_s = graph_s + best["schemas"] + best["conflicts"]
    return {
        "direct_read_s": best["read"],
        "direct_read_decode_s": best["decode"],
        "direct_read_decode_events_per_s": end / best["decode"],
        "direct_scan_s": best["scan"],
        "direct_graph_snapshot_s": best["graph"],
        "direct_schemas_snapshot_s": best["schemas"],
        "direct_conflicts_snapshot_s": best["conflicts"],
        "direct_restore_s": best["restore"],
        "direct_graph_events_per_s": end / graph_s,
        "direct_all_models_events_per_s": end / all_s,
        "direct_all_models_restored_events_per_s": end / (all_s + best["restore"]),
    }


def alternating(event_log: LmdbEventLog) -> dict[str, float]:
    """Every checkpointed model from the whole log, folded and built directly (read_prefix),
    one after the other RUNS times, in CPU seconds (best of each): on a shared machine, the
    ratio of the two is what survives the load."""
    end = event_log.last_position()
    names = ("graph", "schemas", "conflicts")
    fold, direct = [], []
    for _ in range(RUNS):
        started = time.process_time()
        _fold(event_log, names)()
        fold.append(time.process_time() - started)
        started = time.process_time()
        read_prefix(event_log, names, end)
        direct.append(time.process_time() - started)
    return {
        "alternating_fold_all_models_cpu_s": min(fold),
        "alternating_direct_all_models_cpu_s": min(direct),
        "alternating_direct_all_models_events_per_cpu_s": end / min(direct),
    }


def _direct_once(
    event_log: LmdbEventLog, end: int, timed: Callable[[str, Callable[[], Any]], Any]
) -> None:
    def scan() -> PlainPrefix:
        prefix = PlainPrefix()
        for raws in stored_records(event_log, end):
            prefix.feed(raws)
        assert prefix.position == end, "the benchmark's log is plain throughout"
        return prefix

    timed("read", lambda: sum(map(len, stored_records(event_log, end))))
    timed("decode", lambda: [_decode_plain(raws) for raws in stored_records(event_log, end)])
    prefix: PlainPrefix = timed("scan", scan)
    built: dict[str, bytes] = {}
    for name in ("graph", "schemas", "conflicts"):
        built[name] = timed(name, partial(_snapshot, prefix, name))
    timed("restore", partial(_restore, built))


def _snapshot(prefix: PlainPrefix, name: str) -> bytes:
    return prefix.snapshots([name]).snapshots[name]


def _restore(built: dict[str, bytes]) -> list[Any]:
    return [registered(name).projection.from_snapshot(data) for name, data in built.items()]


def _decode_plain(raws: list[bytes]) -> list[Any]:
    return list(map(PLAIN_DECODER, raws))


def measure(root: Path, n_events: int) -> dict[str, Any]:
    """The rebuild figures on a fresh `n_events` log under `root`."""
    event_log = build_log(root / "rebuild", n_events)
    try:
        events = event_log.last_position()
        decode_s = _best(lambda: replay(event_log))
        graph_s = _best(_fold(event_log, ("graph",)))
        served_s = _best(_fold(event_log, ("graph", "schemas")))
        all_s = _best(_fold(event_log, ("graph", "schemas", "conflicts")))
        direct = _direct(event_log) | alternating(event_log)
        started = time.perf_counter()
        report = rebuild_checkpoints(event_log)
        command_s = time.perf_counter() - started
        # Again, as on a served store: its stored checkpoints (here the ones just saved, at the
        # end) are compared, then fresh ones saved.
        started = time.perf_counter()
        checked = rebuild_checkpoints(event_log)
        checked_s = time.perf_counter() - started
        warm_up = _search_warm_up(event_log)  # from the checkpoints the rebuild saved
        for name in ("graph", "schemas", "conflicts"):
            event_log.checkpoints.delete(name)
        start_up_s = min(start_up(event_log, None)[0] for _ in range(2))
        upgrade = _upgradestart_up(event_log)
    finally:
        event_log.close()
    return {
        "events": events,
        "target_events_per_s": TARGET_EVENTS_PER_S,
        "decode_events_per_s": events / decode_s,
        "graph_fold_s": graph_s,
        "graph_events_per_s": events / graph_s,
        "graph_and_schemas_events_per_s": events / served_s,
        "all_models_events_per_s": events / all_s,
        **direct,
        "rebuild_command_s": command_s,
        "rebuild_command_fold_events_per_s": report.events_per_second,
        "rebuild_command_saved_bytes": report.saved_bytes,
        "rebuild_command_save_s": command_s - report.fold_seconds,
        "rebuild_command_checked_s": checked_s,
        "rebuild_command_checked_fold_events_per_s": checked.events_per_second,
        "rebuild_command_checked_direct_events": checked.direct_events,
        "rebuild_command_checked_mismatches": len(checked.mismatches),
        "writer_start_up_from_log_s": start_up_s,
        **upgrade,
        **warm_up,
    }


def _search_warm_up(event_log: LmdbEventLog) -> dict[str, float]:
    """A start from checkpoints, then requests in a row (as a client's would queue) until the
    writer has built the search index while idle: when that is done, the longest any request
    waited behind a warm-up step, and the first search once it is done."""
    started = time.perf_counter()
    writer = GraphWriterActor.start(event_log, checkpoint_every=100_000)

    def ask(query: Callable[[ReadModels], Any]) -> Any:
        reply: BlockingReply[Any] = BlockingReply()
        writer.tell(AskModels(query, reply))
        return reply.wait(600)

    ask(lambda models: models.graph.entity_count())
    first_answer_s = time.perf_counter() - started
    longest = 0.0
    while True:
        asked = time.perf_counter()
        warmed = ask(lambda models: models.search.warmed)
        longest = max(longest, time.perf_counter() - asked)
        if warmed:
            break
    warmed_s = time.perf_counter() - started
    asked = time.perf_counter()
    ask(lambda models: models.search.search(models.graph, "no such text"))
    search_s = time.perf_counter() - asked
    writer.stop(block=True, timeout=600)
    return {
        "search_warm_first_answer_s": first_answer_s,
        "search_warmed_after_start_s": warmed_s,
        "search_warm_longest_request_wait_s": longest,
        "search_first_once_warmed_s": search_s,
    }


def _upgradestart_up(event_log: LmdbEventLog) -> dict[str, float]:
    """After an upgrade that bumped the graph's version (simulated: this process claims the
    next version and reads the current one's snapshots), a server's start-up: first answer
    from the stale checkpoint, then the background rebuild's swap (refolding before serving
    instead takes as long as a start-up from the log)."""
    models = ReadModels.folding(event_log, ("graph", "schemas"))
    models.catch_up()
    graph, schemas = models.graph, models.schemas
    old = GraphProjection.version
    event_log.checkpoints.save(
        Checkpoint(graph.name, old, graph.position, graph.to_snapshot()),
        Checkpoint(schemas.name, schemas.version, schemas.position, schemas.to_snapshot()),
    )
    del models, graph, schemas
    GraphProjection.version = old + 1
    GraphProjection.readable_versions = frozenset({old})
    try:
        started = time.perf_counter()
        writer = GraphWriterActor.start(event_log, checkpoint_every=100_000, serve_stale=True)
        answered: BlockingReply[int] = BlockingReply()
        writer.tell(Ask(lambda g: g.entity_count(), answered))
        answered.wait(600)
        first_answer_s = time.perf_counter() - started
        swapped: BlockingReply[RebuildResult] = BlockingReply()
        writer.tell(Rebuild(swapped))  # joins the rebuild the stale checkpoint started
        swapped.wait(600)
        swapped_s = time.perf_counter() - started
        writer.stop(block=True, timeout=600)
    finally:
        GraphProjection.version = old
        GraphProjection.readable_versions = frozenset()
        for name in ("graph", "schemas"):
            event_log.checkpoints.delete(name)
    return {
        "upgrade_first_answer_stale_s": first_answer_s,
        "upgrade_rebuilt_and_swapped_s": swapped_s,
    }


def print_report(row: dict[str, Any]) -> None:
    if "direct_scan_s" in row:
        print(
            f"\ndirect path (the plain prefix, here the whole log): read "
            f"{row['direct_read_s']:.2f} s, read + plain decode "
            f"{row['direct_read_decode_s']:.2f} s "
            f"({row['direct_read_decode_events_per_s']:,.0f} ev/s), scan into columns "
            f"{row['direct_scan_s']:.2f} s, snapshots: graph "
            f"{row['direct_graph_snapshot_s']:.2f} s, "
            f"schemas {row['direct_schemas_snapshot_s']:.3f} s, conflicts "
            f"{row['direct_conflicts_snapshot_s']:.2f} s; graph "
            f"{row['direct_graph_events_per_s']:,.0f} ev/s, every checkpointed model "
            f"{row['direct_all_models_events_per_s']:,.0f} ev/s, restored too "
            f"{row['direct_all_models_restored_events_per_s']:,.0f} ev/s; alternating with the "
            f"fold, every model: {row['alternating_direct_all_models_cpu_s']:.2f} against "
            f"{row['alternating_fold_all_models_cpu_s']:.2f} CPU s"
        )
    print(
        f"\nrebuild of a {row['events']:,}-event log (best of {RUNS}; target "
        f"{row['target_events_per_s']:,} ev/s): read + decode {row['decode_events_per_s']:,.0f} "
        f"ev/s; fold into the graph {row['graph_events_per_s']:,.0f} ev/s "
        f"({row['graph_fold_s']:.2f} s), graph + schemas "
        f"{row['graph_and_schemas_events_per_s']:,.0f} ev/s, every checkpointed model "
        f"{row['all_models_events_per_s']:,.0f} ev/s; `graphmem rebuild` "
        f"{row['rebuild_command_s']:.2f} s in all (built at "
        f"{row['rebuild_command_fold_events_per_s']:,.0f} ev/s, then "
        f"{row.get('rebuild_command_save_s', 0):.2f} s saving); again with its checkpoints "
        f"stored, {row.get('rebuild_command_checked_s', 0):.2f} s (built at "
        f"{row.get('rebuild_command_checked_fold_events_per_s', 0):,.0f} ev/s); graph "
        f"writer start-up from the log "
        f"{row['writer_start_up_from_log_s']:.2f} s"
    )
    print(
        f"search index built while idle: started from checkpoints in "
        f"{row['search_warm_first_answer_s']:.2f} s, index ready "
        f"{row['search_warmed_after_start_s']:.2f} s after start (a request waited "
        f"{row['search_warm_longest_request_wait_s'] * 1000:.0f} ms at most), first search then "
        f"{row['search_first_once_warmed_s'] * 1000:.2f} ms"
    )
    print(
        f"after an upgrade of the graph's version: first answer from the stale checkpoint "
        f"{row['upgrade_first_answer_stale_s']:.2f} s, fresh models swapped in after "
        f"{row['upgrade_rebuilt_and_swapped_s']:.2f} s; refolding before serving instead "
        f"{row['writer_start_up_from_log_s']:.2f} s"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the log")
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-bench-") as tmp:
        row = measure(Path(tmp), args.events)
    print_report(row)
    out = args.out or RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": host_facts()}
    out.write_text(json.dumps({**report, "rebuild": row}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
