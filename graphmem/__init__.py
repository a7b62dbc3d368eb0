"""graphmem: an event-sourced knowledge-graph memory served over MCP."""
