"""MCP tool families: each module defines its tools (schemas) and how to run them."""
