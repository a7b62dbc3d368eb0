"""`graphmem doctor` as a real process beside a real nats-server: the hub answers."""

from __future__ import annotations

from pathlib import Path

from graphmem.replication.hub import Hub
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
