"""Stopping: a stop asked from another thread, and by when it should be done.

The graph writer's checkpoints are an optimisation (the log is the truth), but saving one is in
proportion to the graph: 39 s for 987 MB at 1,000,000 entities. A stop that waited for it
timed out, and the log was then closed under the still-saving writer. So whoever stops the
process asks first (`ask`), with a budget; the writer's checkpointer skips a save that would
not fit in what is left, and abandons one in progress (its transaction aborted) once the
budget is spent. Whoever stops then waits for the writer, bounded by `writer_limit`.
"""

from __future__ import annotations

import threading
import time


class Stopping:
    """Shared by the process that stops and the writer's checkpointer (thread-safe: one float
    written once, and an Event)."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        # Set once the graph writer has finished its on_stop (or failed); pykka's own
        # `actor_stopped` is set BEFORE on_stop runs, so it cannot tell that the writer is done
        # with the log. Cleared by a writer as it starts (a restart by the supervisor).
        self.writer_stopped = threading.Event()
        self._deadline = float("inf")
        # How long the last checkpoint save took: what one more costs (the stop's wait for
        # a save that cannot be abandoned midway is derived from it).
        self.last_save_seconds = 0.0
        self.save_measured = False  # False: last_save_seconds is a guess (Checkpointer)

    def ask(self, budget: float) -> None:
        """Ask for a stop within `budget` seconds (the first ask sets the deadline)."""
        if not self.asked.is_set():
            self._deadline = time.monotonic() + budget
            self.asked.set()

    def remaining(self) -> float:
        """Seconds left before the deadline (infinite before a stop is asked, 0 once past)."""
        return max(0.0, self._deadline - time.monotonic())

    def passed(self) -> bool:
        return self.asked.is_set() and self.remaining() <= 0.0

    def fits(self, seconds: float) -> bool:
        """Whether work expected to take `seconds` ends before the deadline (always, before a
        stop is asked)."""
        return not self.asked.is_set() or seconds < self.remaining()

    def writer_limit(self, grace: float) -> float:
        """How long to wait for the writer once a stop is asked: what is left of the budget,
        plus one whole save (a step of it, the write transaction's puts and commit, cannot be
        abandoned midway), plus `grace`."""
        return self.remaining() + self.last_save_seconds + grace
