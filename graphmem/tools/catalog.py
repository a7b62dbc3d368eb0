"""The tool families and which tools a profile exposes."""

from __future__ import annotations

from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.memory_extensions import MEMORY_EXTENSION_TOOLS

# The static tools of seed 000 (the `mesh` family).
MESH_TOOL_NAMES = (
    "add_nodes",
    "update_nodes",
    "delete_nodes",
    "add_edges",
    "update_edges",
    "delete_edges",
    "add_metadata",
    "delete_metadata",
    "read_graph",
    "search_nodes",
    "open_nodes",
)

# Every static tool name of every family: a schema type whose add_/update_/delete_ tool would
# take one of these names is refused, whatever the profile, so enabling a family later never
# makes two tools share a name.
STATIC_TOOL_NAMES = frozenset(
    {spec.tool.name for spec in (*MEMORY_TOOLS, *MEMORY_EXTENSION_TOOLS)} | set(MESH_TOOL_NAMES)
)
