"""The memory family's extensions beside the official nine: edit, merge and conflict tools.

Each edit is one command, decided and appended atomically: a refused item refuses the call and
nothing is written. Answers follow the nine's style: structuredContent plus its JSON as text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec

from actors.commands import (
    EntityMerge,
    EntityUpdate,
    MergeEntities,
    ObservationUpdate,
    RelationUpdate,
    UpdateEntities,
    UpdateObservations,
    UpdateRelations,
)
from actors.read_models import ReadModels
from eventstore.hlc import ms_of
from graphmem.limits import InputLimits
from graphmem.tools import memory_extension_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    check_count,
    check_names,
    check_text,
    ok,
    parse_args,
)
from graphmem.tools.graph_values import relation_input_value
from projections.conflicts import Conflict, ConflictWrite

__all__ = ["MEMORY_EXTENSION_TOOLS"]

# --- argument shapes (camelCase wire names; extra keys are ignored, as for the nine) ----------


class EntityUpdateArg(msgspec.Struct):
    name: str
    newName: str | None = None
    newEntityType: str | None = None


class UpdateEntitiesArgs(msgspec.Struct):
    entities: list[EntityUpdateArg]


class ObservationUpdateArg(msgspec.Struct):
    entityName: str
    oldContent: str
    newContent: str


class UpdateObservationsArgs(msgspec.Struct):
    updates: list[ObservationUpdateArg]


class RelationUpdateArg(msgspec.Struct):
    from_: str = msgspec.field(name="from")
    to: str = msgspec.field()
    relationType: str = msgspec.field()
    newFrom: str | None = None
    newTo: str | None = None
    newRelationType: str | None = None


class UpdateRelationsArgs(msgspec.Struct):
    relations: list[RelationUpdateArg]


class MergeArg(msgspec.Struct):
    from_: str = msgspec.field(name="from")
    into: str = msgspec.field()


class MergeEntitiesArgs(msgspec.Struct):
    merges: list[MergeArg]


class ReadConflictsArgs(msgspec.Struct):
    entityName: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


# --- helpers ----------------------------------------------------------------------------------


def _content(tool: str, limits: InputLimits, where: str, value: str) -> None:
    check_text(tool, value, where, limits.max_content_chars, multiline=True)


def _results(results: list[dict[str, Any]]) -> ToolOutcome:
    return ok(results, {"results": results}, mutated=True)


# --- the tools --------------------------------------------------------------------------------


async def update_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "update_entities"
    args = parse_args(tool, raw, UpdateEntitiesArgs)
    check_count(tool, len(args.entities), "entities", ctx.limits.max_items)
    for i, e in enumerate(args.entities):
        where = f"entities[{i}]"
        check_names(
            tool,
            ctx.limits,
            [
                (f"{where}.name", e.name),
                (f"{where}.newName", e.newName),
                (f"{where}.newEntityType", e.newEntityType),
            ],
        )
    command = UpdateEntities(
        [EntityUpdate(e.name, e.newName, e.newEntityType) for e in args.entities]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(
        [
            {
                "name": r.name,
                "newName": r.new_name,
                "entityType": r.entity_type,
                "renamed": r.renamed,
                "retyped": r.retyped,
                "movedObservations": r.moved_observations,
                "movedRelations": [relation_input_value(m) for m in r.moved_relations],
            }
            for r in result.results
        ]
    )


async def update_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "update_observations"
    args = parse_args(tool, raw, UpdateObservationsArgs)
    check_count(tool, len(args.updates), "updates", ctx.limits.max_items)
    for i, u in enumerate(args.updates):
        where = f"updates[{i}]"
        check_names(tool, ctx.limits, [(f"{where}.entityName", u.entityName)])
        _content(tool, ctx.limits, f"{where}.oldContent", u.oldContent)
        _content(tool, ctx.limits, f"{where}.newContent", u.newContent)
    command = UpdateObservations(
        [ObservationUpdate(u.entityName, u.oldContent, u.newContent) for u in args.updates]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(
        [
            {
                "entityName": r.entity_name,
                "oldContent": r.old_content,
                "newContent": r.new_content,
                "removed": r.removed,
                "added": r.added,
            }
            for r in result.results
        ]
    )


async def update_relations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "update_relations"
    args = parse_args(tool, raw, UpdateRelationsArgs)
    check_count(tool, len(args.relations), "relations", ctx.limits.max_items)
    for i, r in enumerate(args.relations):
        where = f"relations[{i}]"
        check_names(
            tool,
            ctx.limits,
            [
                (f"{where}.from", r.from_),
                (f"{where}.to", r.to),
                (f"{where}.relationType", r.relationType),
                (f"{where}.newFrom", r.newFrom),
                (f"{where}.newTo", r.newTo),
                (f"{where}.newRelationType", r.newRelationType),
            ],
        )
    command = UpdateRelations(
        [
            RelationUpdate(r.from_, r.to, r.relationType, r.newFrom, r.newTo, r.newRelationType)
            for r in args.relations
        ]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(
        [
            {
                "before": relation_input_value(r.before),
                "after": relation_input_value(r.after),
                "changed": r.changed,
            }
            for r in result.results
        ]
    )


async def merge_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "merge_entities"
    args = parse_args(tool, raw, MergeEntitiesArgs)
    check_count(tool, len(args.merges), "merges", ctx.limits.max_items)
    for i, m in enumerate(args.merges):
        check_names(
            tool, ctx.limits, [(f"merges[{i}].from", m.from_), (f"merges[{i}].into", m.into)]
        )
    command = MergeEntities([EntityMerge(m.from_, m.into) for m in args.merges])
    result = await ctx.graph.execute(command, ctx.cause)
    return _results(
        [
            {
                "from": r.source,
                "into": r.target,
                "movedObservations": list(r.moved_observations),
                "movedRelations": [relation_input_value(m) for m in r.moved_relations],
                "droppedRelations": [relation_input_value(d) for d in r.dropped_relations],
            }
            for r in result.results
        ]
    )


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
