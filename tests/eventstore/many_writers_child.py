"""A writer process for test_many_processes: appends to a shared data dir, prints what it did.

Usage: many_writers_child.py DATA_DIR NODE_ID|- MAP_SIZE decide START COUNT UNIVERSE
       many_writers_child.py DATA_DIR NODE_ID|- MAP_SIZE bulk EVENTS SIZE

Prints "ready" once the log is open, waits for "go" on stdin, then prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from eventstore.events import Cause, EntityCreated, ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import LogTransaction


def decide_creates(log: LmdbEventLog, start: int, count: int, universe: int) -> list[Any]:
    """Create each name unless any process created it first: the decision reads the log tail."""
    created: dict[str, int] = {}
    seen = 0
    results: list[Any] = []
    cause = Cause(tool="create_entities", client="many_writers_child")
    for i in range(count):
        name = f"n{(start + i) % universe}"

        def decide(txn: LogTransaction, name: str = name) -> dict[str, Any]:
            nonlocal seen
            for envelope in txn.read_from(seen + 1):
                created.setdefault(envelope.event.name, envelope.position)  # type: ignore[union-attr]
                seen = envelope.position
            if name in created:
                return {"name": name, "created": False, "existing": created[name]}
            [envelope] = txn.append([EntityCreated(name=name, entity_type="thing")], cause)
            return {
                "name": name,
                "created": True,
                "position": envelope.position,
                "origin": envelope.origin,
                "origin_seq": envelope.origin_seq,
                "tx": envelope.tx,
                "attempt": txn.attempt,
            }

        results.append(log.transact(decide))
    return results


def bulk(log: LmdbEventLog, events: int, size: int) -> list[Any]:
    for start in range(0, events, 100):
        batch = [
            ObservationAdded(entity="bulk", content=f"{i:08d}" + "x" * size)
            for i in range(start, min(start + 100, events))
        ]
        log.append(batch)
    return [log.last_position(), log.env.info()["map_size"]]


def main() -> int:
    data_dir, node_id, map_size, mode, *args = sys.argv[1:]
    log = LmdbEventLog.open(
        data_dir, node_id=None if node_id == "-" else node_id, map_size=int(map_size)
    )
    try:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return 2
        numbers = [int(a) for a in args]
        results = decide_creates(log, *numbers) if mode == "decide" else bulk(log, *numbers)
        print(json.dumps({"origin": log.node_id, "results": results}), flush=True)
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
