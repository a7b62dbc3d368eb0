"""The official memory server's nine tools, run against graphmem's graph (drop-in)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeVar

import anyio
import msgspec

from actors.commands import (
    AddObservations,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    EntitiesCreated,
    EntitiesDeleted,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
    ObservationsAdded,
    ObservationsDeleted,
    RelationInput,
    RelationsCreated,
    RelationsDeleted,
)
from actors.time_travel import AsOfError, AsOfPoint, GraphModels, TimeTravel
from graphmem.tools import memory_schemas as s
from graphmem.tools.base import (
    InputLimits,
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_contents,
    check_count,
    check_names,
    check_text,
    invalid_arguments,
    ok,
    parse_args,
    render,
)
from graphmem.tools.graph_values import (
    entity_value,
    paged,
    relation_input_value,
    relation_value,
    subgraph_value,
    whole_graph,
)
from projections.graph import EntityView

T = TypeVar("T")

# --- argument shapes (wire names are the official camelCase; extra keys are ignored) ---------


class EntityArg(msgspec.Struct):
    name: str
    entityType: str
    observations: list[str]


class RelationArg(msgspec.Struct):
    from_: str = msgspec.field(name="from")
    to: str = msgspec.field()
    relationType: str = msgspec.field()


class CreateEntitiesArgs(msgspec.Struct):
    entities: list[EntityArg]


class RelationsArgs(msgspec.Struct):
    relations: list[RelationArg]


class ObservationArg(msgspec.Struct):
    entityName: str
    contents: list[str]


class AddObservationsArgs(msgspec.Struct):
    observations: list[ObservationArg]


class DeleteEntitiesArgs(msgspec.Struct):
    entityNames: list[str]


class DeletionArg(msgspec.Struct):
    entityName: str
    observations: list[str]


class DeleteObservationsArgs(msgspec.Struct):
    deletions: list[DeletionArg]


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


# --- input checks -----------------------------------------------------------------------------


def _check_relations(tool: str, limits: InputLimits, relations: list[RelationArg]) -> None:
    check_count(tool, len(relations), "relations", limits.max_items)
    for i, r in enumerate(relations):
        check_names(
            tool,
            limits,
            [
                (f"relations[{i}].from", r.from_),
                (f"relations[{i}].to", r.to),
                (f"relations[{i}].relationType", r.relationType),
            ],
        )


def _relation_inputs(relations: list[RelationArg]) -> list[RelationInput]:
    return [RelationInput(r.from_, r.to, r.relationType) for r in relations]


# --- the nine tools ---------------------------------------------------------------------------


async def create_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "create_entities"
    args = parse_args(tool, raw, CreateEntitiesArgs)
    limits = ctx.limits
    check_count(tool, len(args.entities), "entities", limits.max_items)
    for i, e in enumerate(args.entities):
        where = f"entities[{i}]"
        check_names(
            tool, limits, [(f"{where}.name", e.name), (f"{where}.entityType", e.entityType)]
        )
        check_count(tool, len(e.observations), f"{where}.observations", limits.max_items)
        check_contents(tool, limits, f"{where}.observations", e.observations)
    command = CreateEntities(
        entities=[EntityInput(e.name, e.entityType, list(e.observations)) for e in args.entities]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    assert isinstance(result, EntitiesCreated)
    created = [
        {"name": e.name, "entityType": e.entity_type, "observations": list(e.observations)}
        for e in result.created
    ]
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
    tool = "create_relations"
    args = parse_args(tool, raw, RelationsArgs)
    _check_relations(tool, ctx.limits, args.relations)
    command = CreateRelations(relations=_relation_inputs(args.relations))
    result = await ctx.graph.execute(command, ctx.cause)
    assert isinstance(result, RelationsCreated)
    created = [relation_input_value(r) for r in result.created]
    return ok(created, {"relations": created}, mutated=True)


async def add_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "add_observations"
    args = parse_args(tool, raw, AddObservationsArgs)
    limits = ctx.limits
    check_count(tool, len(args.observations), "observations", limits.max_items)
    for i, item in enumerate(args.observations):
        where = f"observations[{i}]"
        check_names(tool, limits, [(f"{where}.entityName", item.entityName)])
        check_count(tool, len(item.contents), f"{where}.contents", limits.max_items)
        check_contents(tool, limits, f"{where}.contents", item.contents)
    command = AddObservations(
        observations=[ObservationInput(o.entityName, list(o.contents)) for o in args.observations]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    assert isinstance(result, ObservationsAdded)
    results = [
        {"entityName": r.entity_name, "addedObservations": list(r.added_observations)}
        for r in result.results
    ]
    return ok(results, {"results": results}, mutated=True)


def _status(message: str) -> ToolOutcome:
    # The delete tools answer with the bare message as text, not a JSON string.
    return ToolOutcome(
        texts=[message], structured={"success": True, "message": message}, mutated=True
    )


async def delete_entities(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "delete_entities"
    args = parse_args(tool, raw, DeleteEntitiesArgs)
    check_count(tool, len(args.entityNames), "entityNames", ctx.limits.max_items)
    check_names(
        tool, ctx.limits, [(f"entityNames[{i}]", n) for i, n in enumerate(args.entityNames)]
    )
    result = await ctx.graph.execute(DeleteEntities(entity_names=list(args.entityNames)), ctx.cause)
    assert isinstance(result, EntitiesDeleted)
    if not result.not_found:
        message = "Entities deleted successfully"
    else:
        message = (
            f"Deleted {result.deleted} of {result.requested} entities. "
            f"Not found: {', '.join(result.not_found)}"
        )
    return _status(message)


async def delete_observations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "delete_observations"
    args = parse_args(tool, raw, DeleteObservationsArgs)
    limits = ctx.limits
    check_count(tool, len(args.deletions), "deletions", limits.max_items)
    for i, d in enumerate(args.deletions):
        where = f"deletions[{i}]"
        check_names(tool, limits, [(f"{where}.entityName", d.entityName)])
        check_count(tool, len(d.observations), f"{where}.observations", limits.max_items)
        check_contents(tool, limits, f"{where}.observations", d.observations)
    command = DeleteObservations(
        deletions=[ObservationDeletion(d.entityName, list(d.observations)) for d in args.deletions]
    )
    result = await ctx.graph.execute(command, ctx.cause)
    assert isinstance(result, ObservationsDeleted)
    if result.deleted == result.requested and not result.entities_not_found:
        message = "Observations deleted successfully"
    else:
        message = f"Deleted {result.deleted} of {result.requested} observations."
        if result.entities_not_found:
            message += f" Entities not found: {', '.join(result.entities_not_found)}"
    return _status(message)


async def delete_relations(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "delete_relations"
    args = parse_args(tool, raw, RelationsArgs)
    _check_relations(tool, ctx.limits, args.relations)
    command = DeleteRelations(relations=_relation_inputs(args.relations))
    result = await ctx.graph.execute(command, ctx.cause)
    assert isinstance(result, RelationsDeleted)
    if result.deleted == result.requested:
        message = "Relations deleted successfully"
    else:
        message = (
            f"Deleted {result.deleted} of {result.requested} relations. The rest matched nothing."
        )
    return _status(message)


# --- as-of reads (shared with the mesh family) --------------------------------------------------


class _Moved:
    """The writer's graph has moved past the point asked for."""


