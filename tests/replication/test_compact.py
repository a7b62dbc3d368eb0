"""`graphmem compact` against a real hub: it collects exactly the tombstones the gate allows,
nothing while a member has not seen them, and a late write older than a deletion (from a
member that was cut off) never revives what was deleted; graphs stay equal across nodes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats

from eventstore.events import EntityDeleted
from eventstore.hlc import ms_of, wall_ms
from eventstore.lmdb_log import LmdbEventLog
from graphmem.cli.replay import graph_at
from graphmem.config import ReplicationSettings
from graphmem.replication import names
from graphmem.replication.hub import Hub
from graphmem.replication.hub_client import read_membership
from tests.replication.nodes import Link, Node, converged, wait_for


def _graphmem(data_dir: Path, env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


def _env(node: Node, hub: Hub, members: str) -> dict[str, str]:
    return {
        "GRAPHMEM_REPLICATE": hub.url,
        "GRAPHMEM_REPLICA_GROUP": "t",
        "GRAPHMEM_REPLICA_MEMBERS": members,
        "GRAPHMEM_NODE_ID": node.name,
    }


def _holds(node: Node, name: str) -> bool:
    """Whether the node's graph keeps a record of `name` (alive, or a tombstone)."""
    return node.query(lambda graph: name in graph.state.entities)


def _reported(node: Node, hub: Hub, members: str, reporter: str, origin: str, seq: int) -> None:
    """Wait until `reporter`'s frontier at the hub covers `origin` up to `seq`."""
    wait_for(
        lambda: (
            _graphmem(node.dir, _env(node, hub, members), "replication", "gate", "--json")[
                "frontiers"
            ]
            .get(reporter, {})
            .get(origin, 0)
            >= seq
        ),
        what=f"{reporter}'s frontier to cover {origin}:{seq} at the hub",
    )


def test_a_cut_off_members_older_write_does_not_revive_a_deletion_compact_kept(
    hub: Hub, links: Callable[[], Link], nodes: Callable[..., Node]
) -> None:
    members = "a,b,c"
    link = {n: links() for n in "abc"}
    a, b, c = (nodes(n, link[n].url) for n in "abc")
    a.create("x", "y")
    converged([a, b, c])
    _reported(a, hub, members, "c", "a", 2)
    link["c"].down()  # c is cut off: what it writes now reaches no one
    c.delete("x")  # and re-creates it: a creation of x older than a's deletion
    c.create("x", entity_type="robot")
    assert c.log is not None
    created_at = next(c.log.read_from(c.log.last_position())).hlc
    # a's deletion is newer: a later millisecond (a tie would go to the larger origin, c).
    wait_for(lambda: wall_ms() > ms_of(created_at), what="the next millisecond")
    a.delete("x")
    deleted_at = a.frontier()["a"]
    _reported(a, hub, members, "b", "a", deleted_at)
    a.stop()
    # c has not seen the deletion: its tombstone must stay, or c's creation would revive x.
    held = _graphmem(a.dir, _env(a, hub, members), "compact", "--json")
    assert held["open"] and held["collectable_up_to"]["a"] < deleted_at
    assert (held["entities"], held["checkpoint"]) == (0, None)
    a.start()
    assert _holds(a, "x")
    link["c"].up()
    converged([a, b, c])  # equal graphs: c's creation lost to the deletion everywhere
    assert a.query(lambda graph: graph.entity("x")) is None
    # Once c has reported the deletion (and a holds all c wrote), the tombstone may go.
    _reported(a, hub, members, "c", "a", deleted_at)
    wait_for(lambda: a.frontier().get("c", 0) >= c.frontier()["c"], what="c's events at a")
    a.stop()
    done = _graphmem(a.dir, _env(a, hub, members), "compact", "--json")
    assert done["collectable_up_to"]["a"] >= deleted_at and done["entities"] == 1
    a.start()
    assert not _holds(a, "x") and _holds(b, "x")
    b.create("z")
    c.observe("y", "after the collection")
    converged([a, b, c])


def test_an_absent_member_blocks_compact_until_it_is_retired(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    members = "a,b,d"  # d never comes
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("x", "y")
    a.delete("x")
    converged([a, b])
    _reported(a, hub, members, "b", "a", 3)
    a.stop()
    blocked = _graphmem(a.dir, _env(a, hub, members), "compact", "--json")
    assert not blocked["open"] and blocked["entities"] == 0
    assert blocked["blocked_by"] == ["member d has not reported what it received"]
    text = _graphmem(a.dir, _env(a, hub, members), "compact")
    assert "nothing collected" in text and "member d has not reported" in text
    _graphmem(a.dir, _env(a, hub, members), "replication", "retire", "d")
    freed = _graphmem(a.dir, _env(a, hub, members), "compact", "--json")
    assert freed["open"] and freed["entities"] == 1 and freed["checkpoint"] is not None
    a.start()
    assert not _holds(a, "x") and _holds(b, "x")
    b.create("x")  # a newer creation: alive everywhere again
    converged([a, b])


def test_without_replication_every_tombstone_is_collected_and_history_keeps_the_deletion(
    tmp_path: Path,
) -> None:
    node = Node(tmp_path, "solo", "nats://127.0.0.1:1")  # replicates nowhere: its URL is dead
    node.start()
    node.create("x", "y")
    node.delete("x")
    node.stop()
    done = _graphmem(node.dir, {}, "compact", "--json")
    assert done["open"] and done["entities"] == 1
    with LmdbEventLog.open(node.dir) as event_log:
        deletions = [
            e.position for e in event_log.read_from(1) if isinstance(e.event, EntityDeleted)
        ]
        assert len(deletions) == 1  # the log is the history: not rewritten
        assert graph_at(event_log, deletions[0] - 1).entity("x") is not None  # as of before
        assert graph_at(event_log, deletions[0]).entity("x") is None
    again = _graphmem(node.dir, {}, "compact")
    assert again.startswith("collected 0 entity")


def test_membership_is_read_whole_from_the_hub_every_frontier_and_every_retired_node(
    hub: Hub,
) -> None:
    # Read from the buckets' streams, not nats-py's key watcher (which can end its listing
    # early): 60 frontiers and 60 retired nodes, one of them retired and then un-retired.
    settings = ReplicationSettings(url=hub.url, group="t")

    async def fill() -> None:
        nc = await nats.connect(hub.url)
        try:
            js = nc.jetstream()
            frontiers = await js.create_key_value(bucket=names.frontier_bucket("t"), history=1)
            retired = await js.create_key_value(bucket=names.retired_bucket("t"), history=1)
            for i in range(60):
                await frontiers.put(f"n{i}", json.dumps({f"n{i}": i + 1}).encode())
                await retired.put(f"r{i}", b'{"retired_at": 0}')
            await retired.delete("r7")
        finally:
            await nc.close()

    asyncio.run(fill())
    frontiers, retired = read_membership(settings)
    assert frontiers == {f"n{i}": {f"n{i}": i + 1} for i in range(60)}
    assert retired == sorted(f"r{i}" for i in range(60) if i != 7)
