"""The graph family's writing tools: graph_relate (in graph_relate_tool), graph_boost,
graph_weaken, graph_delete and graph_audit (contract §8.2-8.4, 8.15, 8.17). Each call is one
command, appended atomically; the tunables that apply are read here and carried by it."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from actors.graph_commands import GraphAdjust, GraphAudit, GraphDelete
from graphmem.graph_home_files import append_line
from graphmem.tools import graph_write_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    error,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import (
    GraphArgs,
    check_range,
    json_size,
    name_text,
    optional_text,
    parse_graph_args,
)
from graphmem.tools.graph_relate_tool import graph_relate
from graphmem.tools.graph_write_values import edge_key_value, family_of
from projections.graph_time import format_ms

__all__ = ["GRAPH_WRITE_TOOLS"]

AUDIT_FILE = "dream-audit.jsonl"
MAX_AUDIT_DATA = 64 * 1024


class AdjustArgs(GraphArgs, frozen=True):
    from_name: str
    to_name: str
    relation: str
    amount: float | None = None
    reason: str | None = None


class DeleteArgs(GraphArgs, frozen=True):
    entity_id: str | None = None
    id: str | None = None
    reason: str | None = None


class AuditArgs(GraphArgs, frozen=True):
    event: str
    data: dict[str, Any] = {}


async def _adjust(ctx: ToolContext, raw: dict[str, Any], *, weaken: bool) -> ToolOutcome:
    tool = "graph_weaken" if weaken else "graph_boost"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, AdjustArgs)
    check_range(tool, args.amount, "amount", 0.0, 1.0)
    weights = family.tunables.weights
    default = weights.weaken_on_correct if weaken else weights.boost_on_confirm
    command = GraphAdjust(
        from_name=name_text(tool, ctx.limits, args.from_name, "from_name"),
        to_name=name_text(tool, ctx.limits, args.to_name, "to_name"),
        relation=name_text(tool, ctx.limits, args.relation, "relation"),
        amount=default if args.amount is None else float(args.amount),
        weaken=weaken,
        reason=optional_text(tool, ctx.limits, args.reason, "reason"),
        prune_threshold=family.tunables.decay.prune_edge_threshold,
        tool=tool,
    )
    result = await ctx.graph.execute(command, ctx.cause)
    value: dict[str, Any] = {
        "previous_weight": result.previous_weight,
        "new_weight": result.new_weight,
        "edge": edge_key_value(result.edge),
    }
    if weaken:
        value["pruned"] = result.pruned
    return ok(value, value, mutated=True)


async def graph_boost(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    return await _adjust(ctx, raw, weaken=False)


async def graph_weaken(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    return await _adjust(ctx, raw, weaken=True)


async def graph_delete(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_delete"
    family_of(ctx, tool)
    args = parse_graph_args(tool, raw, DeleteArgs)
    if args.entity_id is not None and args.id is not None and args.entity_id != args.id:
        raise ToolInputError(
            invalid_arguments(tool, "entity_id and id name different entities; give one")
        )
    reference = args.entity_id if args.entity_id is not None else args.id
    if reference is None:
        raise ToolInputError(invalid_arguments(tool, "missing entity_id (or its synonym id)"))
    command = GraphDelete(
        entity_id=name_text(tool, ctx.limits, reference, "entity_id"),
        reason=optional_text(tool, ctx.limits, args.reason, "reason"),
    )
    result = await ctx.graph.execute(command, ctx.cause)
    if not result.found:
        value: dict[str, Any] = {"deleted": False, "found": False, "entity_id": result.reference}
        return ok(value, value)
    value = {
        "deleted": True,
        "entity": {"id": result.id, "name": result.name, "type": result.entity_type},
        "edges_removed": result.edges_removed,
    }
    return ok(value, value, mutated=True)


async def graph_audit(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_audit"
    family = family_of(ctx, tool)
    args = parse_graph_args(tool, raw, AuditArgs)
    if args.event not in s.AUDIT_EVENTS:
        raise ToolInputError(
            invalid_arguments(
                tool, f"event {args.event!r} is not one of: {', '.join(s.AUDIT_EVENTS)}"
            )
        )
    size = json_size(args.data)
    if size > MAX_AUDIT_DATA:
        raise ToolInputError(
            invalid_arguments(
                tool, f"data is {size:,} bytes as JSON; the limit is {MAX_AUDIT_DATA:,}"
            )
        )
    timestamp = format_ms(family.now_ms())
    assert timestamp is not None
    # The data's keys, then the server's event and timestamp: a payload cannot forge them.
    line = {k: v for k, v in args.data.items() if k not in ("event", "timestamp")}
    line.update(event=args.event, timestamp=timestamp)
    encoded = msgspec.json.encode(line) + b"\n"
    path = family.logs_dir / AUDIT_FILE
    # The file first: it is what the caller asked for; if it cannot be written, nothing is
    # recorded anywhere and the caller hears why.
    try:
        await anyio.to_thread.run_sync(append_line, path, encoded)
    except OSError as problem:
        return error(
            f"graph_audit failed: cannot append to {path} ({problem.strerror}); nothing was "
            "recorded. Make the graph home's logs folder writable and call again."
        )
    await ctx.graph.execute(
        GraphAudit(event=args.event, timestamp=timestamp, data=args.data), ctx.cause
    )
    value = {"logged": True, "event": args.event, "timestamp": timestamp}
    return ok(value, value, mutated=True)


GRAPH_WRITE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_RELATE, graph_relate),
    ToolSpec(s.GRAPH_BOOST, graph_boost),
    ToolSpec(s.GRAPH_WEAKEN, graph_weaken),
    ToolSpec(s.GRAPH_DELETE, graph_delete),
    ToolSpec(s.GRAPH_AUDIT, graph_audit),
)
