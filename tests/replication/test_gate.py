"""The tombstone gate: a deletion is collectable only once every member has seen it; members
are explicit, an absent one holds collection back until it is retired."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem.replication.gate import tombstone_gate
from graphmem.replication.hub import Hub
from tests.replication.nodes import Node, converged, wait_for


def test_the_watermark_is_what_every_member_has_received() -> None:
    gate = tombstone_gate(
        "a",
        own={"a": 10, "b": 7, "c": 5},
        members=["a", "b", "c"],
        retired=[],
        frontiers={"b": {"a": 8, "b": 7, "c": 5}, "c": {"a": 6, "b": 7, "c": 5}},
    )
    assert gate.open and gate.watermark == {"a": 6, "b": 7, "c": 5}


def test_a_member_that_never_reported_holds_everything_back_until_retired() -> None:
    frontiers = {"b": {"a": 8, "b": 7}}
    own = {"a": 10, "b": 7}
    held = tombstone_gate("a", own, ["a", "b", "c"], [], frontiers)
    assert not held.open and held.watermark == {}
    assert held.blocked_by == ["member c has not reported what it received"]
    freed = tombstone_gate("a", own, ["a", "b", "c"], ["c"], frontiers)
    assert freed.open and freed.watermark == {"a": 8, "b": 7}


def test_a_member_whose_own_events_have_not_all_arrived_holds_collection_back() -> None:
    # b reported 9 of its own events; this node holds 7: b's 8 and 9 may be older than a
    # tombstone and must be folded before it can go.
    gate = tombstone_gate("a", {"a": 3, "b": 7}, ["a", "b"], [], {"b": {"a": 3, "b": 9}})
    assert not gate.open
    assert "holds 7 of member b's events, b reported 9" in gate.blocked_by[0]


def test_a_writer_that_is_not_a_member_holds_collection_back() -> None:
    gate = tombstone_gate("a", {"a": 3, "x": 1}, ["a"], [], {})
    assert not gate.open and "node x writes but is not a member" in gate.blocked_by[0]
    assert not tombstone_gate("a", {"a": 3}, [], [], {}).open  # no members declared


def _cli(node: Node, hub: Hub, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(node.dir), "replication", *args],
        env={
            "GRAPHMEM_REPLICATE": hub.url,
            "GRAPHMEM_REPLICA_GROUP": "t",
            "GRAPHMEM_REPLICA_MEMBERS": "a,b,c",
            "GRAPHMEM_NODE_ID": node.name,
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_nodes_report_frontiers_and_retiring_an_absent_member_opens_the_gate(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("x", "y")
    b.create("z")
    a.delete("x")  # a's tombstone at origin_seq 3
    converged([a, b])

    def gate() -> Any:
        done = _cli(a, hub, "gate", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    wait_for(
        lambda: gate()["frontiers"].get("b") == {"a": 3, "b": 1},
        what="b's frontier to reach the hub",
    )
    held = gate()
    assert not held["open"]
    assert held["blocked_by"] == ["member c has not reported what it received"]

    retired = _cli(a, hub, "retire", "c")
    assert retired.returncode == 0, retired.stderr
    opened = gate()
    assert opened["open"] and opened["retired"] == ["c"]
    assert opened["collectable_up_to"] == {"a": 3, "b": 1}


def test_the_gate_says_so_when_the_hub_does_not_answer(tmp_path: Path, hub: Hub) -> None:
    data = tmp_path / "offline"
    node = Node(tmp_path, "offline", "nats://127.0.0.1:1").start()
    node.create("e")
    node.stop()
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data), "replication", "gate"],
        env={"GRAPHMEM_REPLICATE": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "did not answer" in done.stderr and "Traceback" not in done.stderr
