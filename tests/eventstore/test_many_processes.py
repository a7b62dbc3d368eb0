"""Several processes share one data dir: decisions stay serializable and no write is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from eventstore.events import EntityCreated, ObservationAdded
from eventstore.lmdb_env import SharedEnv
from eventstore.lmdb_log import LmdbEventLog

CHILD = Path(__file__).with_name("many_writers_child.py")
TIMEOUT = 60.0
TINY_MAP = 64 * 1024  # so that the writers grow the map under each other's feet


def spawn(data_dir: Path, node_id: str, mode: str, *args: int) -> subprocess.Popen[str]:
    argv = [sys.executable, str(CHILD), str(data_dir), node_id, str(TINY_MAP), mode]
    return subprocess.Popen(
        [*argv, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_together(procs: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    """Start every process's work at once, then collect their reports, all within TIMEOUT."""
    pool = ThreadPoolExecutor(len(procs))
    try:
        readies = [pool.submit(p.stdout.readline) for p in procs]  # type: ignore[union-attr]
        for proc, ready in zip(procs, readies, strict=True):
            line = ready.result(timeout=TIMEOUT)
            assert line == "ready\n", line or proc.stderr.read()  # type: ignore[union-attr]
        for proc in procs:
            proc.stdin.write("go\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0, err
            reports.append(json.loads(out))
        return reports
    finally:
        # Kill first: a reader thread stuck on a silent child only returns once it is gone.
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=TIMEOUT)
        pool.shutdown()


@pytest.mark.slow
@pytest.mark.e2e
def test_concurrent_writers_decide_serializably_and_lose_nothing(tmp_path: Path) -> None:
    universe, commands = 500, 200
    # Two writers share the node id stored in the dir; two run with their own override.
    node_ids = ["-", "-", "writer-c", "writer-d"]
    procs = [
        spawn(tmp_path, node, "decide", p * 100, commands, universe)
        for p, node in enumerate(node_ids)
    ]
    reports = run_together(procs)

    with LmdbEventLog.open(tmp_path) as log:
        stored = list(log.read_from(1))
        by_origin = {origin: log.read_origin(origin) for origin in {e.origin for e in stored}}

    assert [e.position for e in stored] == list(range(1, len(stored) + 1))
    names = [e.event.name for e in stored if isinstance(e.event, EntityCreated)]
    assert len(names) == len(stored)
    assert len(set(names)) == len(names), "a name was created twice"
    assert set(names) == {f"n{i}" for i in range(universe)}

    acks = [r for report in reports for r in report["results"]]
    assert len(acks) == 4 * commands
    creates = [r for r in acks if r["created"]]
    assert sorted(r["position"] for r in creates) == [e.position for e in stored]
    for ack in creates:
        envelope = stored[ack["position"] - 1]
        assert envelope.event == EntityCreated(name=ack["name"], entity_type="thing")
        assert (envelope.origin, envelope.origin_seq, envelope.tx) == (
            ack["origin"],
            ack["origin_seq"],
            ack["origin_seq"],
        )
    for ack in acks:
        if not ack["created"]:
            assert stored[ack["existing"] - 1].event == EntityCreated(
                name=ack["name"], entity_type="thing"
            )
    contested = sum(1 for ack in acks if not ack["created"])
    assert contested == 4 * commands - universe

    counts: dict[str, int] = defaultdict(int)
    for envelope in stored:
        counts[envelope.origin] += 1
    # Three node ids; one that started late may have found every name of its range taken
    # already, and so appended nothing.
    origins = {r["origin"] for r in reports}
    assert len(origins) == 3 and set(counts) <= origins
    for origin, envelopes in by_origin.items():
        assert [e.origin_seq for e in envelopes] == list(range(1, counts[origin] + 1))
    hlcs = [e.hlc for e in stored]
    assert hlcs == sorted(set(hlcs)), "the shared clock went backwards between processes"


@pytest.mark.slow
@pytest.mark.e2e
def test_a_map_grown_by_another_process_is_adopted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adoptions: list[int] = []
    adopt = SharedEnv.adopt_resize

    def counting_adopt(shared: SharedEnv) -> None:
        adoptions.append(shared.env.info()["map_size"])
        adopt(shared)

    monkeypatch.setattr(SharedEnv, "adopt_resize", counting_adopt)
    with LmdbEventLog.open(tmp_path, map_size=TINY_MAP) as log:
        log.append([ObservationAdded(entity="mine", content="first")])
        small = log.env.info()["map_size"]

        [report] = run_together([spawn(tmp_path, "other", "bulk", 3_000, 1_000)])
        last_position, grown = report["results"]
        assert grown > small

        assert log.last_position() == last_position == 3_001
        assert adoptions, "the reader never saw MapResizedError"
        assert sum(1 for _ in log.read_from(1)) == 3_001
        mine = log.append([ObservationAdded(entity="mine", content="after")])[0]
        assert (mine.position, mine.origin_seq) == (3_002, 2)
        assert log.env.info()["map_size"] >= grown
