"""A node that joins after the hub's copy of a peer lost its first events (a purge, or the
stream's limits) does not start from the hole: it folds nothing of that peer past it, and
`replication status` and `doctor` say so with what to do."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import nats

from graphmem.replication import names
from graphmem.replication.hub import Hub
from graphmem.replication.status import STATE_FILE, read_state
from tests.e2e.cli_support import graphmem
from tests.replication.nodes import Node, wait_for


async def _purge_before(url: str, node: str, seq: int) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().purge_stream(names.stream_name("t", node), seq=seq)
    finally:
        await nc.close()


def _status(node: Node) -> dict[str, Any]:
    shown = graphmem(node.dir, "replication", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    report: dict[str, Any] = json.loads(shown.stdout)
    return report


def test_a_peer_joining_after_a_purge_reports_the_hole_and_folds_nothing_past_it(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a = nodes("a", hub.url)
    for i in range(5):  # each published before the next: one message each, stream seq i + 1
        a.create(f"e{i}")
        wait_for(
            lambda i=i: (
                (read_state(a.dir / STATE_FILE) or {}).get("hub_holds", {}).get("a") == i + 1
            ),
            what=f"a's event {i + 1} on the hub",
        )
    asyncio.run(_purge_before(hub.url, "a", 3))  # events 1 and 2 are gone from the hub

    c = nodes("c", hub.url)
    wait_for(
        lambda: any(o["hub_lacks"] == [1, 2] for o in _status(c)["origins"]),
        what="c's status to show the hole in a's events",
    )
    assert c.frontier().get("a", 0) == 0  # nothing folded from past the hole
    problems = _status(c)["problems"]
    assert "events 1..2 of node a" in problems[0]
    assert "not built yet" in problems[0]
    stats = graphmem(c.dir, "stats")
    assert "1 problem(s): `graphmem replication status`" in stats.stdout, stats.stderr
    doctor = graphmem(c.dir, "doctor")
    assert doctor.returncode == 1
    assert "PROBLEM  replication: the hub no longer holds events 1..2 of node a" in doctor.stdout
