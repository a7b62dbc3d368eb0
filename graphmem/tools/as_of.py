"""Reading the graph as of a past point, for every family's read tools: resolving `as_of`
to a log point, querying the read models then, and how an answer names the point it read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from actors.time_travel import AsOfError, AsOfPoint, GraphModels, TimeTravel
from graphmem.tools.base import ToolContext, ToolInputError, invalid_arguments

__all__ = ["as_of_data", "as_of_phrase", "query_as_of", "read_models", "resolve_as_of"]

T = TypeVar("T")


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


def as_of_data(point: AsOfPoint | None) -> dict[str, Any]:
    # After-hooks of an as-of read learn which point was read.
    return {} if point is None else {"asOf": point.value()}


def as_of_phrase(point: AsOfPoint | None) -> str:
    return "" if point is None else f" as of {point.describe()}"
