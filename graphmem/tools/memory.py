"""The official memory server's nine tools, run against graphmem's graph (drop-in)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import msgspec
import structlog

from actors.commands import (
    AddObservations,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
)
from actors.time_travel import AsOfPoint, GraphModels
from graphmem.tools import memory_schemas as s
from graphmem.tools.as_of import read_models
from graphmem.tools.base import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    answered,
    check_count,
    check_text,
    ok,
    parse_args,
    render,
)
from graphmem.tools.graph_values import (
    entity_value,
    relation_value,
)
from graphmem.tools.input_checks import command_from
from graphmem.tools.memory_reads import (
    Selection,
    graph_page,
    graph_selection,
    opened,
    search_selection,
    searched,
    shaped,
    spilled,
)

T = TypeVar("T")

log = structlog.get_logger(__name__)

# --- argument shapes (wire names are the official camelCase; extra keys are ignored) ---------


Limit = Annotated[int, msgspec.Meta(ge=1)]
Offset = Annotated[int, msgspec.Meta(ge=0)]


# `as_of` is checked by actors.time_travel.parse_as_of, whose message names every accepted form.
class ReadGraphArgs(msgspec.Struct):
    limit: Limit | None = None
    offset: Offset | None = None
    as_of: Any = None


class SearchNodesArgs(msgspec.Struct):
    query: str
    entityType: str | None = None
    limit: Limit | None = None
    offset: Offset | None = None
    as_of: Any = None


class OpenNodesArgs(msgspec.Struct):
    names: list[str]
    as_of: Any = None


# --- the nine tools ---------------------------------------------------------------------------


async def create_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("create_entities", raw, CreateEntities, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    created = msgspec.to_builtins(result.created)
    structured: dict[str, Any] = {"entities": created}
    texts = [render(created)]
    if result.skipped:
        structured["skipped"] = list(result.skipped)
        texts.append(_skipped_notice(result.skipped))
    return ToolOutcome(texts=texts, structured=structured, mutated=True)


def _skipped_notice(skipped: list[str]) -> str:
    names = ", ".join(skipped)
    if len(skipped) == 1:
        return (
            f"Skipped 1 entity that already exists: {names}. Its observations were not added; "
            "use add_observations for existing entities."
        )
    return (
        f"Skipped {len(skipped)} entities that already exist: {names}. Their observations were "
        "not added; use add_observations for existing entities."
    )


async def create_relations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("create_relations", raw, CreateRelations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    created = msgspec.to_builtins(result.created)
    return ok(created, {"relations": created}, mutated=True)


async def add_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("add_observations", raw, AddObservations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    results = msgspec.to_builtins(result.results)
    return ok(results, {"results": results}, mutated=True)


def _status(message: str) -> ToolOutcome:
    # The delete tools answer with the bare message as text, not a JSON string.
    return ToolOutcome(
        texts=[message], structured={"success": True, "message": message}, mutated=True
    )


async def delete_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("delete_entities", raw, DeleteEntities, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    if not result.not_found:
        message = "Entities deleted successfully"
    else:
        message = (
            f"Deleted {result.deleted} of {result.requested} entities. "
            f"Not found: {', '.join(result.not_found)}"
        )
    return _status(message)


async def delete_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("delete_observations", raw, DeleteObservations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    if result.deleted == result.requested and not result.entities_not_found:
        message = "Observations deleted successfully"
    else:
        message = f"Deleted {result.deleted} of {result.requested} observations."
        if result.entities_not_found:
            message += f" Entities not found: {', '.join(result.entities_not_found)}"
    return _status(message)


async def delete_relations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = command_from("delete_relations", raw, DeleteRelations, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    if result.deleted == result.requested:
        message = "Relations deleted successfully"
    else:
        message = (
            f"Deleted {result.deleted} of {result.requested} relations. The rest matched nothing."
        )
    return _status(message)


# --- as-of reads (shared with the mesh family) --------------------------------------------------


def _graph_answer(value: dict[str, Any], point: AsOfPoint | None) -> ToolOutcome:
    # The text stays the official shape either way; only the structured content says when.
    return ok(value, value if point is None else {**value, "asOf": point.value()})


async def _subgraph_answer(
    ctx: ToolContext, select: Callable[[GraphModels], Selection]
) -> ToolOutcome:
    """The answer of what `select` picks from the current graph, spooled as the writer reads
    it (one query: one snapshot, whatever is written while the answer goes out)."""
    try:
        body = await ctx.graph.query_reads(
            lambda models: spilled(lambda: select(models), ctx.spill_dir)
        )
    except OSError as problem:  # no room to spool it (disk full, dir gone): from memory
        log.warning("answer_not_spooled", reason=str(problem))
        value = await ctx.graph.query_reads(lambda models: shaped(lambda: select(models)))
        return ok(value, value)
    return answered(body)


# --- the read tools ---------------------------------------------------------------------------


async def read_graph(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "read_graph"
    args = parse_args(tool, raw, ReadGraphArgs)
    offset, limit = args.offset, args.limit
    if args.as_of is None:
        return await _subgraph_answer(
            ctx, lambda models: graph_selection(models.graph, offset, limit)
        )
    value, point = await read_models(
        ctx, tool, args.as_of, lambda models: graph_page(models.graph, offset, limit)
    )
    return _graph_answer(value, point)


async def search_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "search_nodes"
    args = parse_args(tool, raw, SearchNodesArgs)
    check_text(tool, args.query, "query", ctx.limits.max_query_chars, multiline=True)
    if args.entityType is not None:
        check_text(tool, args.entityType, "entityType", ctx.limits.max_name_chars, multiline=False)
    query, entity_type = args.query, args.entityType
    offset, limit = args.offset, args.limit

    def select(models: GraphModels) -> Selection:
        return search_selection(
            models.graph, models.search, query, entity_type=entity_type, offset=offset, limit=limit
        )

    if args.as_of is None:
        return await _subgraph_answer(ctx, select)

    def search(models: GraphModels) -> dict[str, Any]:
        return searched(
            models.graph, models.search, query, entity_type=entity_type, offset=offset, limit=limit
        )

    value, point = await read_models(ctx, tool, args.as_of, search)
    return _graph_answer(value, point)


async def open_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "open_nodes"
    args = parse_args(tool, raw, OpenNodesArgs)
    check_count(tool, len(args.names), "names", ctx.limits.max_items)
    names = list(args.names)
    if args.as_of is None:
        value = await ctx.graph.query_reads(lambda m: opened(m.graph, names))
        return _graph_answer(value, None)
    value, point = await read_models(ctx, tool, args.as_of, lambda m: opened(m.graph, names))
    return _graph_answer(value, point)


MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.CREATE_ENTITIES, create_entities),
    ToolSpec(s.CREATE_RELATIONS, create_relations),
    ToolSpec(s.ADD_OBSERVATIONS, add_observations),
    ToolSpec(s.DELETE_ENTITIES, delete_entities),
    ToolSpec(s.DELETE_OBSERVATIONS, delete_observations),
    ToolSpec(s.DELETE_RELATIONS, delete_relations),
    ToolSpec(s.READ_GRAPH, read_graph),
    ToolSpec(s.SEARCH_NODES, search_nodes),
    ToolSpec(s.OPEN_NODES, open_nodes),
)

__all__ = [
    "MEMORY_TOOLS",
    "entity_value",
    "relation_value",
]
