"""graph_export's content (contract §8.18): one meta row, then a row per entity (by first_seen,
then id), then a row per edge (by from_id, relation, to_id), as read at one log position.

Values are those the read tools show (decayed confidence and weight); no embeddings.
"""

from __future__ import annotations

from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._values import Reading
from projections.graph_time import format_ms

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_rows"]

EXPORT_FORMAT = "graphmem-graph"
EXPORT_VERSION = 1


def export_rows(graph: GraphProjection, *, exported_at_ms: int) -> list[dict[str, Any]]:
    """The backup's rows, the meta row first."""
    reading = Reading(graph)
    nodes = []
    for name in graph.entity_names():
        node = reading.node(name)
        nodes.append((reading.first_seen(name), node["id"], {"record": "node", **node}))
    nodes.sort(key=lambda row: row[:2])
    edges = []
    for key in graph.relation_keys():
        facts = reading.edge(key)
        if facts is None:
            continue
        value = reading.edge_value(facts)
        row = {
            "record": "edge",
            "from_id": value["from"],
            "to_id": value["to"],
            "relation": value["type"],
            "weight": value["weight"],
            "last_confirmed": value["last_confirmed"],
            "valid_at": value["valid_at"],
            "invalid_at": value["invalid_at"],
            "ingested_at": value["ingested_at"],
            "source_session": value["source_session"],
            "source_transcript": value["source_transcript"],
            "source_type": value["source_type"],
            "evidence": value["evidence"],
            "properties": value["properties"],
        }
        edges.append((row["from_id"], row["relation"], row["to_id"], row))
    edges.sort(key=lambda row: row[:3])
    meta = {
        "record": "meta",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": format_ms(exported_at_ms),
        "node_count": len(nodes),
        "edge_count": len(edges),
    }
    return [meta, *(row[2] for row in nodes), *(row[3] for row in edges)]
