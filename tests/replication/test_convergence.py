"""Three nodes replicating through a real nats-server converge to one graph."""

from __future__ import annotations

from collections.abc import Callable

from graphmem.replication.hub import Hub
from tests.replication.nodes import Link, Node, converged


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


def test_concurrent_writes_to_one_element_resolve_identically_and_show_as_conflicts(
    hub: Hub, links: Callable[[], Link], nodes: Callable[..., Node]
) -> None:
    link = {n: links() for n in "ab"}
    a, b = nodes("a", link["a"].url), nodes("b", link["b"].url)
    link["a"].down()
    link["b"].down()  # both offline: neither sees the other's write before making its own
    a.create("shared", entity_type="person")
    b.create("shared", entity_type="place")
    a.observe("shared", "from a")
    b.delete("shared")
    link["a"].up()
    link["b"].up()
    converged([a, b])
    assert a.conflicts() == b.conflicts()
    kinds = {(kind, key) for kind, key, _ in a.conflicts()}
    assert ("entity", ("shared",)) in kinds
    # The kept write is the same on both, and it is what both graphs show.
    assert a.export() == b.export()