_MOVED = _Moved()


def _time_travel(ctx: ToolContext, tool: str) -> TimeTravel:
    found: TimeTravel | None = ctx.time_travel
    if found is None:
        raise ToolInputError(
            invalid_arguments(tool, "as_of is not available on this server; omit it")
        )
    return found


async def resolve_as_of(ctx: ToolContext, tool: str, as_of: object) -> AsOfPoint:
    """The log point `as_of` names; a ToolInputError says what is wrong with it."""
    time_travel = _time_travel(ctx, tool)
    try:
        # Off the event loop: a time is found by a binary search over the log.
        return await anyio.to_thread.run_sync(time_travel.resolve, as_of)
    except AsOfError as problem:
        raise ToolInputError(invalid_arguments(tool, str(problem))) from None


async def query_as_of(
    ctx: ToolContext, tool: str, point: AsOfPoint, query: Callable[[GraphModels], T]
) -> T:
    """`query` on the read models as of `point`: the writer's own while it is still there,
    else models rebuilt on a worker thread (about a second on a 1M-event log), so the writer
    keeps serving meanwhile."""
    if point.latest:

        def if_unchanged(models: GraphModels) -> T | _Moved:
            return query(models) if models.graph.position == point.position else _MOVED

        value = await ctx.graph.query_models(if_unchanged)
        if not isinstance(value, _Moved):
            return value
    time_travel = _time_travel(ctx, tool)
    return await anyio.to_thread.run_sync(time_travel.query, point.position, query)


