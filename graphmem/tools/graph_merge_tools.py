"""graph_merge and graph_unmerge (contract §8.13, §8.11): one atomic command each, recorded in
`<graph home>/logs/merge-audit.jsonl` as well as in the log.

The audit line is written like graph_audit's, before anything is recorded in the log, and a
line that cannot be written is an error that records nothing. Unlike graph_audit, a merge can
still be refused by its decision (an unknown source, an edge that is not there), and the line
must carry the decision's exact counts and ids. So the line is written by the writer between
deciding and appending (GraphGateway.execute's `before_append`): only for a decision that
stands, with what it decided, fsynced before the events are appended and the caller answered.
A dry run writes no line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from actors.errors import CommandRejectedError
from actors.graph_merge_commands import (
    EdgeToMove,
    GraphMerge,
    GraphMergeResult,
    GraphUnmerge,
    GraphUnmergeResult,
)
from graphmem.graph_home_files import MERGE_AUDIT_LOG, append_line
from graphmem.limits import InputLimits
from graphmem.tools import graph_merge_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_count,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import (
    GraphArgs,
    json_size,
    name_text,
    optional_text,
    parse_graph_args,
)
from graphmem.tools.graph_write_values import family_of
from projections.graph_time import format_ms

__all__ = ["GRAPH_MERGE_TOOLS", "AuditLine", "merge_audit_line", "unmerge_audit_line"]


class MergeArgs(GraphArgs, frozen=True):
    source_id: str
    target_id: str
    reason: str
    dry_run: bool = False


class _EdgeToMoveArgs(GraphArgs, frozen=True):
    other_entity_id: str
    relation_type: str
    direction: Literal["in", "out"]


class UnmergeArgs(GraphArgs, frozen=True):
    entity_id: str
    new_entity_name: str
    new_entity_type: str
    edges_to_move: list[_EdgeToMoveArgs]
    reason: str
    properties: dict[str, Any] | None = None


def _reason(tool: str, limits: InputLimits, reason: str) -> str:
    text = optional_text(tool, limits, reason, "reason")
    if text is None or not text.strip():
        raise ToolInputError(invalid_arguments(tool, "reason is empty; say why"))
    return text


# --- the audit lines --------------------------------------------------------------------------


def merge_audit_line(result: GraphMergeResult, reason: str) -> dict[str, Any]:
    return {
        "action": "merge",
        "timestamp": format_ms(result.at_ms),
        "source": {"id": result.source_id, "name": result.source_name},
        "target": {"id": result.target_id, "name": result.target_name},
        "counts": {
            "edges_added": result.edges_added,
            "edges_consolidated": result.edges_consolidated,
            "self_loops_dropped": result.self_loops_dropped,
            "properties_adopted": len(result.properties_adopted),
        },
        "reason": reason,
    }


def unmerge_audit_line(result: GraphUnmergeResult, reason: str) -> dict[str, Any]:
    return {
        "action": "unmerge",
        "timestamp": format_ms(result.at_ms),
        "original": {"id": result.original_id, "name": result.original_name},
        "new_entity": {"id": result.new_id, "name": result.new_name, "type": result.new_type},
        "moved": [
            {"from": moved.from_id, "to": moved.to_id, "type": moved.relation_type}
            for moved in result.moved
        ],
        "reason": reason,
    }


class AuditLine:
    """The merge audit line of one call, written by the writer before the call's events are
    appended (see the module's docstring); written once even if the log transaction is
    retried."""

    def __init__(self, tool: str, path: Path, line: Callable[[Any], dict[str, Any]]) -> None:
        self._tool, self._path, self._line = tool, path, line
        self.written = False

    def __call__(self, result: Any) -> None:
        if self.written:
            return
        encoded = msgspec.json.encode(self._line(result)) + b"\n"
        try:
            append_line(self._path, encoded)
        except OSError as problem:
            raise CommandRejectedError(
                f"{self._tool} failed: cannot append to {self._path} ({problem.strerror}); "
                "nothing was written. Make the graph home's logs folder writable and call again."
            ) from None
        self.written = True


# --- the tools --------------------------------------------------------------------------------


async def graph_merge(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_merge"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, MergeArgs)
    reason = _reason(tool, ctx.limits, args.reason)
    command = GraphMerge(
        source_id=name_text(tool, ctx.limits, args.source_id, "source_id"),
        target_id=name_text(tool, ctx.limits, args.target_id, "target_id"),
        reason=reason,
        dry_run=args.dry_run,
        max_properties_chars=ctx.limits.max_content_chars,
    )
    audit = AuditLine(
        tool,
        family.home / MERGE_AUDIT_LOG,
        lambda result: merge_audit_line(result, reason),
    )
    result = await ctx.graph.execute(
        command, ctx.cause, before_append=None if args.dry_run else audit
    )
    value: dict[str, Any] = {
        "source": {"id": result.source_id, "name": result.source_name, "deleted": not args.dry_run},
        "target": {"id": result.target_id, "name": result.target_name},
        "edges_added": result.edges_added,
        "edges_consolidated": result.edges_consolidated,
        "self_loops_dropped": result.self_loops_dropped,
        "properties_adopted": list(result.properties_adopted),
        "dry_run": args.dry_run,
        "audit_logged": audit.written,
    }
    if result.warnings:
        value["warnings"] = list(result.warnings)
    return ok(value, value, mutated=not args.dry_run)


def _properties(tool: str, limits: InputLimits, value: dict[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    size = json_size(value)
    if size > limits.max_content_chars:
        raise ToolInputError(
            invalid_arguments(
                tool,
                f"properties is {size:,} characters as JSON; the limit is "
                f"{limits.max_content_chars:,}",
            )
        )
    return value


async def graph_unmerge(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_unmerge"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, UnmergeArgs)
    limits = ctx.limits
    check_count(tool, len(args.edges_to_move), "edges_to_move", limits.max_items)
    reason = _reason(tool, limits, args.reason)
    items = [
        EdgeToMove(
            other_entity_id=name_text(
                tool, limits, item.other_entity_id, f"edges_to_move[{i}].other_entity_id"
            ),
            relation_type=name_text(
                tool, limits, item.relation_type, f"edges_to_move[{i}].relation_type"
            ),
            direction=item.direction,
        )
        for i, item in enumerate(args.edges_to_move)
    ]
    command = GraphUnmerge(
        entity_id=name_text(tool, limits, args.entity_id, "entity_id"),
        new_entity_name=name_text(tool, limits, args.new_entity_name, "new_entity_name"),
        new_entity_type=name_text(tool, limits, args.new_entity_type, "new_entity_type"),
        edges_to_move=items,
        reason=reason,
        properties=_properties(tool, limits, args.properties),
    )
    audit = AuditLine(
        tool,
        family.home / MERGE_AUDIT_LOG,
        lambda result: unmerge_audit_line(result, reason),
    )
    result = await ctx.graph.execute(command, ctx.cause, before_append=audit)
    value: dict[str, Any] = {
        "original": {
            "id": result.original_id,
            "name": result.original_name,
            "remaining_edges": result.remaining_edges,
        },
        "new_entity": {
            "id": result.new_id,
            "name": result.new_name,
            "type": result.new_type,
            "moved_edges": len(result.moved),
        },
        "audit_logged": audit.written,
    }
    if result.warnings:
        value["warnings"] = list(result.warnings)
    return ok(value, value, mutated=True)


GRAPH_MERGE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_UNMERGE, graph_unmerge),
    ToolSpec(s.GRAPH_MERGE, graph_merge),
)
