"""The graph family's tools, as one list (the catalog serves them under the `graph` profile)."""

from __future__ import annotations

from graphmem.tools.base import ToolSpec
from graphmem.tools.graph_insight_tools import GRAPH_INSIGHT_TOOLS
from graphmem.tools.graph_intake_tools import GRAPH_INTAKE_TOOLS
from graphmem.tools.graph_maintenance_tools import GRAPH_MAINTENANCE_TOOLS
from graphmem.tools.graph_merge_tools import GRAPH_MERGE_TOOLS
from graphmem.tools.graph_read_tools import GRAPH_READ_TOOLS
from graphmem.tools.graph_search_tools import GRAPH_SEARCH_TOOLS
from graphmem.tools.graph_suggest_tools import GRAPH_SUGGEST_TOOLS
from graphmem.tools.graph_write_tools import GRAPH_WRITE_TOOLS

__all__ = ["GRAPH_TOOLS"]

GRAPH_TOOLS: tuple[ToolSpec, ...] = (
    *GRAPH_READ_TOOLS,
    *GRAPH_WRITE_TOOLS,
    *GRAPH_MAINTENANCE_TOOLS,
    *GRAPH_MERGE_TOOLS,
    *GRAPH_INTAKE_TOOLS,
    *GRAPH_SEARCH_TOOLS,
    *GRAPH_INSIGHT_TOOLS,
    *GRAPH_SUGGEST_TOOLS,
)
