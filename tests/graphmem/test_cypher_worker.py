"""The Cypher worker process on the real engine, below the gate: the engine's read-only
transaction and the process limits (the second and third read-only layers), and the service's
deadline that kills a worker whose query runs on. Skipped without the `cypher` extra."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.cypher import available
from graphmem.cypher.engine import EngineGoneError, WorkerProcess
from graphmem.cypher.worker import ADDRESS_SPACE

pytestmark = pytest.mark.skipif(not available(), reason="needs the cypher extra")

SLOW = (
    "UNWIND range(1, 20000) AS x UNWIND range(1, 20000) AS y "
    "WITH x, y WHERE x * y % 7 = 3 RETURN count(*) AS n"
)
ENTITIES: dict[str, list[Any]] = {
    "name": ["Alice", "Bob"],
    "id": ["alice", "bob"],
    "type": ["Person", "Person"],
    "subtype": [None, None],
    "confidence": [0.5, 0.8],
    "times_mentioned": [1, 2],
    "first_seen": [0, 1000],
    "last_seen": [0, 1000],
    "source_file": [None, None],
    "aliases": [[], []],
    "properties": [[[], []], [["role"], ["dev"]]],
    "observations": [[], ["likes tea"]],
}
RELATIONS: dict[str, list[Any]] = {
    "from": ["Alice"],
    "to": ["Bob"],
    "type": ["KNOWS"],
    "weight": [0.7],
    "valid_at": [None],
    "invalid_at": [None],
    "ingested_at": [0],
    "last_confirmed": [0],
    "source_session": [None],
    "source_transcript": [None],
    "source_type": [None],
    "evidence": [None],
    "properties": [[[], []]],
}


@pytest.fixture
def worker() -> Iterator[WorkerProcess]:
    process = WorkerProcess(60_000)
    try:
        answer = process.call({"op": "load", "entities": ENTITIES, "relations": RELATIONS}, 60)
        assert answer["ok"], answer
        yield process
    finally:
        process.stop()


def query(worker: WorkerProcess, cypher: str, seconds: float = 30) -> dict[str, Any]:
    return worker.call({"op": "query", "cypher": cypher, "params": {}, "max_rows": 100}, seconds)


def test_a_write_past_the_gate_is_refused_by_the_read_only_transaction(
    worker: WorkerProcess,
) -> None:
    for write in (
        "CREATE (:Entity {name: 'Mallory'})",
        "MATCH (e:Entity {name: 'Alice'}) SET e.confidence = 0.0",
        "MATCH (e:Entity) DETACH DELETE e",
        "CREATE NODE TABLE Evil(id STRING PRIMARY KEY)",
    ):
        answer = query(worker, write)
        assert answer["ok"] is False, write
    answer = query(worker, "MATCH (e:Entity) RETURN e.name AS n, e.confidence AS c ORDER BY n")
    assert answer["results"] == [{"n": "Alice", "c": 0.5}, {"n": "Bob", "c": 0.8}]


def test_the_worker_runs_under_an_address_space_limit_in_an_empty_directory_of_its_own(
    worker: WorkerProcess,
) -> None:
    limits = Path(f"/proc/{worker.pid}/limits").read_text()
    line = next(row for row in limits.splitlines() if row.startswith("Max address space"))
    assert str(ADDRESS_SPACE) in line.split()
    home = Path(os.readlink(f"/proc/{worker.pid}/cwd"))
    assert home != Path.cwd()
    assert list(home.iterdir()) == []
    worker.stop()
    assert not home.exists()


def test_a_worker_that_does_not_answer_by_the_deadline_is_killed(worker: WorkerProcess) -> None:
    # The engine's own timeout is a minute here: only the service's deadline can stop it.
    with pytest.raises(EngineGoneError, match="in time"):
        query(worker, SLOW, seconds=1.0)
    assert not worker.alive


def test_a_crash_on_a_read_query_is_reported_as_the_workers_death(worker: WorkerProcess) -> None:
    with pytest.raises(EngineGoneError, match="signal"):
        query(worker, "RETURN map(NULL, NULL)")
    assert not worker.alive


def test_changes_reset_rewrite_and_re_create_rows_in_one_transaction(
    worker: WorkerProcess,
) -> None:
    bob = {key: [values[1]] for key, values in ENTITIES.items()}
    bob["confidence"] = [0.9]
    answer = worker.call(
        {
            "op": "apply",
            "reset": ["Alice"],
            "entities": bob,
            "delete_relations": [],
            "relations": RELATIONS,
        },
        30,
    )
    # Alice was reset and not re-created: the relation to her finds no end, and says so.
    assert answer == {"ok": True, "missing": 1}
    rows = query(worker, "MATCH (e:Entity) RETURN e.name AS n, e.confidence AS c")["results"]
    assert rows == [{"n": "Bob", "c": 0.9}]
