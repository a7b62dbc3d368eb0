"""A real `graphmem serve --http` process on a free loopback port, started and stopped for tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
POLL_INTERVAL = 0.05
TAIL_CHARS = 4000


@dataclass(frozen=True)
class HttpService:
    """One running service: where to reach it, where it keeps its data, where it logs."""

    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    log_path: Path
    host: str = HOST

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    def log_tail(self) -> str:
        text = self.log_path.read_text(errors="replace")
        return f"--- last of {self.log_path} ---\n{text[-TAIL_CHARS:]}"


def free_port(host: str = HOST) -> int:
    # Another process could take the port before the service binds it; on loopback, in a
    # test run, that window is small enough to accept.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _wait_until_accepting(service: HttpService) -> None:
    # uvicorn binds only after the app's lifespan has started, so an accepted connection
    # means the MCP session manager is ready.
    deadline = time.monotonic() + START_TIMEOUT
    pause = threading.Event()
    while not _accepts_connections(service.host, service.port):
        if service.process.poll() is not None:
            pytest.fail(
                f"graphmem serve --http exited with {service.process.returncode} before "
                f"accepting connections\n{service.log_tail()}"
            )
        if time.monotonic() > deadline:
            pytest.fail(
                f"graphmem serve --http not accepting after {START_TIMEOUT:g} s\n"
                f"{service.log_tail()}"
            )
        pause.wait(POLL_INTERVAL)


def _stop(service: HttpService) -> None:
    """SIGTERM, then a bounded wait; a service that needs SIGKILL fails the test."""
    process = service.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        returncode = process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        pytest.fail(
            f"graphmem serve --http still running {STOP_TIMEOUT:g} s after SIGTERM; killed\n"
            f"{service.log_tail()}"
        )
    assert returncode == 0, f"exit status {returncode} after SIGTERM\n{service.log_tail()}"
    assert "graphmem_stopped" in service.log_path.read_text(errors="replace"), (
        f"the service exited without its orderly shutdown\n{service.log_tail()}"
    )


@contextmanager
def http_service(
    data_dir: Path,
    log_path: Path,
    *,
    module: str = "graphmem",
    host: str = HOST,
    port: int | None = None,
    **env_extra: str,
) -> Iterator[HttpService]:
    """Run `python -m graphmem serve --http` on `data_dir` until the block ends (`module`: a
    stand-in for graphmem, such as tests.e2e.upgraded_graphmem; `host`: a loopback address,
    e.g. 127.0.0.2 to stand for one beyond loopback; `port`: one chosen with `free_port`, when
    another service must know it first; `env_extra`: more settings)."""
    port = port or free_port(host)
    user_schemas = data_dir / "user-schemas"  # never a developer's ~/.config/graphmem
    user_schemas.mkdir(parents=True, exist_ok=True)
    env = {
        "GRAPHMEM_DIR": str(data_dir),
        "GRAPHMEM_SCHEMAS_DIR": str(user_schemas),
        "GRAPHMEM_LOG_LEVEL": "INFO",
        "PATH": os.environ.get("PATH", ""),
        **env_extra,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "serve", "--http", f"{host}:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
        )
    service = HttpService(process, port, data_dir, log_path, host)
    try:
        _wait_until_accepting(service)
    except BaseException:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        raise
    try:
        yield service
    finally:
        _stop(service)


@asynccontextmanager
async def bearer_client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's client on `url`, sending `Authorization: Bearer <token>` with every request."""
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client
