"""`graphmem doctor` as a real process beside a real nats-server: the hub answers."""

from __future__ import annotations

from pathlib import Path

from graphmem.replication.hub import Hub
from graphmem.replication.status import STATE_FILE, LinkState, write_state
from tests.damage import write_people
from tests.e2e.cli_support import graphmem


def test_doctor_says_the_replication_hub_answers(hub: Hub, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_people(data, 2)
    done = graphmem(data, "doctor", env={"GRAPHMEM_REPLICATE": hub.url})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ok       replication: the hub {hub.url} answers at 127.0.0.1:{hub.port}" in (
        done.stdout
    )


def test_doctor_warns_when_the_servers_sender_process_is_not_running(
    hub: Hub, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_people(data, 2)
    # What a server leaves in the data dir while its sender is down (between its exit and
    # its restart, or exiting at every start): written by the link's own writer.
    state = LinkState(hub=hub.url, group="graphmem", node="n", connected=True)
    state.sender = {
        "pid": 4321,
        "running": False,
        "restarts": 3,
        "last_exit": "the sender process (pid 4321) exited with code 1: ...",
    }
    write_state(data / STATE_FILE, state)
    done = graphmem(data, "doctor", env={"GRAPHMEM_REPLICATE": hub.url})
    assert (
        "replication: the server's sender process is not running: the sender process "
        "(pid 4321) exited with code 1" in done.stdout
    ), done.stdout
    assert "its error is in the server's log" in done.stdout
