"""The memory family's extensions beside the official nine: edit, merge and conflict tools.

Each edit is one command, decided and appended atomically: a refused item refuses the call and
nothing is written. Answers follow the nine's style: structuredContent plus its JSON as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from actors.commands import (
    MergeEntities,
    UpdateEntities,
    UpdateObservations,
    UpdateRelations,
)
from actors.time_travel import GraphModels
from graphmem.tools import memory_extension_schemas as s
from graphmem.tools.as_of import read_models
from graphmem.tools.base import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    check_names,
    ok,
    parse_args,
)
from graphmem.tools.input_checks import command_from
from projections.graph_family import VIEW_LIMIT, conflict_view, replica_write

__all__ = ["MEMORY_EXTENSION_TOOLS"]

# --- argument shapes (camelCase wire names; extra keys are ignored, as for the nine) ----------


class ReadConflictsArgs(msgspec.Struct):
    entityName: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None
    view: Literal["replicas", "all"] = "replicas"
    as_of: Any = None


# --- helpers ----------------------------------------------------------------------------------


def _results(results: Sequence[msgspec.Struct]) -> ToolOutcome:
    value = msgspec.to_builtins(results)
    return ok(value, {"results": value}, mutated=True)


# --- the tools --------------------------------------------------------------------------------


async def update_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("update_entities", raw, UpdateEntities, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(result.results)


async def update_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("update_observations", raw, UpdateObservations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(result.results)


async def update_relations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("update_relations", raw, UpdateRelations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(result.results)


async def merge_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("merge_entities", raw, MergeEntities, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(result.results)


async def read_conflicts(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "read_conflicts"
    args = parse_args(tool, raw, ReadConflictsArgs)
    check_names(tool, ctx.limits, [("entityName", args.entityName)])
    entity, limit = args.entityName, args.limit

    def conflicts(models: GraphModels) -> Any:
        if args.view == "replicas":
            return [replica_write(c) for c in models.conflicts.conflicts(entity, limit)]
        # The one conflict view: replica writes beside superseded edges and contradictions.
        view = conflict_view(
            models.graph,
            models.conflicts,
            entity=entity,
            limit=VIEW_LIMIT if limit is None else limit,
            include_resolved=True,
        )
        return {
            "conflicts": view["replica_writes"],
            "superseded": view["superseded"],
            "contradictions": view["contradictions"],
            "counts": view["counts"],
        }

    value, point = await read_models(ctx, tool, args.as_of, conflicts)
    if isinstance(value, list):
        structured: dict[str, Any] = {"conflicts": value}
    else:
        structured = value
    if point is not None:
        structured["asOf"] = point.value()
    return ok(value, structured)


MEMORY_EXTENSION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.UPDATE_ENTITIES, update_entities),
    ToolSpec(s.UPDATE_OBSERVATIONS, update_observations),
    ToolSpec(s.UPDATE_RELATIONS, update_relations),
    ToolSpec(s.MERGE_ENTITIES, merge_entities),
    ToolSpec(s.READ_CONFLICTS, read_conflicts),
)
