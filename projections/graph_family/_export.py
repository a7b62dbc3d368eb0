"""graph_export's content (contract §8.18): one meta row, then a row per entity (by first_seen,
then id), then a row per edge (by from_id, relation, to_id), as read at one log position.

Values are those the read tools show (decayed confidence and weight); no embeddings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._values import Reading
from projections.graph_time import format_ms

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_rows"]

EXPORT_FORMAT = "graphmem-graph"
EXPORT_VERSION = 1


def export_rows(graph: GraphProjection, *, exported_at_ms: int) -> Iterator[dict[str, Any]]:
    """The backup's rows, the meta row first, each built only when the writer asks for it.

    Only the sort keys are held (a few tuples per element); a row is built, written and
    dropped, so exporting 400,000 elements does not hold 400,000 dicts at once. The graph must
    not change while the rows are read (the caller reads a private model, or holds its lock).
    """
    reading = Reading(graph)
    nodes = sorted(
        (reading.first_seen(name), reading.entity_id(name), name) for name in graph.entity_names()
    )
    edges = sorted(
        (reading.entity_id(key[0]), key[2], reading.entity_id(key[1]), key)
        for key in graph.relation_keys()
    )
    yield {
        "record": "meta",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": format_ms(exported_at_ms),
        "node_count": len(nodes),
        "edge_count": len(edges),
    }
    for _, _, name in nodes:
        yield {"record": "node", **reading.node(name)}
    for _, _, _, key in edges:
        facts = reading.edge(key)
        assert facts is not None, "a listed relation key is visible"
        value = reading.edge_value(facts)
        yield {
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
