"""Definitions of graph_search and graph_reembed (contract §8.22, §8.23, §9)."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import Schema, array, obj, string

__all__ = ["GRAPH_REEMBED", "GRAPH_SEARCH"]

# graph_reembed writes no event (vectors are derived data), and repeating it changes nothing.
REEMBEDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _schema(kind: str, description: str, default: object, low: float, high: float) -> Schema:
    return {
        "type": kind,
        "minimum": low,
        "maximum": high,
        "default": default,
        "description": description,
    }


GRAPH_SEARCH = tool(
    "graph_search",
    "Search Graph by Meaning",
    "Find entities by similarity of meaning to a query (embeddings of each entity's name, "
    "type and description), then the strongest edges around the best ones. An entity whose "
    "name or alias equals the query has similarity 1.0. The answer names the embedder (hash "
    "is lexical: spelling variants, not synonyms) and how many entities are still waiting "
    "to be embedded (pending).",
    obj(
        {
            "query": string("What to look for, in words"),
            "top_k": _schema("integer", "How many seed entities at most", 10, 1, 50),
            "min_similarity": _schema(
                "number", "The least similarity (cosine) of a seed", 0.5, 0, 1
            ),
            "entity_types": array(
                string(), "Only seeds of these types (canonical types case-insensitively)"
            ),
            "expand": {
                "type": "boolean",
                "default": True,
                "description": "Also return the strongest current edges of the first 5 seeds",
            },
            "expand_min_weight": _schema(
                "number", "Expand only along edges stronger than this", 0.3, 0, 1
            ),
        },
        required=["query"],
    ),
    None,
    READ,
)

GRAPH_REEMBED = tool(
    "graph_reembed",
    "Re-embed Entities",
    "Embed now every entity whose embedding is missing or stale (made by another embedder or "
    "from an older text); with force, every entity. Embeddings are derived data, cached in "
    "the data dir: nothing is written to the graph. Answers how many were embedded, skipped "
    "(already current) and failed.",
    obj(
        {
            "force": {
                "type": "boolean",
                "default": False,
                "description": "Embed every entity, even those whose embedding is current",
            }
        }
    ),
    None,
    REEMBEDS,
)
