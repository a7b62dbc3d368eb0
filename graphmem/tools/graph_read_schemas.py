"""Definitions of the graph family's reading tools and graph_export: names, descriptions,
input schemas describing every argument, and annotations (contract §9)."""

from __future__ import annotations

from graphmem.tools.memory_schemas import AS_OF, READ, WRITE, tool
from graphmem.tools.schema import Schema, array, obj, string

__all__ = [
    "GRAPH_CONTRADICTIONS",
    "GRAPH_ENTITIES",
    "GRAPH_EXPORT",
    "GRAPH_QUERY",
    "GRAPH_STATS",
]


def _integer(description: str, low: int, high: int, default: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "minimum": low, "maximum": high}
    if default is not None:
        schema["default"] = default
    schema["description"] = description
    return schema


def _number(description: str, default: float | None = None) -> Schema:
    schema: Schema = {"type": "number", "minimum": 0, "maximum": 1}
    if default is not None:
        schema["default"] = default
    schema["description"] = description
    return schema


def _boolean(description: str, default: bool) -> Schema:
    return {"type": "boolean", "default": default, "description": description}


def _enum(description: str, values: list[str], default: str) -> Schema:
    return {"type": "string", "enum": values, "default": default, "description": description}


GRAPH_AS_OF: Schema = {
    **AS_OF,
    "description": AS_OF["description"] + "; the answer then says which point it read (as_of)",
}

GRAPH_QUERY = tool(
    "graph_query",
    "Query Graph",
    "Traverse the knowledge graph from one or more entities and return the subgraph around "
    "them with weights: nodes (starts first, then by distance and edge strength) and the "
    "edges between them. Names resolve exactly, case-insensitively, by alias or by id; an "
    "unknown name falls back to the best keyword match. Edges weaker than min_weight, and "
    "superseded edges unless current_only is false, are not followed.",
    obj(
        {
            "entities": array(
                string(), "Names, aliases or ids of the entities to start from (1-100)"
            ),
            "entity_types": array(
                string(),
                "Only return nodes of these types (the walk passes through every type); "
                "canonical types match case-insensitively",
            ),
            "max_hops": _integer("How many edges away from a start to go", 0, 4, 2),
            "min_weight": _number("Follow only edges at least this strong", 0.3),
            "limit": _integer("The most distinct nodes to return", 1, 200, 20),
            "project_context": string(
                "A project's name or a directory inside it: edges within two hops of that "
                "project rank higher (effective_weight x1.3 within one hop, x1.15 at two)"
            ),
            "context_level": _enum(
                "full: node and edge objects and source files; minimal: id, type, name and "
                "confidence of each node and the edge count; relations-only: id, type and "
                "name of each node and the edges",
                ["minimal", "full", "relations-only"],
                "full",
            ),
            "current_only": _boolean(
                "Follow only current edges (not superseded); false includes superseded ones",
                default=True,
            ),
            "as_of": GRAPH_AS_OF,
        },
        ["entities"],
    ),
    None,
    READ,
)

GRAPH_ENTITIES = tool(
    "graph_entities",
    "List Graph Entities",
    "Search or list entities with their confidence, mention count, times and edge count. "
    "With search, entities whose name, id or alias has a word starting with each query word, "
    "best match first; without it, every entity ordered by sort_by. total counts every match "
    "of search, type and min_confidence before limit.",
    obj(
        {
            "search": string("Words to find: each must start a word of the name, id or an alias"),
            "type": string("Only entities of this type (canonical types match case-insensitively)"),
            "min_confidence": _number("Only entities at least this confident"),
            "sort_by": _enum(
                "The order without search: confidence or last_seen (newest first), or name",
                ["confidence", "last_seen", "name"],
                "confidence",
            ),
            "limit": _integer("The most entities to return", 1, 200, 20),
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)

GRAPH_STATS = tool(
    "graph_stats",
    "Graph Statistics",
    "Counts of entities by type and edges by relation type (current and superseded), the "
    "average edge weight, orphaned and stale entities, unresolved contradictions, the last "
    "dream run and the document queue's counts.",
    obj({"as_of": GRAPH_AS_OF}),
    None,
    READ,
)

GRAPH_CONTRADICTIONS = tool(
    "graph_contradictions",
    "List Contradictions",
    "The CONTRADICTS edges between entities, newest detected_date first, with their "
    "description. A contradiction is unresolved unless its resolved property is true; write "
    "resolved: true with graph_relate to resolve one.",
    obj(
        {
            "include_resolved": _boolean("Also list contradictions marked resolved", default=False),
            "include_conflicts": _boolean(
                "Also return `conflicts`: the one conflict view, side by side: replica writes "
                "that lost last-writer-wins, edges superseded by a newer valid_at (with the "
                "edge that superseded them) and these contradictions, each saying which side "
                "is current and why (newest first, at most 50 of each kind; counts are "
                "complete)",
                default=False,
            ),
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)

GRAPH_EXPORT = tool(
    "graph_export",
    "Export Graph Backup",
    "Write the whole graph as a JSONL backup file (backups/backup-<UTC time>[-<label>].jsonl "
    "in the graph home; never overwrites one), then delete all but the newest `keep` backups.",
    obj(
        {
            "keep": _integer("How many backups to keep, newest first", 1, 30, 14),
            "label": string(
                "A label for the file name (letters, digits and -; other characters become -; "
                "at most 64 characters)"
            ),
        }
    ),
    None,
    WRITE,
)
