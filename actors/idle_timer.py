"""An actor's idle timer: one daemon timer thread at most, which tells the actor once it may
have been idle long enough; the actor asks `left` and re-arms if something happened since.

Touching it on every message costs a clock read; a timer thread is started only when none is
pending, so at most one per idle period.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import pykka

__all__ = ["IdleTimer"]


class IdleTimer:
    """Calls `tell` (which sends the actor its check) once `seconds` may have passed since the
    last `touch`. Used from the actor's thread only, but for the timer's own callback."""

    def __init__(self, seconds: float, tell: Callable[[], None]) -> None:
        self.seconds = seconds
        self._tell = tell
        self._last = time.monotonic()
        self._timer: threading.Timer | None = None
        self._closed = False

    def touch(self) -> None:
        """Something happened: idle from now on, checked `seconds` from now at the latest."""
        self._last = time.monotonic()
        if self._timer is None:
            self.arm(self.seconds)

    def left(self) -> float:
        """Seconds of idleness still to wait (0 or less: idle long enough)."""
        return self._last + self.seconds - time.monotonic()

    def fired(self) -> None:
        """The check arrived: the timer is spent (call `arm` to wait again)."""
        self._timer = None

    def arm(self, seconds: float) -> None:
        if self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
        timer = threading.Timer(max(seconds, 0.0), self._fire)
        timer.daemon = True
        timer.name = "idle-timer"
        self._timer = timer
        timer.start()

    def _fire(self) -> None:
        with contextlib.suppress(pykka.ActorDeadError):  # stopped meanwhile: nothing to check
            self._tell()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
