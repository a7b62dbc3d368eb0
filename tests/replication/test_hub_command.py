"""`graphmem hub`: a nats-server with JetStream in the foreground, stopped by a signal."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import nats

from graphmem.replication.hub import Hub
from tests.replication.nodes import free_port, wait_for


def _graphmem(*args: str) -> list[str]:
    return [sys.executable, "-m", "graphmem", *args]


def test_graphmem_hub_serves_jetstream_on_loopback_until_terminated(
    hub: Hub, tmp_path: Path
) -> None:
    port = free_port()
    include = tmp_path / "extra.conf"
    include.write_text("max_payload: 2MB\n")
    proc = subprocess.Popen(
        _graphmem(
            "hub",
            "--listen",
            f"127.0.0.1:{port}",
            "--store",
            str(tmp_path / "store"),
            "--include",
            str(include),
        ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        async def jetstream_answers() -> int:
            nc = await nats.connect(
                f"nats://127.0.0.1:{port}", connect_timeout=1, allow_reconnect=False
            )
            try:
                info = await nc.jetstream().account_info()
                return int(nc.max_payload) if info is not None else 0
            finally:
                await nc.close()

        def up() -> bool:
            try:
                return asyncio.run(jetstream_answers()) == 2 * 1024 * 1024
            except Exception:
                return False

        wait_for(up, what="graphmem hub to answer JetStream requests")
        assert (tmp_path / "store" / "jetstream").is_dir()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert f"nats://127.0.0.1:{port}" in err.decode()


def test_graphmem_hub_without_a_nats_server_says_what_to_install(tmp_path: Path) -> None:
    done = subprocess.run(
        _graphmem("hub", "--store", str(tmp_path / "store")),
        env={**os.environ, "GRAPHMEM_NATS_SERVER": str(tmp_path / "missing")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "GRAPHMEM_NATS_SERVER" in done.stderr and "Traceback" not in done.stderr


def test_graphmem_hub_refuses_a_listen_address_that_is_not_host_port(tmp_path: Path) -> None:
    done = subprocess.run(
        _graphmem("hub", "--listen", "nowhere", "--store", str(tmp_path / "s")),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "HOST:PORT" in done.stderr
