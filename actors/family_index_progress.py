"""How far the graph writer has built the graph family's FamilyIndex, readable from any thread.

A served process builds it in the background once it has answered its first request (the
writer takes a bounded step per message, so requests interleave): at 1,000,000 entities a
build takes minutes, and a graph read that built it at once timed out. A family read that
arrives meanwhile is refused with FamilyIndexBuildingError; the tool edge waits on `built`
(bounded) and tries once more, else answers that the index is being built.
"""

from __future__ import annotations

import threading
import time


class FamilyIndexProgress:
    """Written by the graph writer, read by anyone (an Event, and ints written whole)."""

    def __init__(self) -> None:
        self.built = threading.Event()
        self.requested = False  # a build was asked for (GraphGateway.start_family_index)
        self.done = 0
        self.total = 0
        self.started: float | None = None  # time.monotonic() of the current build's start

    def building(self, done: int, total: int) -> None:
        if self.started is None:
            self.started = time.monotonic()
        self.done, self.total = done, total

    def finished(self) -> None:
        self.done = self.total
        self.built.set()

    def lost(self) -> None:
        """The read models were replaced (a rebuild, a failed transaction's reset): the index
        must be built again on the new graph."""
        self.built.clear()
        self.started = None
        self.done = 0

    def wait_built(self, seconds: float) -> bool:
        return self.built.wait(max(0.0, seconds))
