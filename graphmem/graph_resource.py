"""The one MCP resource graphmem serves, the whole graph as JSON: its listing, in one place for
the SDK's handler (graphmem.server) and the stdio front (graphmem.wire.front)."""

from __future__ import annotations

__all__ = ["GRAPH_RESOURCE", "GRAPH_URI"]

GRAPH_URI = "memory://knowledge-graph"

# The Resource's wire fields, in the order the SDK writes them at every handshake-era version.
GRAPH_RESOURCE = {
    "description": "The full knowledge graph with all entities and relations",
    "mimeType": "application/json",
    "name": "knowledge-graph",
    "title": "Knowledge Graph",
    "uri": GRAPH_URI,
}
