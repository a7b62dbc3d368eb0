"""Replication settings: off by default (nothing started, nats-py not imported), a hub that is
not there never stops local service, bad values are refused with what to do."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.replicator import complete_transactions
from graphmem.config import ReplicationSettings, Settings, SettingsError
from graphmem.replication.status import STATE_FILE, redact
from tests.replication.nodes import Node, free_port, wait_for


def test_without_the_setting_a_server_starts_no_replicator_and_never_imports_nats(
    tmp_path: Path,
) -> None:
    script = textwrap.dedent(
        f"""
        import sys, pykka
        from graphmem.app import running
        from graphmem.config import Settings
        settings = Settings.from_env({{"GRAPHMEM_DIR": {str(tmp_path)!r}}})
        with running(settings, replicate=True):
            names = [r.actor_class.__name__ for r in pykka.ActorRegistry.get_all()]
        print("nats" in sys.modules, "ReplicatorActor" in names)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines()[-1].split() == ["False", "False"]
    assert not (tmp_path / STATE_FILE).exists()


@pytest.mark.parametrize("hub_url", ["unreachable", "not a url at all", "tls://127.0.0.1:1"])
def test_an_unreachable_hub_is_reported_and_retried_while_local_writes_go_on(
    tmp_path: Path, nodes: Callable[..., Node], hub_url: str
) -> None:
    if hub_url == "unreachable":
        hub_url = f"nats://127.0.0.1:{free_port()}"
    node = nodes("a", hub_url)
    for i in range(20):
        node.create(f"e{i}")
    assert node.frontier() == {"a": 20}
    state_file = node.dir / STATE_FILE

    def reported() -> bool:
        try:
            state = json.loads(state_file.read_text())
        except (OSError, ValueError):
            return False
        return not state["connected"] and bool(state["last_error"])

    wait_for(reported, what="the state file to report the unreachable hub")


def test_a_node_id_that_cannot_name_a_stream_leaves_local_service_running(
    tmp_path: Path, nodes: Callable[..., Node]
) -> None:
    node = nodes("bad.id", f"nats://127.0.0.1:{free_port()}")
    node.create("still works")
    assert node.frontier() == {"bad.id": 1}
    assert not (node.dir / STATE_FILE).exists()


def test_replication_settings_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "GRAPHMEM_REPLICATE": "nats://hub:4222",
            "GRAPHMEM_REPLICA_GROUP": "team-a",
            "GRAPHMEM_REPLICA_CREDS": "/etc/nats/me.creds",
            "GRAPHMEM_REPLICA_TLS_CA": "/etc/nats/ca.pem",
            "GRAPHMEM_REPLICA_MAX_BYTES": "1_000_000",
            "GRAPHMEM_REPLICA_STREAM_REPLICAS": "3",
        }
    ).replication
    assert settings == ReplicationSettings(
        url="nats://hub:4222",
        group="team-a",
        creds=Path("/etc/nats/me.creds"),
        tls_ca=Path("/etc/nats/ca.pem"),
        max_stream_bytes=1_000_000,
        stream_replicas=3,
    )
    assert Settings.from_env({}).replication.url is None


@pytest.mark.parametrize("group", ["a_b", "has space", "x" * 33, "dot.ted"])
def test_a_group_that_cannot_name_a_stream_is_refused_with_the_rule(group: str) -> None:
    with pytest.raises(SettingsError, match=r"GRAPHMEM_REPLICA_GROUP=.*letters, digits or '-'"):
        Settings.from_env({"GRAPHMEM_REPLICA_GROUP": group})


def test_the_hub_url_is_shown_without_its_password() -> None:
    assert redact("nats://me:secret@hub.example:4222") == "nats://***@hub.example:4222"
    assert redact("nats://hub:4222,tls://h2:4223") == "nats://hub:4222,tls://h2:4223"


def test_only_whole_transactions_are_handed_to_the_writer() -> None:
    assert complete_transactions([True, False, False], 10) == 1
    assert complete_transactions([False, False], 10) == 0
    assert complete_transactions([True, True, False, True], 10) == 4
    # Capped at the limit on a transaction boundary...
    assert complete_transactions([True, True, True, True], 2) == 2
    # ...unless the first transaction alone is longer: then it goes whole.
    assert complete_transactions([False, False, False, True, True], 2) == 4
