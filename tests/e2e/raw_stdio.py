"""A raw JSON-RPC client over a graphmem stdio process: bytes in, lines out, for what a
well-behaved SDK client cannot send (invalid UTF-8, lone surrogates) or should not hide."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.e2e.support import server_params

READ_TIMEOUT = 30.0


def _event(line: bytes) -> object:
    try:
        entry = json.loads(line)
    except ValueError:  # not a log line: a warning or traceback printed by Python itself
        return None
    return entry.get("event") if isinstance(entry, dict) else None


class RawServer:
    """`env` adds settings; `timeout` bounds each read and the wait for the process to end."""

    def __init__(
        self,
        data_dir: Path,
        log_level: str = "WARNING",
        *,
        timeout: float = READ_TIMEOUT,
        hold_stdout: bool = False,
        **env: str,
    ) -> None:
        params = server_params(data_dir, GRAPHMEM_LOG_LEVEL=log_level, **env)
        self.timeout = timeout
        self.process = subprocess.Popen(
            [sys.executable, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=params.env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout_lines: list[bytes] = []
        self.stderr: list[bytes] = []
        self._stderr_changed = threading.Condition()
        self._stderr_closed = False
        # With hold_stdout, nothing is read from the server until read_stdout(): its answers
        # wait in the pipe, as with a client that is slow to read.
        self._reading = threading.Event()
        if not hold_stdout:
            self._reading.set()
        self._threads = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        self._next_id = 0

    def _pump(self) -> None:
        assert self.process.stdout is not None
        self._reading.wait(timeout=self.timeout * 4)
        for line in self.process.stdout:
            self.stdout_lines.append(line)
            self.lines.put(line)

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._stderr_changed:
                self.stderr.append(line)
                self._stderr_changed.notify_all()
        with self._stderr_changed:
            self._stderr_closed = True
            self._stderr_changed.notify_all()

    def read_stdout(self) -> None:
        """Start reading what the server writes (see hold_stdout)."""
        self._reading.set()

    def logged(self, event: str) -> bool:
        return any(_event(line) == event for line in list(self.stderr))

    def wait_logged_or_ended(self, event: str) -> bool:
        """Wait until the server logs `event` (True) or closes stderr, at its end (False)."""
        with self._stderr_changed:
            self._stderr_changed.wait_for(
                lambda: self.logged(event) or self._stderr_closed, timeout=self.timeout
            )
            return self.logged(event)

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_bytes(json.dumps(message).encode())
        return self._next_id

    def notify(self, method: str) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", "method": method}).encode())

    def read_line(self) -> bytes:
        return self.lines.get(timeout=self.timeout)

    def response(self, request_id: int) -> dict[str, Any]:
        """Read lines until the response to `request_id`; every line must be JSON-RPC."""
        while True:
            message = json.loads(self.read_line())
            assert message.get("jsonrpc") == "2.0", message
            if message.get("id") == request_id and "method" not in message:
                result: dict[str, Any] = message
                return result

    def initialize(self) -> dict[str, Any]:
        request_id = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        answer = self.response(request_id)
        self.notify("notifications/initialized")
        return answer

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.response(
            self.request("tools/call", {"name": name, "arguments": arguments})
        )
        return result

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def close(self) -> int:
        self.read_stdout()
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=self.timeout)
            raise
        for thread in self._threads:  # every byte the process wrote has been read
            thread.join(timeout=self.timeout)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return code


def answers_from_files(data_dir: Path, requests: bytes, work_dir: Path) -> dict[Any, Any]:
    """Run `graphmem serve` with stdin and stdout regular files (not pipes): `requests` in,
    the answers out, by id. Asserts the server exits 0 once stdin runs out."""
    stdin_file, stdout_file = work_dir / "requests.jsonl", work_dir / "responses.jsonl"
    stdin_file.write_bytes(requests)
    params = server_params(data_dir)
    with stdin_file.open("rb") as stdin, stdout_file.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, *params.args],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            env=params.env,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0
    lines = stdout_file.read_bytes().splitlines()
    return {m["id"]: m for m in map(json.loads, lines) if "id" in m}
