"""Core event-log benchmarks: append throughput and latency, bytes per event, decode replay,
checkpoints (snapshot size, save, restore, service start-up with and without one), as-of
reads (bench.time_travel) and full rebuilds (bench.rebuild).

Run: python -m bench.core [--events N] [--dir DIR]. Prints a table and writes
bench/results/core.json; with --checkpoints-only, only the checkpoint figures, to
bench/results/checkpoints.json. The log itself comes from bench.log_data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT
from bench import rebuild, time_travel
from bench.log_data import WORDS, build_log, commands, host_facts, replay, start_up
from eventstore.events import (
    Cause,
    ObservationAdded,
    encode_envelope,
)
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, Durability, LogTransaction
from projections.graph import GraphProjection

RESULTS = Path(__file__).parent / "results" / "core.json"
BATCH_SIZES = (1, 10, 100, 1000)


def _append_throughput(
    root: Path, durability: Durability, events_per_txn: int, grouped: bool, budget_s: float
) -> dict[str, Any]:
    """Commit `events_per_txn` per transaction: as that many one-event commands (group commit)
    or as one command of that many events."""
    path = root / f"append-{durability.value}-{events_per_txn}-{'group' if grouped else 'one'}"
    stream = commands(1)
    pool = [event for events, _ in (next(stream) for _ in range(1000)) for event in events]
    cause = Cause(tool="add_observations", client="bench")
    with LmdbEventLog.open(path, durability=durability, map_size=4 << 30) as log:

        def write(txn: LogTransaction) -> None:
            if grouped:
                for i in range(events_per_txn):
                    txn.append([pool[i % len(pool)]], cause)
            else:
                txn.append([pool[i % len(pool)] for i in range(events_per_txn)], cause)

        txns = 0
        start = time.perf_counter()
        while time.perf_counter() - start < budget_s and txns * events_per_txn < 500_000:
            log.transact(write)
            txns += 1
        elapsed = time.perf_counter() - start
    events = txns * events_per_txn
    return {
        "durability": durability.value,
        "events_per_txn": events_per_txn,
        "shape": "group of 1-event commands" if grouped else "one command",
        "events": events,
        "events_per_s": events / elapsed,
        "txns_per_s": txns / elapsed,
    }


def _latency(root: Path, durability: Durability, samples: int) -> dict[str, Any]:
    event = ObservationAdded(entity="alice", content=" ".join(WORDS[:10]))
    cause = Cause(tool="add_observations", client="bench")
    timings: list[float] = []
    with LmdbEventLog.open(root / f"latency-{durability.value}", durability=durability) as log:
        for _ in range(50):
            log.append([event], cause)  # warm up
        for _ in range(samples):
            start = time.perf_counter()
            log.append([event], cause)
            timings.append(time.perf_counter() - start)
    cuts = statistics.quantiles(timings, n=100)
    return {
        "durability": durability.value,
        "samples": samples,
        "p50_ms": cuts[49] * 1e3,
        "p95_ms": cuts[94] * 1e3,
        "p99_ms": cuts[98] * 1e3,
    }


def _size_and_replay(root: Path, n_events: int) -> dict[str, Any]:
    start = time.perf_counter()
    log = build_log(root / "replay", n_events)
    build_s = time.perf_counter() - start
    try:
        info, psize = log.env.info(), log.env.stat()["psize"]
        used = (info["last_pgno"] + 1) * psize
        sample = [
            encode_envelope(e) for _, e in zip(range(100_000), log.read_from(1), strict=False)
        ]
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            count = replay(log)
            runs.append(time.perf_counter() - start)
        assert count == log.last_position()
        folds = []
        for _ in range(3):
            start = time.perf_counter()
            graph = GraphProjection()
            graph.apply_all(log.read_from(1))
            folds.append(time.perf_counter() - start)
        assert graph.position == count
    finally:
        log.close()
    return {
        "events": count,
        "build_s": build_s,
        "build_events_per_s": count / build_s,
        "used_bytes": used,
        "bytes_per_event": used / count,
        "mean_encoded_bytes": sum(map(len, sample)) / len(sample),
        "replay_best_s": min(runs),
        "replay_events_per_s": count / min(runs),
        "replay_fold_best_s": min(folds),
        "replay_fold_events_per_s": count / min(folds),
    }


def _used_bytes(log: LmdbEventLog) -> int:
    info, psize = log.env.info(), log.env.stat()["psize"]
    used: int = (info["last_pgno"] + 1) * psize
    return used


def _checkpoints(root: Path, n_events: int) -> dict[str, Any]:
    """Service start-up on an `n_events` log without and with checkpoints (the service's own,
    saved by its first start); then snapshot, save, load and restore the graph alone."""
    log = build_log(root / "checkpoints", n_events)
    try:
        cold = [start_up(log, None)[0] for _ in range(2)]
        before = _used_bytes(log)
        start_up(log, 100_000)  # folds the log, then saves its checkpoints
        on_disk = _used_bytes(log) - before
        warm = [start_up(log, 100_000)[0] for _ in range(3)]
        graph = GraphProjection()
        graph.apply_all(log.read_from(1))
        start = time.perf_counter()
        payload = graph.to_snapshot()
        snapshot_s = time.perf_counter() - start
        start = time.perf_counter()
        log.checkpoints.save(Checkpoint(graph.name, graph.version, graph.position, payload))
        save_s = time.perf_counter() - start
        loads, restores = [], []
        for _ in range(3):
            start = time.perf_counter()
            found = log.checkpoints.load(graph.name, graph.version)
            loads.append(time.perf_counter() - start)
            assert found is not None
            start = time.perf_counter()
            restored = GraphProjection.from_snapshot(found.payload)
            restores.append(time.perf_counter() - start)
            del restored
        entities = graph.entity_count()
    finally:
        log.close()
    return {
        "events": n_events,
        "entities": entities,
        "snapshot_bytes": len(payload),
        "checkpoints_bytes_on_disk": on_disk,
        "log_bytes_on_disk": before,
        "snapshot_s": snapshot_s,
        "save_s": save_s,
        "load_best_s": min(loads),
        "restore_best_s": min(restores),
        "start_up_from_log_best_s": min(cold),
        "start_up_from_checkpoint_best_s": min(warm),
    }


def _print_checkpoints(row: dict[str, Any]) -> None:
    print(
        f"\ncheckpoint of a {row['events']:,}-event graph ({row['entities']:,} entities): "
        f"{row['snapshot_bytes'] / 1e6:.1f} MB "
        f"({row['checkpoints_bytes_on_disk'] / 1e6:.1f} MB on disk with the schema view's, "
        f"beside a "
        f"{row['log_bytes_on_disk'] / 1e6:.1f} MB log), "
        f"snapshot {row['snapshot_s']:.2f} s, save {row['save_s']:.2f} s, "
        f"load {row['load_best_s']:.2f} s, restore {row['restore_best_s']:.2f} s; "
        f"service start-up {row['start_up_from_log_best_s']:.2f} s from the log, "
        f"{row['start_up_from_checkpoint_best_s']:.2f} s from the checkpoint"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events for the replay log")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per append case")
    parser.add_argument("--dir", default=None, help="scratch dir (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--checkpoints-only", action="store_true", help="measure only the checkpoint figures"
    )
    args = parser.parse_args(argv)

    if args.checkpoints_only:
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-bench-") as tmp:
            row = _checkpoints(Path(tmp), args.events)
        _print_checkpoints(row)
        out = args.out or RESULTS.with_name("checkpoints.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": host_facts()}
        out.write_text(json.dumps({**report, "checkpoints": row}, indent=2) + "\n")
        print(f"\nwrote {out}")
        return

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="graphmem-bench-") as tmp:
        root = Path(tmp)
        appends = [
            _append_throughput(root, durability, size, grouped, args.budget)
            for durability in Durability
            for grouped in (True, False)
            for size in BATCH_SIZES
        ]
        latencies = [
            _latency(root, Durability.EVERYSEC, 5000),
            _latency(root, Durability.STRICT, 300),
        ]
        replayed = _size_and_replay(root, args.events)
        checkpoints = _checkpoints(root, args.events)
        as_of = time_travel.measure(root, args.events, CHECKPOINT_EVERY, CHECKPOINTS_KEPT, points=6)
        rebuilt = rebuild.measure(root, args.events)

    print(f"{'durability':<10} {'shape':<26} {'ev/txn':>6} {'events/s':>12} {'txns/s':>10}")
    for row in appends:
        print(
            f"{row['durability']:<10} {row['shape']:<26} {row['events_per_txn']:>6} "
            f"{row['events_per_s']:>12,.0f} {row['txns_per_s']:>10,.0f}"
        )
    print(f"\n{'single-command append':<22} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for row in latencies:
        p50, p95, p99 = row["p50_ms"], row["p95_ms"], row["p99_ms"]
        print(f"{row['durability']:<22} {p50:>8.3f} {p95:>8.3f} {p99:>8.3f}")
    print(
        f"\nlog of {replayed['events']:,} events: "
        f"built at {replayed['build_events_per_s']:,.0f} ev/s, "
        f"{replayed['bytes_per_event']:.0f} B/event on disk "
        f"(mean encoded envelope {replayed['mean_encoded_bytes']:.0f} B), "
        f"decode replay {replayed['replay_events_per_s']:,.0f} ev/s "
        f"({replayed['replay_best_s']:.2f} s), "
        f"decode + graph fold {replayed['replay_fold_events_per_s']:,.0f} ev/s "
        f"({replayed['replay_fold_best_s']:.2f} s)"
    )
    _print_checkpoints(checkpoints)
    time_travel.print_report(as_of)
    rebuild.print_report(rebuilt)

    out = args.out or RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": host_facts(),
        "append_throughput": appends,
        "append_latency": latencies,
        "replay": replayed,
        "checkpoints": checkpoints,
        "as_of": as_of,
        "rebuild": rebuilt,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
