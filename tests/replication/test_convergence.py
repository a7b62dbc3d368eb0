"""Three nodes replicating through a real nats-server converge to one graph."""

from __future__ import annotations

from collections.abc import Callable

from graphmem.replication.hub import Hub
from tests.replication.nodes import Node, converged


def test_three_nodes_writing_concurrently_end_with_identical_graphs(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b, c = (nodes(n, hub.url) for n in "abc")
    for i in range(30):
        for node in (a, b, c):
            node.create(f"{node.name}-{i}")
            node.observe(f"{node.name}-{i}", f"seen by {node.name}")
    # Cross-node edits: each deletes or annotates the others' entities.
    converged([a, b, c])
    a.delete("b-1", "c-1")
    b.observe("a-2", "b was here")
    c.delete("a-3")
    seconds = converged([a, b, c])
    assert seconds < 60
    lines = a.export()
    assert not any('"b-1"' in line for line in lines)
    assert any('"b was here"' in line for line in lines)
    assert a.frontier() == {"a": 62, "b": 61, "c": 61}  # a deleted two at once
