"""graph_decay and graph_prune (contract §8.9, §8.10): each call one command (a prune preview
is a read at one point), with the decay tunables of the family's config."""

from __future__ import annotations

from typing import Any, Literal

from actors.graph_maintenance import (
    GraphPrune,
    GraphPruneResult,
    PrunedEdge,
    decay_command,
    prune_preview,
)
from graphmem.tools import graph_maintenance_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import GraphArgs, check_range, parse_graph_args, time_ms
from graphmem.tools.graph_write_values import family_of
from projections.graph import GraphProjection
from projections.graph_time import format_ms

__all__ = ["GRAPH_MAINTENANCE_TOOLS"]

MAX_AGE_DAYS = 36_500.0


class DecayArgs(GraphArgs, frozen=True):
    dry_run: bool = False
    at: str | None = None


class PruneArgs(GraphArgs, frozen=True):
    mode: Literal["preview", "execute"] = "preview"
    node_threshold: float | None = None
    edge_threshold: float | None = None
    include_orphans: bool = True
    max_age_days: float | None = None


async def graph_decay(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_decay"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, DecayArgs)
    at = time_ms(tool, args.at, "at")
    if at is not None:
        if not args.dry_run:
            raise ToolInputError(
                invalid_arguments(tool, "`at` previews a future run: pass dry_run: true with it")
            )
        now = family.now_ms()
        if at < now:
            raise ToolInputError(
                invalid_arguments(
                    tool, f"at {args.at!r} is before now ({format_ms(now)}); give a later time"
                )
            )
    command = decay_command(family.tunables.decay, dry_run=args.dry_run, at=at)
    result = await ctx.graph.execute(command, ctx.cause)
    report, ids = result.report, result.ids
    value = {
        "nodes_decayed": report.nodes_decayed,
        "edges_decayed": report.edges_decayed,
        "nodes_flagged_for_pruning": report.nodes_flagged,
        "edges_below_threshold": report.edges_below,
        "dry_run": args.dry_run,
        "at": format_ms(report.at),
        "details": [
            {
                "id": ids[d.name],
                "type": d.entity_type,
                "name": d.name,
                "old_confidence": d.old,
                "new_confidence": d.new,
            }
            for d in report.details
        ],
        "edge_details": [
            {
                "from": ids[d.key[0]],
                "to": ids[d.key[1]],
                "type": d.key[2],
                "old_weight": d.old,
                "new_weight": d.new,
            }
            for d in report.edge_details
        ],
    }
    return ok(value, value, mutated=not args.dry_run)


def _edge(edge: PrunedEdge) -> dict[str, Any]:
    return {"from": edge.from_id, "to": edge.to_id, "type": edge.relation_type}


def _preview_value(result: GraphPruneResult) -> dict[str, Any]:
    return {
        "mode": "preview",
        "nodes_to_prune": [
            {
                "id": n.id,
                "type": n.entity_type,
                "name": n.name,
                "confidence": n.confidence,
                "last_seen": format_ms(n.last_seen),
                "edge_count": n.edge_count,
                "reason": n.reason,
            }
            for n in result.nodes
        ],
        "edges_to_prune": [{**_edge(e), "weight": e.weight} for e in result.edges],
        "node_count": len(result.nodes),
        "edge_count": len(result.edges),
    }


def _executed_value(result: GraphPruneResult) -> dict[str, Any]:
    edges = [*result.edges, *result.extra_edges]
    return {
        "mode": "executed",
        "nodes_pruned": len(result.nodes),
        "edges_pruned": len(edges),
        "details": [
            *({"action": "deleted_edge", **_edge(e)} for e in edges),
            *({"action": "deleted_node", "id": n.id, "type": n.entity_type} for n in result.nodes),
        ],
    }


async def graph_prune(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_prune"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, PruneArgs)
    check_range(tool, args.node_threshold, "node_threshold", 0.0, 1.0)
    check_range(tool, args.edge_threshold, "edge_threshold", 0.0, 1.0)
    check_range(tool, args.max_age_days, "max_age_days", 0.0, MAX_AGE_DAYS)
    decay = family.tunables.decay
    command = GraphPrune(
        node_threshold=(
            decay.prune_node_threshold if args.node_threshold is None else args.node_threshold
        ),
        edge_threshold=(
            decay.prune_edge_threshold if args.edge_threshold is None else args.edge_threshold
        ),
        include_orphans=args.include_orphans,
        max_age_days=decay.prune_orphan_days if args.max_age_days is None else args.max_age_days,
    )
    if args.mode == "preview":
        now = family.now_ms()

        def preview(graph: GraphProjection) -> GraphPruneResult:
            return prune_preview(graph, command, now)

        value = _preview_value(await ctx.graph.query(preview))
        return ok(value, value)
    result = await ctx.graph.execute(command, ctx.cause)
    value = _executed_value(result)
    return ok(value, value, mutated=bool(result.nodes or result.edges or result.extra_edges))


GRAPH_MAINTENANCE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_DECAY, graph_decay),
    ToolSpec(s.GRAPH_PRUNE, graph_prune),
)
