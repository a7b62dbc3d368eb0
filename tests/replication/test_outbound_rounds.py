"""The link's cost per local write: a burst of commits goes out in few rounds (each a batch
published, one ack awaited), not one per ack round trip: a round's fixed CPU shares the
interpreter with the writer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from graphmem.replication.hub import Hub
from graphmem.replication.nats_link import COALESCE
from graphmem.replication.status import STATE_FILE, read_state
from tests.replication.nodes import Node, converged, wait_for


def _state(node: Node) -> dict[str, Any]:
    return read_state(node.dir / STATE_FILE) or {}


def test_a_burst_of_commits_goes_out_in_rounds_a_coalescing_window_apart(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("warm")
    wait_for(lambda: _state(a).get("published", 0) >= 1, what="the first event's round")
    before = _state(a)["rounds"]
    started = time.monotonic()
    for i in range(300):
        a.create(f"e{i}")
    took = time.monotonic() - started
    wait_for(lambda: _state(a)["published"] >= 301, what="the burst to be published")
    rounds = _state(a)["rounds"] - before
    # One round at the burst's first commit, then one per window (whatever the machine's
    # speed: the bound grows with the burst's duration), and the tail's.
    assert 1 <= rounds <= took / COALESCE + 3, f"{rounds} rounds for a {took:.3f} s burst"
    converged([a, b])
