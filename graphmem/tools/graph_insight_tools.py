"""The graph family's insight tools: graph_validate, graph_communities and graph_build_context
(contract §8.19-8.21), each taking `as_of`.

The reads are projections.graph_family's; here are the strict arguments, the schema view's
problems handed to validation, and build context's files (pending work, the last dream run),
which are read as they are now, also for an as-of answer: the graph home is not in the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from actors.time_travel import GraphModels
from graphmem.graph_home_files import home_facts, last_dream, unprocessed_transcripts
from graphmem.tools import graph_insight_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_text,
    invalid_arguments,
)
from graphmem.tools.graph_args import GraphArgs, check_range, name_text, parse_graph_args
from graphmem.tools.graph_read_tools import answer, family_of, read_graph_models
from projections.graph_family import (
    CommunityOptions,
    QueryOptions,
    graph_communities,
    graph_contradictions,
    graph_query,
    graph_stats,
    graph_validate,
    recent_additions,
    top_hubs,
)
from projections.graph_time import format_ms, parse_time
from projections.schema_view import Problem

__all__ = ["GRAPH_INSIGHT_TOOLS"]

MAX_ISSUES = 200
MAX_COMMUNITIES = 30
MAX_COMMUNITY_HOPS = 4
TOPIC_HOPS = 2
TOPIC_MIN_WEIGHT = 0.3
TOPIC_NODES = 15
TOPIC_EDGES = 25
HOUR_MS = 3_600_000


class ValidateArgs(GraphArgs, frozen=True):
    source_session: str | None = None
    max_issues: int = 50
    as_of: Any = None


class CommunitiesArgs(GraphArgs, frozen=True):
    weight_threshold: float = 0.4
    max_communities: int = 10
    max_hops: int = 3
    min_size: int = 2
    as_of: Any = None


class BuildContextArgs(GraphArgs, frozen=True):
    topic: str | None = None
    project_cwd: str | None = None
    recent_days: int = 7
    hub_count: int = 5
    include_contradictions: bool = True
    max_recent: int = 15
    as_of: Any = None


def schema_details(problems: Sequence[Problem]) -> dict[str, list[str]]:
    """The schema view's problems, by entity: each problem's detail."""
    found: dict[str, list[str]] = {}
    for problem in problems:
        found.setdefault(problem.entity, []).append(problem.detail)
    return found


# --- graph_validate ---------------------------------------------------------------------------


async def validate_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_validate"
    args = parse_graph_args(tool, raw, ValidateArgs)
    family_of(ctx, tool)
    session = args.source_session
    if session is not None:
        check_text(tool, session, "source_session", ctx.limits.max_name_chars, multiline=False)
        session = session.strip()
        if not session:
            raise ToolInputError(
                invalid_arguments(tool, "source_session is empty; give a session id or omit it")
            )
    check_range(tool, args.max_issues, "max_issues", 1, MAX_ISSUES)

    def validate(models: GraphModels, _: int | None) -> dict[str, Any]:
        return graph_validate(
            models.graph,
            schema_problems=schema_details(models.schema_view.problems()),
            source_session=session,
            max_issues=args.max_issues,
        )

    value, point = await read_graph_models(ctx, tool, args.as_of, validate)
    return answer(value, point)


# --- graph_communities ------------------------------------------------------------------------


async def communities_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_communities"
    args = parse_graph_args(tool, raw, CommunitiesArgs)
    family_of(ctx, tool)
    check_range(tool, args.weight_threshold, "weight_threshold", 0, 1)
    check_range(tool, args.max_communities, "max_communities", 1, MAX_COMMUNITIES)
    if args.max_hops < 1:
        raise ToolInputError(
            invalid_arguments(tool, f"max_hops is {args.max_hops}; it must be 1 or more")
        )
    if args.min_size < 2:
        raise ToolInputError(
            invalid_arguments(tool, f"min_size is {args.min_size}; it must be 2 or more")
        )
    warnings: list[str] = []
    hops = args.max_hops
    if hops > MAX_COMMUNITY_HOPS:
        warnings.append(f"max_hops {hops} clamped to {MAX_COMMUNITY_HOPS}")
        hops = MAX_COMMUNITY_HOPS
    options = CommunityOptions(
        weight_threshold=args.weight_threshold,
        max_communities=args.max_communities,
        max_hops=hops,
        min_size=args.min_size,
    )
    value, point = await read_graph_models(
        ctx, tool, args.as_of, lambda m, _: graph_communities(m.graph, options)
    )
    if warnings:
        value["warnings"] = warnings
    return answer(value, point)


# --- graph_build_context ----------------------------------------------------------------------


def _topic_options(ctx: ToolContext, tool: str, args: BuildContextArgs) -> QueryOptions | None:
    if args.topic is None:
        return None
    topic = name_text(tool, ctx.limits, args.topic, "topic")
    project = args.project_cwd
    if project is not None:
        check_text(tool, project, "project_cwd", ctx.limits.max_query_chars, multiline=False)
        project = project.strip() or None
    affinity = family_of(ctx, tool).tunables.affinity
    return QueryOptions(
        entities=[topic],
        max_hops=TOPIC_HOPS,
        min_weight=TOPIC_MIN_WEIGHT,
        limit=TOPIC_NODES,
        project_context=project,
        context_level="full",
        hop_1_multiplier=affinity.hop_1_multiplier,
        hop_2_multiplier=affinity.hop_2_multiplier,
    )


def _neighbourhood(found: dict[str, Any], topic: str) -> dict[str, Any]:
    nodes, edges = found["nodes"], found["edges"]
    value: dict[str, Any] = {
        "topic": topic,
        "node_count": len(nodes),
        "edge_count": len(edges),
        "nodes": nodes[:TOPIC_NODES],
        "edges": edges[:TOPIC_EDGES],
    }
    if found.get("found") is False:
        value["found"] = False
    return value


async def build_context_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_build_context"
    args = parse_graph_args(tool, raw, BuildContextArgs)
    family = family_of(ctx, tool)
    check_range(tool, args.recent_days, "recent_days", 1, 90)
    check_range(tool, args.hub_count, "hub_count", 1, 20)
    check_range(tool, args.max_recent, "max_recent", 1, 50)
    topic = _topic_options(ctx, tool, args)
    decay = family.tunables.decay
    generated = family.now_ms()

    def context(models: GraphModels, point_ms: int | None) -> dict[str, Any]:
        graph = models.graph
        now = generated if point_ms is None else point_ms
        stats = graph_stats(
            graph, now_ms=now, stale_confidence=decay.stale_confidence, stale_days=decay.stale_days
        )
        health = stats["health"]
        contradictions = None
        if args.include_contradictions:
            contradictions = graph_contradictions(graph, include_resolved=False)["contradictions"]
        return {
            "graph_health": {
                "nodes": stats["nodes"]["total"],
                "edges": stats["edges"]["total"],
                "by_node_type": stats["nodes"]["by_type"],
                "avg_weight": health["avg_weight"],
                "orphaned": health["orphaned_nodes"],
                "stale": health["stale_nodes"],
                "unresolved_contradictions": health["unresolved_contradictions"],
            },
            "recent_additions": recent_additions(
                graph, now_ms=now, days=args.recent_days, max_recent=args.max_recent
            ),
            "top_hubs": top_hubs(graph, hub_count=args.hub_count),
            "contradictions": contradictions,
            "topic_neighbourhood": (
                None
                if topic is None
                else _neighbourhood(graph_query(graph, topic), topic.entities[0])
            ),
        }

    found, point = await read_graph_models(ctx, tool, args.as_of, context)
    files = await anyio.to_thread.run_sync(_files, family.home, family.transcripts_dir, generated)
    value = {
        "generated_at": format_ms(generated),
        "graph_health": found["graph_health"],
        "pending_work": files["pending_work"],
        "last_dream": files["last_dream"],
        "recent_additions": found["recent_additions"],
        "top_hubs": found["top_hubs"],
        "contradictions": found["contradictions"],
        "topic_neighbourhood": found["topic_neighbourhood"],
    }
    return answer(value, point)


def _files(home: Path, transcripts: Path | None, now_ms: int) -> dict[str, Any]:
    facts = home_facts(home)
    last_run = facts.last_dream_run
    hours = None
    if last_run is not None:
        hours = round((now_ms - parse_time(last_run)) / HOUR_MS, 1)
    return {
        "pending_work": {
            "unprocessed_transcripts": (
                0 if transcripts is None else unprocessed_transcripts(home, transcripts)
            ),
            "pending_ingests": facts.pending_ingest_docs,
            "last_dream_run": last_run,
            "hours_since_last_dream": hours,
        },
        "last_dream": last_dream(home),
    }


GRAPH_INSIGHT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_VALIDATE, validate_tool),
    ToolSpec(s.GRAPH_COMMUNITIES, communities_tool),
    ToolSpec(s.GRAPH_BUILD_CONTEXT, build_context_tool),
)
