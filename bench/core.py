"""Core event-log benchmarks: append throughput and latency, bytes per event, decode replay,
checkpoints (snapshot size, save, restore, service start-up with and without one), as-of
reads (bench.time_travel) and full rebuilds (bench.rebuild).

Run: python -m bench.core [--events N] [--dir DIR]. Prints a table and writes
bench/results/core.json; with --checkpoints-only, only the checkpoint figures, to
bench/results/checkpoints.json. `build_log` and `replay` are reused by other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from actors.bridge import BlockingReply
from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT
from actors.graph_writer import Ask, GraphWriterActor
from eventstore.events import (
    AnyEvent,
    Cause,
    EntityCreated,
    Envelope,
    ObservationAdded,
    RelationCreated,
    encode_envelope,
)
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, Durability, LogTransaction
from projections.graph import GraphProjection

RESULTS = Path(__file__).parent / "results" / "core.json"
BATCH_SIZES = (1, 10, 100, 1000)
_PROSE = (
    "prefers tea over coffee works remotely from Lisbon on the platform team reviews pull "
    "requests in the morning uses neovim with a custom config owns the billing service since "
    "2023 mentors two juniors allergic to peanuts speaks Portuguese and German"
)
_WORDS = _PROSE.split()
_TYPES = ("person", "project", "service", "team", "document", "decision")
_RELATIONS = ("works_on", "owns", "knows", "depends_on", "reviewed", "mentors")
_TOOLS = ("create_entities", "add_observations", "create_relations")


def commands(seed: int = 0) -> Iterator[tuple[list[AnyEvent], Cause]]:
    """An endless, deterministic stream of realistic commands (1-5 events each).

    About 15% EntityCreated, 65% ObservationAdded, 20% RelationCreated by event count.
    """
    rng = random.Random(seed)
    names: list[str] = []
    contents = [" ".join(rng.sample(_WORDS, 10)) for _ in range(4096)]
    causes = [
        Cause(tool=tool, client="bench", session=f"s{i}") for i in range(4) for tool in _TOOLS
    ]
    while True:
        roll = rng.random()
        size = rng.randint(1, 5)
        if roll < 0.15 or len(names) < 2:
            batch: list[AnyEvent] = []
            for _ in range(size):
                names.append(f"{rng.choice(_TYPES)}-{len(names):07d}")
                batch.append(EntityCreated(name=names[-1], entity_type=rng.choice(_TYPES)))
            yield batch, causes[0]
        elif roll < 0.80:
            entity = rng.choice(names)
            yield (
                [
                    ObservationAdded(entity=entity, content=rng.choice(contents))
                    for _ in range(size)
                ],
                causes[1],
            )
        else:
            yield (
                [
                    RelationCreated(
                        from_entity=rng.choice(names),
                        to_entity=rng.choice(names),
                        relation_type=rng.choice(_RELATIONS),
                    )
                    for _ in range(size)
                ],
                causes[2],
            )


def build_log(
    path: str | os.PathLike[str],
    n_events: int,
    *,
    txn_events: int = 20_000,
    seed: int = 0,
    durability: Durability = Durability.EVERYSEC,
) -> LmdbEventLog:
    """Open a log at `path` and append at least `n_events` of the realistic mix, fast.

    Commands are group-committed about `txn_events` events per transaction; the caller closes
    the returned log.
    """
    log = LmdbEventLog.open(path, durability=durability, map_size=4 << 30)
    stream = commands(seed)
    target = log.last_position() + n_events

    def fill(txn: LogTransaction) -> int:
        if txn.attempt:
            raise RuntimeError("the map grew mid-build: raise map_size")
        stop = min(txn.last_position() + txn_events, target)
        while txn.last_position() < stop:
            events, cause = next(stream)
            txn.append(events[: stop - txn.last_position()], cause)
        return txn.last_position()

    while log.transact(fill) < target:
        pass
    return log


def replay(log: LmdbEventLog, apply: Callable[[Envelope], object] | None = None) -> int:
    """Read and decode the whole log, feeding each envelope to `apply`; returns the count."""
    if apply is None:
        return sum(1 for _ in log.read_from(1))
    count = 0
    for envelope in log.read_from(1):
        apply(envelope)
        count += 1
    return count


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
    event = ObservationAdded(entity="alice", content=" ".join(_WORDS[:10]))
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


def _start_up(log: LmdbEventLog, checkpoint_every: int | None) -> tuple[float, int]:
    """Seconds from starting a graph writer to its first answer, and the entities it saw.
    The writer saves nothing on the way out (nothing changes), so runs can be repeated."""
    start = time.perf_counter()
    writer = GraphWriterActor.start(log, checkpoint_every=checkpoint_every)
    reply: BlockingReply[int] = BlockingReply()
    writer.tell(Ask(lambda graph: graph.entity_count(), reply))
    entities = reply.wait(600)
    elapsed = time.perf_counter() - start
    writer.stop(block=True, timeout=600)
    return elapsed, entities


def _checkpoints(root: Path, n_events: int) -> dict[str, Any]:
    """Service start-up on an `n_events` log without and with checkpoints (the service's own,
    saved by its first start); then snapshot, save, load and restore the graph alone."""
    log = build_log(root / "checkpoints", n_events)
    try:
        cold = [_start_up(log, None)[0] for _ in range(2)]
        before = _used_bytes(log)
        _start_up(log, 100_000)  # folds the log, then saves its checkpoints
        on_disk = _used_bytes(log) - before
        warm = [_start_up(log, 100_000)[0] for _ in range(3)]
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


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}


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
        report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": _machine()}
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
        # Imported here: bench.time_travel builds its log with this module's build_log.
        from bench import time_travel  # noqa: PLC0415

        as_of = time_travel.measure(root, args.events, CHECKPOINT_EVERY, CHECKPOINTS_KEPT, points=6)
        from bench import rebuild  # noqa: PLC0415 (it imports this module)

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
        "machine": _machine(),
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
