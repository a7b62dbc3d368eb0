"""LentGraph: the graph the early reads restored, given to the writer instead of a second one.

A stdio server's early reads (graphmem.early_reads) restore the graph from the newest
checkpoint and the log after it, to answer while the server loads; the writer, starting a
moment later, would restore the same graph again from the same checkpoint. Holding both until
the early reads stop costs a second graph's memory at start-up, and the first one's freed
objects leave holes in the allocator's arenas that never empty (bench.server_memory: ~30 MB
more anon memory at 50,000 entities). So the writer asks for the early graph (`GraphLender`)
at its start-up restore, and takes it when it is at the log's end as the writer finds it:
restored, as the writer would restore it, from the newest checkpoint (which the early reads
checked against the stored ones) and folded on to that end, it is the graph the writer's own
restore and catch-up would make (the same log folds to the same graph). Otherwise (another
process appended meanwhile, an older checkpoint was restored) the writer restores its own.
The early reads stop reading the graph once it is lent (never one graph on two threads): the
requests after that wait for the server, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projections.graph import GraphProjection

__all__ = ["GraphLender", "LentGraph"]


@dataclass(frozen=True)
class LentGraph:
    """A graph restored from the checkpoint at `checkpoint` (a log position: the writer's
    last-saved mark) and folded on to its own position; `seconds`: what restoring it took
    (what the writer's restore would have), for the guess of a checkpoint save's cost."""

    graph: GraphProjection
    checkpoint: int
    seconds: float


# Given the log's last position now: the graph restored from the newest checkpoint and folded
# to that position, now the caller's alone (None: there is none to lend, it is at another
# position, or it was restored from an older checkpoint). Lends at most once.
GraphLender = Callable[[int], LentGraph | None]
