"""The server's side of the sender process (graphmem.replication.sender): start it, wake it,
watch it, restart it, stop it.

The sender is started when there is something to send: at once when the log holds events of
this node, else at its first local commit (a fresh node catching up from the hub has none, and
a process started beside the catch-up took CPU from it). It is stopped with the replicator,
and exits by itself when this process dies (its stdin reaches EOF): it never outlives the
server. When it exits while
the server runs (a crash, a kill), the exit is reported in the replication state (`graphmem
replication status`, `stats`, `doctor`) and it is started again after a backoff (0.5 s,
doubling to 30 s; reset once it has run a minute). Nothing is lost meanwhile: the log is the
outbox, and the next sender asks the hub where it stands and sends the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import structlog

from graphmem.replication.wake_flag import WakeFlag

__all__ = ["SenderProcess"]

log = structlog.get_logger(__name__)

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
STEADY = 60.0  # a sender that ran this long restarts at the first backoff again
EXIT_WAIT = 10.0  # for a sender whose stdout ended to exit (then it is killed)


class SenderProcess:
    """One sender process at a time. `config` is its encoded configuration (sender.
    encode_config); `on_report(line, None)` gets each state line it writes and
    `on_report(None, what)` its unexpected exits; `on_started(pid, restarts)` each start."""

    def __init__(
        self,
        config: str,
        on_report: Callable[[dict[str, Any] | None, str | None], None],
        on_started: Callable[[int, int], None],
    ) -> None:
        self._config = config
        self._on_report = on_report
        self._on_started = on_started
        # One wake pipe for every sender this server starts: bytes written while none runs
        # wait in it (or are dropped once it is full: the next sender reads the log anyway).
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        # Set while the sender is idle: only then a commit writes its byte (see WakeFlag).
        self._idle = WakeFlag.create()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._needed = threading.Event()  # something to send: start the sender
        self._noted = False  # wake has set _needed (a plain flag: checked on every commit)
        self._lock = threading.Lock()  # start and stop of the child
        self._watcher: threading.Thread | None = None
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    def start(self) -> None:
        """Watch for the need of a sender (see need); none runs before."""
        self._watcher = threading.Thread(
            target=self._watch, name="replication-sender-watch", daemon=True
        )
        self._watcher.start()

    def need(self) -> None:
        """There are events of this node to send: start the sender (on the watcher's thread)."""
        if not self._needed.is_set():
            self._needed.set()

    def wake(self) -> None:
        """A local commit (on the writer's thread): one byte, never blocking. A full pipe
        means the sender is busy or down, and reads the log before it waits again."""
        if not self._noted:  # the first local commit: a sender is needed from now on
            self._noted = True
            self._needed.set()
        # The flag first: in a burst the sender is busy, and this test is all that a commit
        # costs the writer (two Event checks before it were as much again).
        idle = self._idle
        if idle is not None and not idle.take():
            return  # busy, or woken already (it reads the log before it waits), or closed
        if self._stopping.is_set():  # its descriptor may be closed, its number reused
            return
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"\0")

    def stop(self, timeout: float) -> None:
        """Close the sender's stdin (it exits); kill it if it has not within `timeout`."""
        self._stopping.set()
        self._needed.set()  # the watcher, if still waiting for a need, returns
        with self._lock:
            proc = self._proc
        if proc is not None:
            _close(proc.stdin)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout)
        if self._watcher is not None:
            self._watcher.join(timeout)
        if proc is not None:  # the watcher closes them too, unless it stopped before reading
            _close(proc.stdin)
            _close(proc.stdout)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._idle is not None:
            self._idle.close()

    # --- the watcher thread --------------------------------------------------------------

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "graphmem.replication.sender",
                    str(self._wake_r),
                    *([str(self._idle.fd)] if self._idle is not None else []),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(self._wake_r, *([self._idle.fd] if self._idle is not None else [])),
            )
            pid = self._proc.pid
            assert self._proc.stdin is not None
            try:  # a line in an empty pipe: never blocks
                self._proc.stdin.write(self._config.encode() + b"\n")
                self._proc.stdin.flush()
            except OSError:  # it died at once: the watcher reports and restarts it
                pass
        self._on_started(pid, self.restarts)
        log.info("replication_sender_started", pid=pid, restarts=self.restarts)

    def _spawn_until_started(self, backoff: float) -> bool:
        """Start a sender, retrying while the system refuses; False once stopping."""
        while True:
            try:
                self._spawn()
                return not self._stopping.is_set()  # if set, stop closes its pipes
            except OSError as error:  # no fork (memory, pids): try again later
                log.warning("replication_sender_not_started", reason=str(error))
                self._on_report(None, f"the sender process could not be started: {error}")
                if self._stopping.wait(backoff):
                    return False
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _watch(self) -> None:
        self._needed.wait()  # set by need, wake or stop
        if self._stopping.is_set() or not self._spawn_until_started(FIRST_BACKOFF):
            return
        backoff = FIRST_BACKOFF
        while True:
            proc = self._proc
            if proc is None:
                return
            started = time.monotonic()
            assert proc.stdout is not None
            with contextlib.suppress(ValueError, OSError):  # closed by stop meanwhile
                for line in proc.stdout:  # ends when the sender exits (or closes stdout)
                    with contextlib.suppress(ValueError):
                        report = json.loads(line)
                        if isinstance(report, dict):
                            self._on_report(report, None)
            try:
                code = proc.wait(EXIT_WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait(EXIT_WAIT)
            _close(proc.stdin)
            _close(proc.stdout)
            if self._stopping.is_set():
                return
            if time.monotonic() - started > STEADY:
                backoff = FIRST_BACKOFF
            what = (
                f"the sender process (pid {proc.pid}) exited with code {code}: this node's "
                f"events are not sent until it is started again, in {backoff:g} s (they "
                "wait in the log; if this repeats, its error is in the server's log)"
            )
            log.warning("replication_sender_exited", pid=proc.pid, code=code, retry_in=backoff)
            self._on_report(None, what)
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, MAX_BACKOFF)
            self.restarts += 1
            if not self._spawn_until_started(backoff):
                return


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()
