"""SearchHandover: a search index built before the server loaded, on its way to the writer.

A stdio server's early reads (graphmem.early_reads) restore the graph and build a search
index to answer while the server loads; the writer restores the graph too. Building and
warming a second index (about half a second of the interpreter at 50,000 entities) would only
compete with the early reads for the same two cores, then slow the server's first searches.
So while an index is on its way (`awaited`), the writer does not warm its own; `AdoptSearch`
brings it (or None), and the writer adopts it when its graph is at the index's position.
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.graph_handover import GraphLender
from projections.search import SearchProjection

__all__ = ["AdoptSearch", "SearchHandover"]


class SearchHandover:
    """Shared by the app and the writer (any restart of it): whether an index is awaited,
    and who lends the graph that index was built from (actors.graph_handover), to the
    writer's first start only: a restarted one restores its own."""

    def __init__(self, *, awaited: bool = False, lend_graph: GraphLender | None = None) -> None:
        self.awaited = awaited
        self._lend_graph = lend_graph

    def graph_lender(self) -> GraphLender | None:
        """Who lends the early graph, once (None after the first call)."""
        lender, self._lend_graph = self._lend_graph, None
        return lender


@dataclass(frozen=True)
class AdoptSearch:
    """Take `index` (None: none was built), built from the graph at log `position`, as the
    search index if the read models are at that position; either way, stop waiting."""

    position: int
    index: SearchProjection | None
