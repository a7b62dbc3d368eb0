"""This node's events go out from a sender process of the server's own: it is restarted when
it dies (and the exit shows in `replication status`), what was written meanwhile is sent once
it is back, and it never outlives the server, even one killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from graphmem.replication.hub import Hub
from graphmem.replication.status import STATE_FILE, read_state
from tests.replication.nodes import Node, converged, wait_for

GONE = 15.0  # from the server's death to its sender's exit: the sender's stop grace and more


def _sender(node_dir: Path) -> dict[str, Any]:
    state = read_state(node_dir / STATE_FILE) or {}
    sender: dict[str, Any] = state.get("sender") or {}
    return sender


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _status(node: Node) -> str:
    env = {**os.environ, "GRAPHMEM_DIR": str(node.dir), "GRAPHMEM_NODE_ID": node.name}
    env["GRAPHMEM_REPLICATE"] = node.url
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "replication", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_a_killed_sender_is_restarted_reported_and_sends_what_was_written_meanwhile(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("before")
    converged([a, b])
    first = wait_for(lambda: bool(_sender(a.dir).get("pid")), what="a's sender in the state")
    assert first >= 0
    pid = int(_sender(a.dir)["pid"])
    assert psutil.Process(pid).parent().pid == os.getpid()  # a child of the server

    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _gone(pid), GONE, "the killed sender to be gone")
    # Written while the sender is dead or being started again: the log keeps them.
    a.create(*(f"meanwhile-{i}" for i in range(50)))

    wait_for(
        lambda: (
            _sender(a.dir).get("restarts", 0) >= 1
            and _sender(a.dir).get("running") is True
            and _sender(a.dir).get("pid") != pid
        ),
        what="a new sender to be started and shown",
    )
    converged([a, b])
    assert b.query(lambda graph: graph.has_entity("meanwhile-49"))
    sender = _sender(a.dir)
    assert f"pid {pid}) exited" in sender["last_exit"]

    shown = _status(a)
    assert f"running (pid {sender['pid']}, restarted 1 times)" in shown


def test_a_sigkilled_server_takes_its_sender_with_it(hub: Hub, tmp_path: Path) -> None:
    data_dir = tmp_path / "served"
    env = {
        **os.environ,
        "GRAPHMEM_DIR": str(data_dir),
        "GRAPHMEM_NODE_ID": "served",
        "GRAPHMEM_REPLICATE": hub.url,
        "GRAPHMEM_REPLICA_GROUP": "kill",
        "GRAPHMEM_SCHEMAS_DIR": str(tmp_path / "no-schemas"),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: bool(_sender(data_dir).get("pid")), what="the server's sender")
        pid = int(_sender(data_dir)["pid"])
        assert psutil.Process(pid).parent().pid == server.pid
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        wait_for(lambda: _gone(pid), GONE, f"the sender {pid} to exit after its server")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        assert server.stdin is not None
        server.stdin.close()


def test_the_state_file_says_the_sender_stopped_with_the_server(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a = nodes("a", hub.url)
    a.create("x")
    wait_for(lambda: _sender(a.dir).get("running") is True, what="a's sender to run")
    pid = int(_sender(a.dir)["pid"])
    a.stop()
    assert _gone(pid)
    assert _sender(a.dir)["running"] is False
    assert json.loads((a.dir / STATE_FILE).read_text())["sender"].get("last_exit") is None


def test_a_node_with_nothing_of_its_own_runs_no_sender_until_its_first_write(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a = nodes("a", hub.url)
    a.create("from a")
    b = nodes("b", hub.url)  # a fresh node: it only receives (a catch-up, nothing to send)
    converged([a, b])
    assert _sender(b.dir) == {"running": False, "waiting": True}
    assert "not started: this node has no events of its own yet" in _status(b)
    b.create("from b")
    converged([a, b])
    assert a.query(lambda graph: graph.has_entity("from b"))
    wait_for(lambda: _sender(b.dir).get("running") is True, what="b's sender in the state")
