"""Test harness: a real nats-server hub, cuttable links, and in-process graphmem nodes.

Each node is a whole graphmem app (its own data dir, LMDB log, writer, replicator and NATS
link) in this process; several share the process but nothing else. Waits poll with a deadline.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from actors.command_inputs import EntityInput, ObservationInput
from actors.commands import AddObservations, CreateEntities, DeleteEntities
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability
from graphmem.app import STOP_TIMEOUT, App, start_actors
from graphmem.config import ReplicationSettings, Settings
from graphmem.migration import export_jsonl
from projections.graph import GraphProjection

T = TypeVar("T")

PROXY = Path(__file__).resolve().parents[2] / "bench" / "tcp_proxy.py"

WAIT = 60.0  # the longest any convergence may take on a loaded 2-core box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Link:
    """One node's own TCP path to the hub: kill the proxy = partition, restart = heal."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def up(self) -> Link:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(PROXY),
                str(self.port),
                str(self.target),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("proxy did not start")

    def down(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait(10)


class Node:
    """A graphmem app replicating through `url` as node `name` (GRAPHMEM_NODE_ID), or with
    `stored_id` as the id stored in its data dir `root/name`."""

    def __init__(
        self,
        root: Path,
        name: str,
        url: str,
        group: str = "t",
        *,
        stored_id: bool = False,
        max_stream_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.dir = root / name
        self.url = url
        self.group = group
        self.explicit_id = None if stored_id else name
        self.max_stream_bytes = max_stream_bytes
        self.app: App | None = None
        self.log: LmdbEventLog | None = None

    @property
    def node_id(self) -> str:
        """The origin it writes as."""
        return self.log.node_id if self.log is not None else self.name

    def start(self) -> Node:
        settings = Settings(
            data_dir=self.dir,
            node_id=self.explicit_id,
            durability=Durability.EVERYSEC,
            watch_schemas=False,
            schema_dirs=(),
            replication=ReplicationSettings(
                url=self.url,
                group=self.group,
                discover_seconds=0.2,
                **(
                    {}
                    if self.max_stream_bytes is None
                    else {"max_stream_bytes": self.max_stream_bytes}
                ),
            ),
        )
        self.log = LmdbEventLog.open(self.dir, node_id=self.explicit_id)
        self.app = start_actors(settings, self.log, replicate=True)
        return self

    def stop(self) -> None:
        app, self.app = self.app, None
        if app is not None:
            app.supervisor.stop(block=True, timeout=STOP_TIMEOUT)
        if self.log is not None:
            self.log.close()
            self.log = None

    # --- writes and reads -----------------------------------------------------------------

    def execute(self, command: Any) -> Any:
        assert self.app is not None
        return self.app.graph.execute_blocking(command)

    def create(self, *names: str, entity_type: str = "thing") -> None:
        self.execute(
            CreateEntities(
                entities=[
                    EntityInput(name=n, entity_type=entity_type, observations=[]) for n in names
                ]
            )
        )

    def observe(self, name: str, *contents: str) -> None:
        self.execute(
            AddObservations(
                observations=[ObservationInput(entity_name=name, contents=list(contents))]
            )
        )

    def delete(self, *names: str) -> None:
        self.execute(DeleteEntities(entity_names=list(names)))

    def query(self, fn: Callable[[GraphProjection], T]) -> T:
        assert self.app is not None
        return self.app.graph.query_blocking(fn)

    def export(self) -> list[str]:
        """The graph as sorted JSONL lines (fold order differs between nodes; content not)."""
        return sorted(self.query(export_jsonl).decode().split("\n"))

    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.export()).encode()).hexdigest()

    def frontier(self) -> dict[str, int]:
        assert self.log is not None
        return self.log.origins()

    def conflicts(self) -> Any:
        assert self.app is not None
        return self.app.graph.query_models_blocking(
            lambda models: [(c.kind, c.key, c.kept.origin) for c in models.conflicts.conflicts()]
        )


def wait_for(check: Callable[[], bool], timeout: float = WAIT, what: str = "condition") -> float:
    """Poll `check` until true; the seconds it took. Raises with `what` after `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def converged(nodes: list[Node], timeout: float = WAIT) -> float:
    """Wait until every node holds every node's events, then check they fold to one graph."""

    def same_frontier() -> bool:
        want = {n.node_id: n.frontier().get(n.node_id, 0) for n in nodes}
        return all({k: n.frontier().get(k, 0) for k in want} == want for n in nodes)

    seconds = wait_for(
        same_frontier, timeout, f"frontiers to agree: {[n.frontier() for n in nodes]}"
    )
    digests = {n.name: n.digest() for n in nodes}
    assert len(set(digests.values())) == 1, f"same frontier but different graphs: {digests}"
    return seconds
