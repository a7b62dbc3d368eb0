"""Compacting writes over the image: a child process checkpoints the graph and writes its
image at the log's end, and the writer then serves from that image with an overlay of only
what it wrote since (projections.image_overlay).

Why a child: restoring the graph, folding the log on and encoding the image needs the whole
graph in the heap for a moment. In the writer's process that moment would stay (pymalloc keeps
arenas that survivors of the fold pin: what writes over the image exist to avoid); in a child
it ends with the child. The child opens the same LMDB environment (LMDB is made to be shared
by processes), reads only committed events, and writes a checkpoint (one write transaction,
serialised with the writer's by LMDB's writer lock) and the image file (a temporary file
renamed over the old: a reader of the old map keeps reading it). It never appends an event.

Run as `python -m actors.image_compaction PATH --map-size N [--node-id ID] [--every E]
[--kept K]`: exit
status 0 once both are written; anything else is a failure, which leaves the writer as it
was (it leaves the image and restores the graph: actors.graph_writer).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT, Checkpointer
from actors.graph_images import IMAGE_MAX_ENTITIES, write_graph_image_at
from actors.read_models import ReadModels
from eventstore.lmdb_log import LmdbEventLog

log = structlog.get_logger(__name__)

__all__ = ["CHILD_TIMEOUT", "Compacted", "Compaction", "compact"]

CHILD_TIMEOUT = 600.0
"""The longest a compaction child is waited for (at 300,000 entities it takes seconds);
past it, it is killed and the compaction counted as failed."""

_EXIT_OK, _EXIT_FAILED, _EXIT_TOO_LARGE = 0, 1, 3


@dataclass(frozen=True)
class Compacted:
    """A compaction child's end: whether it wrote the checkpoint and image, and how long it
    ran (seconds)."""

    ok: bool
    seconds: float
    reason: str = ""


def compact(path: str, map_size: int, node_id: str | None, every: int, kept: int) -> int:
    """The child's work: the graph restored, folded to the log's end, checkpointed and
    imaged there. Returns the exit status."""
    with LmdbEventLog.open(path, map_size=map_size, node_id=node_id) as event_log:
        checkpoints = Checkpointer(event_log, every, kept)
        # Derived indexes (search, schema view) are never read here: made lazily, never.
        models = ReadModels.serving(event_log, checkpoints, derive_lazily=True)
        models.restore()
        models.catch_up()
        if models.stale:
            return _EXIT_FAILED  # the writer's restore refolds the log, as a start does
        graph = models.graph
        count = graph.entity_count()
        if count > IMAGE_MAX_ENTITIES:
            return _EXIT_TOO_LARGE
        models.save(final=True)
        if checkpoints.saved_at != graph.position:
            return _EXIT_FAILED  # logged by the checkpointer
        return _EXIT_OK if write_graph_image_at(event_log, graph, count) else _EXIT_FAILED


class Compaction:
    """A compaction child running for a writer: `done` is called with its Compacted, from a
    thread of its own, once it has ended (or been killed past `timeout`)."""

    def __init__(
        self,
        event_log: LmdbEventLog,
        done: Callable[[Compacted], None],
        *,
        every: int = CHECKPOINT_EVERY,
        kept: int = CHECKPOINTS_KEPT,
        timeout: float = CHILD_TIMEOUT,
    ) -> None:
        self._started = time.perf_counter()
        command = [
            sys.executable,
            "-m",
            "actors.image_compaction",
            event_log.path,
            "--map-size",
            str(event_log.env.info()["map_size"]),
            "--node-id",
            event_log.node_id,
            "--every",
            str(every),
            "--kept",
            str(kept),
        ]
        # stdout is a stdio server's protocol: never the child's.
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        self._timeout = timeout
        self._done = done
        self.result: Compacted | None = None  # set once the child has ended
        self._waiter = threading.Thread(target=self._wait, name="image-compaction", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        try:
            status = self._process.wait(self._timeout)
            reason = "" if status == _EXIT_OK else f"exit status {status}"
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            status, reason = -1, "timed out"
        self.result = Compacted(status == _EXIT_OK, time.perf_counter() - self._started, reason)
        self._done(self.result)

    def wait(self) -> Compacted:
        """Wait for the child's end (bounded by its timeout) and say how it ended."""
        self._waiter.join(self._timeout + 5.0)
        return self.result or Compacted(False, time.perf_counter() - self._started, "timed out")

    def stop(self, timeout: float) -> None:
        """Wait for the child at most `timeout` seconds (a stop's), then kill it: what it
        had not written yet is left out (its checkpoint is one transaction, its image one
        rename), and the stop saves its own."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(max(0.0, timeout))
        if self._process.poll() is None:
            self._process.kill()
        self._waiter.join(timeout=5.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actors.image_compaction")
    parser.add_argument("path")
    parser.add_argument("--map-size", type=int, required=True)
    parser.add_argument("--node-id", default=None)
    parser.add_argument("--every", type=int, default=CHECKPOINT_EVERY)
    parser.add_argument("--kept", type=int, default=CHECKPOINTS_KEPT)
    arguments = parser.parse_args(argv)
    # Warnings and errors only, as JSON lines on stderr (the server's own stream).
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(30),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    try:
        return compact(
            arguments.path, arguments.map_size, arguments.node_id, arguments.every, arguments.kept
        )
    except Exception:
        log.exception("graph_image_compaction_failed")
        return _EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
