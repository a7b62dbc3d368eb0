"""Definition of graph_merge_suggestions (contract §8.12): name, description, input schema and
annotations (§9: read only, its audit lines being a log, not a change to the graph)."""

from __future__ import annotations

from graphmem.tools.graph_read_schemas import GRAPH_AS_OF
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import Schema, obj, string

__all__ = ["GRAPH_MERGE_SUGGESTIONS"]


def _number(description: str, low: float, high: float | None, default: float) -> Schema:
    schema: Schema = {"type": "number", "minimum": low, "default": default}
    if high is not None:
        schema["maximum"] = high
    schema["description"] = description
    return schema


GRAPH_MERGE_SUGGESTIONS = tool(
    "graph_merge_suggestions",
    "Suggest Merges",
    "Find likely duplicate entities to review (read only). Seeds (the entity, the type, or "
    "the 200 best-connected entities) are paired with the 10 most similar entities of the "
    "same type by embedding; each pair is scored from the embedding cosine, the overlap of "
    "their neighbours (shared hubs count less) and their name tokens, and kept from "
    "min_score. Each suggestion shows its signals and shared neighbours; the embedder used is "
    "named. With log_to_audit, one merge_flagged line per suggestion goes to the dream audit "
    "log.",
    obj(
        {
            "entity_id": string("Only this entity's duplicates (a name, alias or id)"),
            "entity_type": string("Only entities of this type"),
            "min_score": _number("Lowest score to suggest", 0, 1, 0.8),
            "min_embedding_similarity": _number(
                "Lowest embedding cosine for a candidate pair", -1, 1, 0.85
            ),
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": 20,
                "description": "The most suggestions (above 100: 100)",
            },
            "weights": {
                "type": "object",
                "properties": {
                    "embedding": _number("Weight of the embedding cosine", 0, None, 0.4),
                    "neighbor_jaccard": _number(
                        "Weight of the hub-weighted neighbour overlap", 0, None, 0.4
                    ),
                    "name": _number("Weight of the name-token overlap", 0, None, 0.2),
                },
                "additionalProperties": False,
                "description": "The score's weights; a key left out keeps its default",
            },
            "log_to_audit": {
                "type": "boolean",
                "default": True,
                "description": "Append a merge_flagged line per suggestion to the audit log",
            },
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)
