"""The service side of one Cypher worker process: spawn it in an empty directory, send it
frames, wait for each answer with a deadline, and kill it when the deadline passes or it
dies. The engine itself is never imported here (see graphmem.cypher.worker).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

import msgspec
import structlog

__all__ = ["EngineGoneError", "WorkerProcess"]

log = structlog.get_logger(__name__)

# Spawning imports the engine and pyarrow: seconds on a busy machine.
START_SECONDS = 60.0
STOP_SECONDS = 5.0


class EngineGoneError(RuntimeError):
    """The worker died or was killed while answering; it must be started again."""


class WorkerProcess:
    """One worker: `call(request, deadline)` answers or raises EngineGoneError."""

    def __init__(self, timeout_ms: int, *, wait: bool = True) -> None:
        # An empty directory of its own: a relative path in a query that slipped past the
        # gate finds nothing, and the directory goes with the worker.
        self._home = tempfile.mkdtemp(prefix="graphmem-cypher-")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "graphmem.cypher.worker", str(timeout_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=self._home,
            close_fds=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin
        self._stdout = self._process.stdout
        self.pid = self._process.pid
        self._ready = False
        if wait:
            self.ready()

    def ready(self) -> None:
        """Wait for the worker's ready frame (it has loaded the engine)."""
        if not self._ready:
            self._read(START_SECONDS)
            self._ready = True

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def call(self, request: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send `request` and wait at most `seconds` for the answer; on expiry the worker is
        killed. EngineGoneError when it is dead (crashed, killed, or out of memory)."""
        self.send(request)
        return self.receive(seconds)

    def send(self, request: dict[str, Any]) -> None:
        """Send `request` without waiting for its answer (`receive` it later): the worker
        works on it meanwhile."""
        body = msgspec.msgpack.encode(request)
        try:
            self._stdin.write(struct.pack(">I", len(body)) + body)
            self._stdin.flush()
        except (BrokenPipeError, OSError):
            self.stop()
            raise EngineGoneError(self._death("before the request")) from None

    def receive(self, seconds: float) -> dict[str, Any]:
        """The answer to the oldest request not yet received, within `seconds`."""
        self.ready()
        answer: dict[str, Any] = self._read(seconds)
        return answer

    def _read(self, seconds: float) -> Any:
        deadline = time.monotonic() + seconds
        head = self._exactly(4, deadline)
        (size,) = struct.unpack(">I", head)
        return msgspec.msgpack.decode(self._exactly(size, deadline))

    def _exactly(self, count: int, deadline: float) -> bytes:
        fd = self._stdout.fileno()
        chunks: list[bytes] = []
        left = count
        while left:
            remaining = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, remaining))[0] if remaining > 0 else []
            if not ready:
                self.kill()
                raise EngineGoneError("the worker did not answer in time and was stopped")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                self.stop()
                raise EngineGoneError(self._death("while answering"))
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _death(self, when: str) -> str:
        code = self._process.poll()
        if code is not None and code < 0:
            return f"the worker died {when} (signal {-code})"
        return f"the worker exited {when} (code {code})"

    def kill(self) -> None:
        self.interrupt()
        self.stop()

    def interrupt(self) -> None:
        """SIGKILL only, safe from another thread: the thread waiting on this worker sees
        the pipe close and cleans up itself."""
        if self.alive:
            self._process.kill()

    def stop(self) -> None:
        """Close the pipes (the worker exits on EOF), reap it, remove its directory."""
        for stream in (self._stdin, self._stdout):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self._process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(STOP_SECONDS)
        shutil.rmtree(self._home, ignore_errors=True)
