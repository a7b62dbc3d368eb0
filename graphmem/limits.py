"""InputLimits: the bounds on one tool call's input (kept free of the MCP SDK, so the
configuration can be read without importing it)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InputLimits"]


@dataclass(frozen=True)
class InputLimits:
    """Bounds on one call's input, so one bad call cannot exhaust memory or the log."""

    max_items: int = 10_000  # entities, relations, names ... in one call
    max_name_chars: int = 1_000  # names, types, relation types, queries
    max_content_chars: int = 100_000  # one observation
    max_query_chars: int = 2_048  # search_nodes (the official main branch's limit)
