"""The graph family's writing tools: graph_relate, graph_boost, graph_weaken, graph_delete,
graph_audit and graph_export (contract §8.2-8.4, 8.15, 8.17, 8.18)."""

from __future__ import annotations

from graphmem.tools.base import ToolSpec

__all__ = ["GRAPH_WRITE_TOOLS"]

GRAPH_WRITE_TOOLS: tuple[ToolSpec, ...] = ()
