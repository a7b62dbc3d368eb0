"""The memory family's extensions beside the official nine: edit, merge and conflict tools.

Each edit is one command, decided and appended atomically: a refused item refuses the call and
nothing is written. Answers follow the nine's style: structuredContent plus its JSON as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec

from actors.commands import (
    MergeEntities,
    UpdateEntities,
    UpdateObservations,
    UpdateRelations,
)
from actors.read_models import ReadModels
from eventstore.hlc import ms_of
from graphmem.tools import memory_extension_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    check_names,
    ok,
    parse_args,
)
from graphmem.tools.input_checks import command_from
from projections.conflicts import Conflict, ConflictWrite

__all__ = ["MEMORY_EXTENSION_TOOLS"]

# --- argument shapes (camelCase wire names; extra keys are ignored, as for the nine) ----------


class ReadConflictsArgs(msgspec.Struct):
    entityName: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


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


def _time(hlc: int) -> str:
    moment = datetime.fromtimestamp(ms_of(hlc) / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _write(w: ConflictWrite) -> dict[str, Any]:
    return {
        "node": w.origin,
        "time": _time(w.hlc),
        "hlc": w.hlc,
        "seq": w.origin_seq,
        "event": w.event,
    }


def _conflict(c: Conflict) -> dict[str, Any]:
    value: dict[str, Any] = {"element": c.kind}
    if c.kind == "relation":
        value["relation"] = {"from": c.key[0], "to": c.key[1], "relationType": c.key[2]}
    else:
        value["entityName"] = c.key[0]
        if c.kind == "observation":
            value["observation"] = c.key[1]
    value["writes"] = [_write(w) for w in c.writes]
    value["kept"] = _write(c.kept)
    return value


async def read_conflicts(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "read_conflicts"
    args = parse_args(tool, raw, ReadConflictsArgs)
    check_names(tool, ctx.limits, [("entityName", args.entityName)])
    entity, limit = args.entityName, args.limit

    def conflicts(models: ReadModels) -> list[dict[str, Any]]:
        return [_conflict(c) for c in models.conflicts.conflicts(entity, limit)]

    value = await ctx.graph.query_models(conflicts)
    return ok(value, {"conflicts": value})


MEMORY_EXTENSION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.UPDATE_ENTITIES, update_entities),
    ToolSpec(s.UPDATE_OBSERVATIONS, update_observations),
    ToolSpec(s.UPDATE_RELATIONS, update_relations),
    ToolSpec(s.MERGE_ENTITIES, merge_entities),
    ToolSpec(s.READ_CONFLICTS, read_conflicts),
)
