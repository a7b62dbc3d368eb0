"""The graph writing tools' shared pieces: the family's context, and edges as JSON (contract
§3.2, §5.2: ids for ends, ISO times, null for unset)."""

from __future__ import annotations

from typing import Any

from actors.graph_results import EdgeState, SupersededEdge
from graphmem.tools.base import ToolContext, ToolInputError, invalid_arguments
from graphmem.tools.graph_family import GraphFamily
from projections.graph_time import format_ms

__all__ = ["edge_key_value", "edge_value", "family_of", "superseded_value"]


def family_of(ctx: ToolContext, tool: str) -> GraphFamily:
    """The graph family's context; a server that does not serve the family has none."""
    if ctx.family is None:
        raise ToolInputError(
            invalid_arguments(tool, "the graph family is not served (GRAPHMEM_TOOLS=...,graph)")
        )
    return ctx.family


def edge_key_value(edge: EdgeState) -> dict[str, Any]:
    return {"from": edge.from_id, "to": edge.to_id, "type": edge.relation_type}


def edge_value(edge: EdgeState) -> dict[str, Any]:
    return {
        **edge_key_value(edge),
        "weight": edge.weight,
        "valid_at": format_ms(edge.valid_at),
        "invalid_at": format_ms(edge.invalid_at),
    }


def superseded_value(edge: SupersededEdge) -> dict[str, Any]:
    return {
        "from": edge.from_id,
        "to": edge.to_id,
        "type": edge.relation_type,
        "invalid_at": format_ms(edge.invalid_at),
    }
