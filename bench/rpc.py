"""A raw MCP client over stdio: newline-delimited JSON-RPC on a subprocess's pipes, nothing more.

No schema validation and no model parsing on the client side, so the figures are the server's
(plus pipe and one JSON decode): the Python SDK client spends seconds validating a large
`read_graph` result (reference contract B2). One thread drives one connection; calls are timed
from just before the request is written to just after the whole response line is read.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgspec

PROTOCOL_VERSION = "2025-06-18"
STDERR_TAIL = 4000  # bytes of a vanished server's stderr quoted in the error
GONE_WAIT = 10.0  # seconds to let a server that closed stdout exit
CLIENT_INFO = {"name": "graphmem-bench", "version": "1"}

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class _Envelope(msgspec.Struct):
    """A JSON-RPC message with its `result` left undecoded: a 1M-entity read_graph is ~0.7 GB."""

    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()
    error: dict[str, Any] | None = None


class _Flag(msgspec.Struct):
    isError: bool = False  # the wire name


class _Entities(msgspec.Struct):
    entities: list[msgspec.Raw] = []


class _Structured(msgspec.Struct):
    structuredContent: _Entities | None = None  # the wire name


_envelope = msgspec.json.Decoder(_Envelope).decode
_structured = msgspec.json.Decoder(_Structured).decode
_flag = msgspec.json.Decoder(_Flag).decode


class ServerGoneError(RuntimeError):
    """The server closed its stdout (crashed or exited) while a response was awaited."""


@dataclass(frozen=True)
class Reply:
    """One tool call's outcome: its wall time, the raw `result` (or the JSON-RPC `error`)."""

    seconds: float
    raw_result: msgspec.Raw
    error: dict[str, Any] | None
    size: int

    @property
    def failed(self) -> bool:
        return self.error is not None or not self.raw_result or _flag(self.raw_result).isError

    def result(self) -> dict[str, Any]:
        """The decoded result (costly for a large graph: decode only when needed)."""
        decoded: dict[str, Any] = _decode(self.raw_result) if self.raw_result else {}
        return decoded

    def entity_count(self) -> int | None:
        """How many entities the structured result holds, without building them."""
        if not self.raw_result:
            return None
        structured = _structured(self.raw_result).structuredContent
        return None if structured is None else len(structured.entities)

    def describe(self) -> str:
        if self.error is not None:
            return f"JSON-RPC error {self.error}"
        content = self.result().get("content") or [{}]
        return str(content[0].get("text", ""))[:300]


class RpcClient:
    """One server process and its stdio connection."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stderr_path: Path,
        cwd: Path | None = None,
    ) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("ab")
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(env),
            cwd=cwd,
            bufsize=1 << 20,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin: IO[bytes] = self.proc.stdin
        self._stdout: IO[bytes] = self.proc.stdout
        self._next_id = 0
        self.startup_seconds = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _send(self, message: dict[str, Any]) -> None:
        self._stdin.write(_encode(message) + b"\n")
        self._stdin.flush()

    def _request(self, method: str, params: dict[str, Any]) -> int:
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def _read_line(self) -> bytes:
        line = self._stdout.readline()
        if not line:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(GONE_WAIT)  # its last words reach the log before it exits
            raise ServerGoneError(
                f"server pid {self.pid} closed stdout (exit {self.proc.poll()}); the end of "
                f"its stderr ({self.stderr_path}):\n{self.stderr_tail()}"
            )
        return line

    def stderr_tail(self, size: int = STDERR_TAIL) -> str:
        """The last `size` bytes of the server's stderr: why it went away, when it did."""
        self._stderr.flush()
        try:
            with self.stderr_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - size))
                return log.read().decode(errors="replace")
        except OSError as error:
            return f"(unreadable: {error})"

    def _read_response(self) -> tuple[int, bytes]:
        """The next response line and its id; answers or skips what the server sends on its own."""
        while True:
            line = self._read_line()
            head = _envelope(line)
            if head.method is not None:
                if head.id is not None:  # a server-to-client request (ping, roots): refuse it
                    self._send(
                        {
                            "jsonrpc": "2.0",
                            "id": head.id,
                            "error": {"code": -32601, "message": "Method not found"},
                        }
                    )
                continue  # a notification
            return int(head.id or 0), line

    def initialize(self, version: str = PROTOCOL_VERSION) -> None:
        started = time.perf_counter()
        self._request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        _, line = self._read_response()
        answer = _envelope(line)
        if answer.error is not None:
            raise RuntimeError(f"initialize failed: {answer.error}")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.startup_seconds = time.perf_counter() - started

    def list_tools(self) -> list[str]:
        """The names of the tools the server lists (one `tools/list`, no paging)."""
        self._request("tools/list", {})
        _, line = self._read_response()
        answer = _envelope(line)
        if answer.error is not None:
            raise RuntimeError(f"tools/list failed: {answer.error}")
        tools = _decode(answer.result).get("tools", [])
        return [str(tool["name"]) for tool in tools]

    def ping(self) -> None:
        """One `ping`, awaited. On graphmem it also ends the early reads' answers: they stop at
        the first request that is not a read (graphmem.early_reads), so every call after it is
        the server's own, answered once the server has loaded."""
        self._request("ping", {})
        _, line = self._read_response()
        answer = _envelope(line)
        if answer.error is not None:
            raise RuntimeError(f"ping failed: {answer.error}")

    def call(self, tool: str, arguments: dict[str, Any]) -> Reply:
        """One tool call, awaited before returning."""
        started = time.perf_counter()
        self._request("tools/call", {"name": tool, "arguments": arguments})
        _, line = self._read_response()
        elapsed = time.perf_counter() - started
        return _reply(elapsed, line)

    def call_window(self, calls: Sequence[tuple[str, dict[str, Any]]], window: int) -> list[Reply]:
        """Run `calls` with up to `window` requests in flight on this one connection.

        Each reply's time runs from its own request to its own response."""
        sent: dict[int, float] = {}
        replies: list[Reply] = []
        pending = iter(calls)

        def send_next() -> None:
            step = next(pending, None)
            if step is not None:
                sent[self._request("tools/call", {"name": step[0], "arguments": step[1]})] = (
                    time.perf_counter()
                )

        for _ in range(window):
            send_next()
        while sent:
            request_id, line = self._read_response()
            replies.append(_reply(time.perf_counter() - sent.pop(request_id), line))
            send_next()
        return replies

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin (the stdio way to ask a server to exit), then wait; kill if it lingers."""
        with contextlib.suppress(OSError):  # the server may have gone already
            self._stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stdout.close()
        self._stderr.close()
        return code

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reply(seconds: float, line: bytes) -> Reply:
    answer = _envelope(line)
    return Reply(seconds, answer.result, answer.error, len(line))


def base_env(**extra: str) -> dict[str, str]:
    """A minimal environment for a server: PATH, HOME, locale, plus `extra`."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(extra)
    return env
