"""The graph family's reading tools: graph_query, graph_entities, graph_stats and
graph_contradictions (contract §8.1, 8.5, 8.6, 8.14), each taking `as_of`, and graph_export
(§8.18), which reads the graph at one point to write a backup.

The reads themselves are projections.graph_family's; here are the arguments (strict, see
graph_args), the defaults from the tunables, and the answer. An as-of answer carries `as_of`:
the log position it read and that event's time.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Any, Literal, TypeVar

import anyio
import msgspec

from actors.time_travel import AsOfPoint, GraphModels
from eventstore.hlc import ms_of
from graphmem.graph_home_files import home_facts
from graphmem.tools import graph_read_schemas as s
from graphmem.tools.as_of import query_as_of, resolve_as_of
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_text,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import GraphArgs, check_range, name_text, parse_graph_args
from graphmem.tools.graph_export import BackupWritten, sanitise_label, write_backup
from graphmem.tools.graph_family import GraphFamily
from projections.graph_family import (
    ListOptions,
    QueryOptions,
    conflict_view,
    export_rows,
    graph_contradictions,
    graph_entities,
    graph_query,
    graph_stats,
)

__all__ = ["GRAPH_READ_TOOLS", "answer", "family_of", "read_graph_models"]

T = TypeVar("T")

MAX_QUERY_ENTITIES = 100
MAX_HOPS = 4
MAX_LIMIT = 200
MAX_KEEP = 30
MAX_LABEL_CHARS = 64


class QueryArgs(GraphArgs, frozen=True):
    entities: list[str]
    entity_types: list[str] | None = None
    max_hops: int | None = None
    min_weight: float | None = None
    limit: int | None = None
    project_context: str | None = None
    context_level: Literal["minimal", "full", "relations-only"] = "full"
    current_only: bool = True
    as_of: Any = None


class EntitiesArgs(GraphArgs, frozen=True):
    search: str | None = None
    entity_type: str | None = msgspec.field(default=None, name="type")
    min_confidence: float | None = None
    sort_by: Literal["confidence", "last_seen", "name"] = "confidence"
    limit: int = 20
    as_of: Any = None


class StatsArgs(GraphArgs, frozen=True):
    as_of: Any = None


class ContradictionsArgs(GraphArgs, frozen=True):
    include_resolved: bool = False
    include_conflicts: bool = False
    as_of: Any = None


class ExportArgs(GraphArgs, frozen=True):
    keep: int = 14
    label: str | None = None


def _family(ctx: ToolContext, tool: str) -> GraphFamily:
    if ctx.family is None:
        raise ToolInputError(
            invalid_arguments(tool, "the graph family is not served; start with --tools graph")
        )
    return ctx.family


async def _read(
    ctx: ToolContext, tool: str, as_of: object, query: Callable[[GraphModels, int | None], T]
) -> tuple[T, AsOfPoint | None]:
    """`query(models, point_ms)` now, or as of `as_of`; `point_ms` is the wall time of the
    point read (None: now)."""
    if as_of is None:
        return await ctx.graph.query_models(lambda models: query(models, None)), None
    point = await resolve_as_of(ctx, tool, as_of)
    point_ms = None if point.hlc is None else ms_of(point.hlc)
    return await query_as_of(ctx, tool, point, lambda models: query(models, point_ms)), point


def _answer(value: dict[str, Any], point: AsOfPoint | None) -> ToolOutcome:
    if point is not None:
        value["as_of"] = point.value()
    return ok(value, value)


# --- graph_query ------------------------------------------------------------------------------


def _query_options(ctx: ToolContext, tool: str, args: QueryArgs) -> QueryOptions:
    family = _family(ctx, tool)
    defaults = family.tunables.query
    if not 1 <= len(args.entities) <= MAX_QUERY_ENTITIES:
        raise ToolInputError(
            invalid_arguments(
                tool,
                f"entities has {len(args.entities)} items; give 1 to {MAX_QUERY_ENTITIES} names",
            )
        )
    entries = [
        name_text(tool, ctx.limits, entry, f"entities[{i}]")
        for i, entry in enumerate(args.entities)
    ]
    types = None
    if args.entity_types:  # an empty list filters nothing, like an omitted one
        types = [
            name_text(tool, ctx.limits, given, f"entity_types[{i}]")
            for i, given in enumerate(args.entity_types)
        ]
    max_hops = defaults.default_max_hops if args.max_hops is None else args.max_hops
    min_weight = defaults.default_min_weight if args.min_weight is None else args.min_weight
    limit = defaults.default_limit if args.limit is None else args.limit
    check_range(tool, max_hops, "max_hops", 0, MAX_HOPS)
    check_range(tool, min_weight, "min_weight", 0, 1)
    check_range(tool, limit, "limit", 1, MAX_LIMIT)
    project = args.project_context
    if project is not None:
        check_text(tool, project, "project_context", ctx.limits.max_query_chars, multiline=False)
        project = project.strip()
        if not project:
            raise ToolInputError(
                invalid_arguments(tool, "project_context is empty; give a directory or name")
            )
    affinity = family.tunables.affinity
    return QueryOptions(
        entities=entries,
        entity_types=types,
        max_hops=max_hops,
        min_weight=min_weight,
        limit=limit,
        project_context=project,
        context_level=args.context_level,
        current_only=args.current_only,
        hop_1_multiplier=affinity.hop_1_multiplier,
        hop_2_multiplier=affinity.hop_2_multiplier,
    )


async def query_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_query"
    args = parse_graph_args(tool, raw, QueryArgs)
    options = _query_options(ctx, tool, args)
    value, point = await _read(ctx, tool, args.as_of, lambda m, _: graph_query(m.graph, options))
    return _answer(value, point)


# --- graph_entities ---------------------------------------------------------------------------


async def entities_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_entities"
    args = parse_graph_args(tool, raw, EntitiesArgs)
    _family(ctx, tool)
    search = args.search
    if search is not None:
        check_text(tool, search, "search", ctx.limits.max_query_chars, multiline=False)
        if not search.strip():
            search = None  # a blank search lists, like an omitted one
    entity_type = None
    if args.entity_type is not None:
        entity_type = name_text(tool, ctx.limits, args.entity_type, "type")
    check_range(tool, args.min_confidence, "min_confidence", 0, 1)
    check_range(tool, args.limit, "limit", 1, MAX_LIMIT)
    options = ListOptions(
        search=search,
        entity_type=entity_type,
        min_confidence=args.min_confidence,
        sort_by=args.sort_by,
        limit=args.limit,
    )
    value, point = await _read(ctx, tool, args.as_of, lambda m, _: graph_entities(m.graph, options))
    return _answer(value, point)


# --- graph_stats ------------------------------------------------------------------------------


async def stats_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_stats"
    args = parse_graph_args(tool, raw, StatsArgs)
    family = _family(ctx, tool)
    decay = family.tunables.decay

    def stats(models: GraphModels, point_ms: int | None) -> dict[str, Any]:
        # Staleness is judged at the point read: now, or the as-of point's time.
        now = family.now_ms() if point_ms is None else point_ms
        return graph_stats(
            models.graph,
            now_ms=now,
            stale_confidence=decay.stale_confidence,
            stale_days=decay.stale_days,
        )

    value, point = await _read(ctx, tool, args.as_of, stats)
    facts = await anyio.to_thread.run_sync(home_facts, family.home)
    value["health"].update(
        last_dream_run=facts.last_dream_run,
        pending_ingest_docs=facts.pending_ingest_docs,
        total_ingested_docs=facts.total_ingested_docs,
    )
    return _answer(value, point)


# --- graph_contradictions ---------------------------------------------------------------------


async def contradictions_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_contradictions"
    args = parse_graph_args(tool, raw, ContradictionsArgs)
    _family(ctx, tool)
    include = args.include_resolved

    def contradictions(models: GraphModels, _: int | None) -> dict[str, Any]:
        value = graph_contradictions(models.graph, include_resolved=include)
        if args.include_conflicts:
            # [addition] the one conflict view: replica writes, superseded edges and these.
            value["conflicts"] = conflict_view(
                models.graph, models.conflicts, include_resolved=include
            )
        return value

    value, point = await _read(ctx, tool, args.as_of, contradictions)
    return _answer(value, point)


# --- graph_export -----------------------------------------------------------------------------


async def export_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_export"
    args = parse_graph_args(tool, raw, ExportArgs)
    family = _family(ctx, tool)
    check_range(tool, args.keep, "keep", 1, MAX_KEEP)
    if args.label is not None:
        check_text(tool, args.label, "label", ctx.limits.max_name_chars, multiline=False)
        if len(args.label) > MAX_LABEL_CHARS:
            raise ToolInputError(
                invalid_arguments(
                    tool,
                    f"label is {len(args.label)} characters long; give at most {MAX_LABEL_CHARS}",
                )
            )
    label = sanitise_label(args.label)
    now = family.now_ms()

    def write_from(models: GraphModels) -> tuple[dict[str, Any], BackupWritten]:
        rows = export_rows(models.graph, exported_at_ms=now)
        meta = next(rows)
        written = write_backup(
            family.backups_dir, chain((meta,), rows), now_ms=now, label=label, keep=args.keep
        )
        return meta, written

    # Every row from one log position. Building 400,000 rows takes seconds, so they are built
    # from the graph as of the writer's position rebuilt on a worker thread (as an as-of read
    # is), never on the writer's thread, which keeps serving writes meanwhile; that model is
    # private to this call (not cached: a second whole graph is not kept for later reads), so
    # rows are built as the file is written, never all held at once.
    position = await ctx.graph.query_models(lambda m: m.graph.position)
    time_travel = ctx.time_travel
    if time_travel is not None:
        meta, written = await anyio.to_thread.run_sync(
            lambda: time_travel.query(position, write_from, keep=False)
        )
    else:
        meta, written = await ctx.graph.query_models(write_from)
    value = {
        "backup_file": str(written.path.resolve()),
        "node_count": meta["node_count"],
        "edge_count": meta["edge_count"],
        "size_bytes": written.size_bytes,
        "pruned": written.pruned,
        "retained": written.retained,
    }
    return ok(value, value)


# What the family's other read tools (graph_insight_tools) share with these.
family_of = _family
read_graph_models = _read
answer = _answer

GRAPH_READ_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_QUERY, query_tool),
    ToolSpec(s.GRAPH_ENTITIES, entities_tool),
    ToolSpec(s.GRAPH_STATS, stats_tool),
    ToolSpec(s.GRAPH_CONTRADICTIONS, contradictions_tool),
    ToolSpec(s.GRAPH_EXPORT, export_tool),
)
