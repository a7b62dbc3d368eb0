"""graph_merge_suggestions (contract §8.12): likely duplicates, read only, with the
merge_flagged audit lines.

The scoring is projections.graph_family's (`merge_suggestions`) over the family's embeddings
read model (`EmbeddingService`: the vectors of the entities as they are now, also for an as-of
answer, whose graph then keeps only the candidates alive and of the seed's type there). Here
are the strict arguments (weights an object whose missing keys keep their defaults, limit
above 100 clamped with a warning) and the audit lines, appended to the graph home's
logs/dream-audit.jsonl once the answer is known: a line that cannot be written is an error
naming the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from actors.time_travel import GraphModels
from graphmem.graph_home_files import AUDIT_LOG, append_line
from graphmem.tools import graph_suggest_schemas as s
from graphmem.tools.base import ToolContext, ToolOutcome, ToolSpec, error
from graphmem.tools.graph_args import GraphArgs, check_range, name_text, parse_graph_args
from graphmem.tools.graph_read_tools import answer, family_of, read_graph_models
from projections.graph import GraphProjection
from projections.graph_family import (
    MAX_LIMIT,
    SuggestOptions,
    Weights,
    audit_lines,
    merge_suggestions,
    type_filter,
)
from projections.graph_time import format_ms

if TYPE_CHECKING:
    # The embeddings (and numpy with them) are loaded by a server that serves the graph
    # family (graphmem.app.start_embeddings), not by every server that loads the tools.
    from graphmem.embedding.service import EmbeddingService

__all__ = ["GRAPH_SUGGEST_TOOLS"]

MAX_WEIGHT = 1_000.0


class WeightArgs(GraphArgs, frozen=True):
    embedding: float = 0.4
    neighbor_jaccard: float = 0.4
    name: float = 0.2


class SuggestArgs(GraphArgs, frozen=True):
    entity_id: str | None = None
    entity_type: str | None = None
    min_score: float = 0.8
    min_embedding_similarity: float = 0.85
    limit: int = 20
    weights: WeightArgs = msgspec.field(default_factory=WeightArgs)
    log_to_audit: bool = True
    as_of: Any = None


class ServiceSimilarities:
    """`Similarities` over the embedding service, for the entities alive in `graph`."""

    def __init__(self, service: EmbeddingService, graph: GraphProjection) -> None:
        self._service = service
        self._graph = graph
        self.embedder = service.name

    def most_similar_many(
        self, names: Sequence[str], k: int, least: float
    ) -> list[list[tuple[str, float]]]:
        import numpy as np  # noqa: PLC0415 (numpy only where vectors are: graph_suggest)

        graph = self._graph
        answers: list[list[tuple[str, float]]] = [[] for _ in names]
        asked, vectors, types = [], [], []
        for at, name in enumerate(names):
            vector = self._service.vector_of(name)
            entity_type = graph.entity_type(name)
            if vector is None or entity_type is None:
                continue  # not embedded yet: no candidates (the answer reports what is pending)
            asked.append(at)
            vectors.append(vector)
            types.append(entity_type)
        if not asked:
            return answers
        # A few more than k: the seed itself is among them, and at an as-of point some
        # may not be alive or of this type.
        found = self._service.similar_many(
            np.stack(vectors), 2 * k + 1, entity_types=types, min_similarity=least
        )
        for at, entity_type, nearest in zip(asked, types, found, strict=True):
            same_type = type_filter([entity_type])
            answers[at] = [
                (other, similarity)
                for other, similarity in nearest
                if other != names[at]
                and graph.has_entity(other)
                and same_type(graph.entity_type(other) or "")
            ][:k]
        return answers


async def suggestions_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_merge_suggestions"
    args = parse_graph_args(tool, raw, SuggestArgs)
    family = family_of(ctx, tool)
    check_range(tool, args.min_score, "min_score", 0, 1)
    check_range(tool, args.min_embedding_similarity, "min_embedding_similarity", -1, 1)
    check_range(tool, args.limit, "limit", 1, float("inf"))
    for key in ("embedding", "neighbor_jaccard", "name"):
        check_range(tool, getattr(args.weights, key), f"weights.{key}", 0, MAX_WEIGHT)
    warnings = []
    limit = args.limit
    if limit > MAX_LIMIT:
        warnings.append(f"limit {limit} clamped to {MAX_LIMIT}")
        limit = MAX_LIMIT
    options = SuggestOptions(
        entity_id=None
        if args.entity_id is None
        else name_text(tool, ctx.limits, args.entity_id, "entity_id"),
        entity_type=None
        if args.entity_type is None
        else name_text(tool, ctx.limits, args.entity_type, "entity_type"),
        min_score=args.min_score,
        min_embedding_similarity=args.min_embedding_similarity,
        limit=limit,
        weights=Weights(args.weights.embedding, args.weights.neighbor_jaccard, args.weights.name),
    )

    service = family.embeddings
    if service is None:
        return error(
            "graph_merge_suggestions needs the embedding service, which runs in a served "
            "graphmem process (graphmem serve); it is not running here."
        )

    def suggest(models: GraphModels, _: int | None) -> dict[str, Any]:
        graph = models.graph
        return merge_suggestions(graph, options, ServiceSimilarities(service, graph))

    value, point = await read_graph_models(ctx, tool, args.as_of, suggest)
    if args.log_to_audit and value["suggestions"]:
        timestamp = format_ms(family.now_ms())
        lines = b"".join(
            msgspec.json.encode({"event": "merge_flagged", "timestamp": timestamp, **line}) + b"\n"
            for line in audit_lines(value)
        )
        path = family.home / AUDIT_LOG
        try:
            await anyio.to_thread.run_sync(append_line, path, lines)
        except OSError as problem:
            return error(
                f"graph_merge_suggestions could not append its merge_flagged lines to {path} "
                f"({problem.strerror}). Make the graph home's logs folder writable, or call "
                "again with log_to_audit false."
            )
    # Entities new or changed since their vector was made have none or an old one yet.
    value["pending_embeddings"] = service.pending()
    if warnings:
        value["warnings"] = warnings
    return answer(value, point)


GRAPH_SUGGEST_TOOLS: tuple[ToolSpec, ...] = (ToolSpec(s.GRAPH_MERGE_SUGGESTIONS, suggestions_tool),)
