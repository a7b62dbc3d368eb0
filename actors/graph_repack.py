"""Repacking the writer's graph: the fold's objects swapped for the restored layout.

A graph filled by live writes keeps what the fold made: a `FoldStamp` and a sequence int per
stamp, a key tuple, record and dict slot per relation, an edge tuple per endpoint. The same
graph restored from its snapshot holds far less (`RestoredEntityRecord`s whose stamps stay in
columns, packed occurrences, relations unkeyed until read): at 50,000 entities filled through
MCP writes, ~920 B an entity traced against ~660. Every restart makes that trade; a server
that runs for weeks never did.

So when the writer has saved a checkpoint, it hands the graph's snapshot bytes to a thread
(`start_repack`), which restores them and folds the log's events since, as a restart would,
then tells the writer `Repacked`. The writer (`ReadModels.repack_graph`) folds what was
appended meanwhile (a few events) and serves the fresh graph if the graph it was taken from is
still the one served; the old one's objects are then freed, and the heap's free pages handed
back. The restore runs off the writer's thread (~0.1 s of CPU at 50,000 entities, ~1.8 s at
1,000,000): writes go on meanwhile, sharing the interpreter as with any background work.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pykka
import structlog

from actors.catch_up import catch_up
from eventstore.log import EventLog
from projections.graph import GraphProjection
from projections.heap import return_freed_heap

log = structlog.get_logger(__name__)

__all__ = ["Repacked", "release_old_graph", "start_repack"]


@dataclass(frozen=True)
class Repacked:
    """`fresh` (None: the restore failed, logged) restored from a snapshot of `old` and folded
    from the log as far as the log went: serve it instead of `old` if that is still served."""

    old: GraphProjection
    fresh: GraphProjection | None


def start_repack(
    event_log: EventLog,
    old: GraphProjection,
    snapshot: bytes,
    tell: Callable[[Repacked], None],
) -> threading.Thread:
    """Restore `snapshot` (a checkpoint of `old`, just saved) and fold the log after it on a
    thread of its own, then `tell` the writer (`Repacked`). Reads only: the log's committed
    events, never the writer's models."""

    def repack() -> None:
        fresh: GraphProjection | None = None
        try:
            fresh = GraphProjection.from_snapshot(snapshot)
            # What was committed while it restored: the writer then folds only the rest.
            catch_up(event_log, fresh.apply_all, fresh.position)
        except Exception:  # only memory is at stake: the writer keeps serving `old`
            log.exception("graph_repack_failed")
            fresh = None
        with contextlib.suppress(pykka.ActorDeadError):  # the writer stopped meanwhile
            tell(Repacked(old, fresh))

    thread = threading.Thread(target=repack, name="graphmem-graph-repack", daemon=True)
    thread.start()
    return thread


def release_old_graph() -> None:
    """After a repack, once nothing refers to the old graph: collect what cycles it left and
    hand the heap's free pages back. The fold's records are untracked, so the cost is one
    collection of the young generations' survivors, not of the graph."""
    gc.collect(1)
    return_freed_heap()
