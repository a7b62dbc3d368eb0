"""graph_stats' graph part (contract §8.14): counts by type, average weight, orphans,
unresolved contradictions and stale entities, from the FamilyIndex tallies.

Edges count current and superseded ones. `avg_weight` is the mean decayed weight, rounded to
2 places (0 without edges). An entity is stale when its decayed confidence is below
`stale_confidence` and its last_seen more than `stale_days` before `now_ms`. The fields read
from the graph home's files are the tool's to add.
"""

from __future__ import annotations

from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_time import DAY_MS

__all__ = ["SCHEMA_VERSION", "graph_stats"]

SCHEMA_VERSION = "1"


def graph_stats(
    graph: GraphProjection, *, now_ms: int, stale_confidence: float, stale_days: float
) -> dict[str, Any]:
    """`{schema_version, nodes, edges, health}` without the file-derived health fields."""
    index = family_index(graph)
    seen_before = now_ms - round(stale_days * DAY_MS)
    return {
        "schema_version": SCHEMA_VERSION,
        "nodes": {
            "total": index.entity_count,
            "by_type": dict(sorted(index.entities_by_type.items())),
        },
        "edges": {
            "total": index.relation_count,
            "by_type": dict(sorted(index.edge_types().items())),
        },
        "health": {
            "avg_weight": round(index.average_weight(), 2),
            "orphaned_nodes": index.orphans(),
            "unresolved_contradictions": index.unresolved_contradictions(),
            "stale_nodes": index.stale(stale_confidence, seen_before),
        },
    }
