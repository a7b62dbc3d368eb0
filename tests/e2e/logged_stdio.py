"""A real stdio server spawned for a test that follows its log while it runs: messages sent
in batches, waits on log events bounded, then stdin closed and everything it wrote read."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from mcp import StdioServerParameters

WAIT = 120.0  # the bound on each wait for a log line, and on the server's exit


class ServerLog:
    """The server's stderr read line by line on a thread, so that a wait can be bounded."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.entries: list[dict[str, Any]] = []
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _note(self, line: bytes) -> dict[str, Any] | None:
        try:
            entry = json.loads(line)
        except ValueError:
            return None
        if not isinstance(entry, dict):
            return None
        self.entries.append(entry)
        return entry

    def wait_for(self, event: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(f"the server exited before logging {event}")
            entry = self._note(line)
            if entry is not None and entry.get("event") == event:
                return entry
        raise AssertionError(f"no {event} within {WAIT} s; logged: {self.events()}")

    def drained(self) -> list[dict[str, Any]]:
        """Every entry the server logged (its stderr read to its end: it has exited)."""
        while (line := self._lines.get(timeout=WAIT)) is not None:
            self._note(line)
        return self.entries

    def events(self) -> list[str]:
        return [str(entry.get("event")) for entry in self.entries]


@dataclass
class LoggedServer:
    process: subprocess.Popen[bytes]
    log: ServerLog

    def send(self, messages: list[dict[str, Any]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.process.stdin.flush()

    def finish(self) -> list[bytes]:
        """Close stdin; every line the server wrote, once it exited cleanly."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        out = self.process.stdout.read().splitlines()
        assert self.process.wait(timeout=WAIT) == 0
        return out


@contextmanager
def logged_server(params: StdioServerParameters) -> Iterator[LoggedServer]:
    with subprocess.Popen(
        [sys.executable, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
    ) as process:
        assert process.stderr is not None
        log = ServerLog(process.stderr)
        try:
            yield LoggedServer(process, log)
        finally:
            if process.poll() is None:
                process.kill()
            log.reader.join(timeout=WAIT)  # the pipe's end: closed by the `with` after it