async def read_models(
    ctx: ToolContext, tool: str, as_of: object, query: Callable[[GraphModels], T]
) -> tuple[T, AsOfPoint | None]:
    """`query` on the current read models, or on those as of `as_of` when it is given."""
    if as_of is None:
        return await ctx.graph.query_models(query), None
    point = await resolve_as_of(ctx, tool, as_of)
    return await query_as_of(ctx, tool, point, query), point


def _graph_answer(value: dict[str, Any], point: AsOfPoint | None) -> ToolOutcome:
    # The text stays the official shape either way; only the structured content says when.
    return ok(value, value if point is None else {**value, "asOf": point.value()})


# --- the read tools ---------------------------------------------------------------------------


async def read_graph(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "read_graph"
    args = parse_args(tool, raw, ReadGraphArgs)
    if args.limit is None and args.offset is None:
        value, point = await read_models(ctx, tool, args.as_of, lambda m: whole_graph(m.graph))
        return _graph_answer(value, point)
    offset, limit = args.offset or 0, args.limit

    def page(models: GraphModels) -> dict[str, Any]:
        graph = models.graph
        # From the graph's name index: a page costs the same whatever was deleted before.
        return subgraph_value(graph, graph.entities_page(offset, limit))

    value, point = await read_models(ctx, tool, args.as_of, page)
    return _graph_answer(value, point)


async def search_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "search_nodes"
    args = parse_args(tool, raw, SearchNodesArgs)
    check_text(tool, args.query, "query", ctx.limits.max_query_chars, multiline=True)
    if args.entityType is not None:
        check_text(tool, args.entityType, "entityType", ctx.limits.max_name_chars, multiline=False)
    query, entity_type = args.query, args.entityType
    offset, limit = args.offset or 0, args.limit
    paging = args.offset is not None or args.limit is not None

    def search(models: GraphModels) -> dict[str, Any]:
        graph = models.graph
        names = models.search.search(graph, query)
        found: Iterable[EntityView] = graph.entities_named(names)
        if entity_type is not None:
            found = [e for e in found if e.entity_type == entity_type]
        page = paged(found, offset, limit) if paging else list(found)
        return subgraph_value(graph, page)

    value, point = await read_models(ctx, tool, args.as_of, search)
    return _graph_answer(value, point)


async def open_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "open_nodes"
    args = parse_args(tool, raw, OpenNodesArgs)
    check_count(tool, len(args.names), "names", ctx.limits.max_items)
    names = list(args.names)

    def open_(models: GraphModels) -> dict[str, Any]:
        graph = models.graph
        # The official order is the graph's listing order, not the order asked for.
        return subgraph_value(graph, graph.entities_named(names, listing_order=True))

    value, point = await read_models(ctx, tool, args.as_of, open_)
    return _graph_answer(value, point)


MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.CREATE_ENTITIES, create_entities, mutates=True),
    ToolSpec(s.CREATE_RELATIONS, create_relations, mutates=True),
    ToolSpec(s.ADD_OBSERVATIONS, add_observations, mutates=True),
    ToolSpec(s.DELETE_ENTITIES, delete_entities, mutates=True),
    ToolSpec(s.DELETE_OBSERVATIONS, delete_observations, mutates=True),
    ToolSpec(s.DELETE_RELATIONS, delete_relations, mutates=True),
    ToolSpec(s.READ_GRAPH, read_graph),
    ToolSpec(s.SEARCH_NODES, search_nodes),
    ToolSpec(s.OPEN_NODES, open_nodes),
)

__all__ = [
    "MEMORY_TOOLS",
    "entity_value",
    "query_as_of",
    "read_models",
    "relation_value",
    "resolve_as_of",
]
