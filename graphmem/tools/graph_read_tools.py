"""The graph family's reading tools: graph_query, graph_entities, graph_stats and
graph_contradictions (contract §8.1, 8.5, 8.6, 8.14); each takes `as_of`."""

from __future__ import annotations

from graphmem.tools.base import ToolSpec

__all__ = ["GRAPH_READ_TOOLS"]

GRAPH_READ_TOOLS: tuple[ToolSpec, ...] = ()
