"""graph_search and graph_reembed (contract §8.22, §8.23): the embeddings' two tools.

The query is embedded and the vectors searched on a worker thread (the semantic model takes
milliseconds; the writer never waits for it); the seeds and their edges are then read on the
writer in one go. Both answers name the embedder and say how many entities are still waiting
to be embedded (`pending`): a search made just after a write may not see that write yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from graphmem.embedding.search import SearchOptions, search_answer
from graphmem.tools import graph_search_schemas as s
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

if TYPE_CHECKING:
    # The embeddings (and numpy with them) are loaded by a server that serves the graph
    # family (graphmem.app.start_embeddings), not by every server that loads the tools.
    from graphmem.embedding.service import EmbeddingService

__all__ = ["GRAPH_SEARCH_TOOLS"]

MAX_TOP_K = 50
# Candidates asked of the vector search beyond top_k: an entity deleted since it was last
# embedded is dropped when the graph is read, and must not leave the answer short.
SPARE_CANDIDATES = 16


class SearchArgs(GraphArgs, frozen=True):
    query: str
    top_k: int = 10
    min_similarity: float = 0.5
    entity_types: list[str] | None = None
    expand: bool = True
    expand_min_weight: float = 0.3


class ReembedArgs(GraphArgs, frozen=True):
    force: bool = False


def _service(ctx: ToolContext, tool: str) -> EmbeddingService:
    family = ctx.family
    if family is None or family.embeddings is None:
        raise ToolInputError(
            invalid_arguments(
                tool, "the graph family's embeddings are not served; start with --tools graph"
            )
        )
    return family.embeddings


async def search_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_search"
    args = parse_graph_args(tool, raw, SearchArgs)
    service = _service(ctx, tool)
    check_text(tool, args.query, "query", ctx.limits.max_query_chars, multiline=False)
    if not args.query.strip():
        raise ToolInputError(invalid_arguments(tool, "query is empty; give words to look for"))
    check_range(tool, args.top_k, "top_k", 1, MAX_TOP_K)
    check_range(tool, args.min_similarity, "min_similarity", 0, 1)
    check_range(tool, args.expand_min_weight, "expand_min_weight", 0, 1)
    types = None
    if args.entity_types:  # an empty list filters nothing, like an omitted one
        types = [
            name_text(tool, ctx.limits, given, f"entity_types[{i}]")
            for i, given in enumerate(args.entity_types)
        ]
    options = SearchOptions(
        query=args.query,
        top_k=args.top_k,
        min_similarity=args.min_similarity,
        entity_types=types,
        expand=args.expand,
        expand_min_weight=args.expand_min_weight,
    )

    def nearest() -> list[tuple[str, float]]:
        vector = service.embed_query(args.query)
        return service.similar(
            vector,
            args.top_k + SPARE_CANDIDATES,
            entity_types=types,
            min_similarity=args.min_similarity,
        )

    candidates = await anyio.to_thread.run_sync(nearest)
    found = await ctx.graph.query_models(lambda m: search_answer(m.graph, options, candidates))
    value = {
        "query": found.pop("query"),
        "embedder": service.name,
        **found,
        "pending": service.pending(),
    }
    return ok(value, value)


async def reembed_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_reembed"
    args = parse_graph_args(tool, raw, ReembedArgs)
    service = _service(ctx, tool)
    done = await anyio.to_thread.run_sync(lambda: service.reembed(force=args.force))
    value = {
        "embedded": done.embedded,
        "skipped": done.skipped,
        "errors": done.errors,
        "force": args.force,
        "embedder": service.name,
        "scope": "all",
        "pending": service.pending(),
    }
    return ok(value, value)


GRAPH_SEARCH_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_SEARCH, search_tool),
    ToolSpec(s.GRAPH_REEMBED, reembed_tool),
)
