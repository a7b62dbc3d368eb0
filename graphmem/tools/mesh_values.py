"""The mesh family's JSON shapes of nodes, edges and graphs, and its neighbour expansion.

A node is an entity (`nodeType` its type, `metadata` its observations) and an edge a relation
(`edgeType` its type, with its weight). search_nodes and open_nodes answer with the matched
nodes plus their neighbours (as MemoryMesh does): the matches in the order given, then every other
node at the far end of an edge touching a match (listing order), and every edge touching a
match; an edge between two neighbours is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.graph import EntityView, GraphProjection, RelationView

__all__ = [
    "edge_value",
    "mesh_graph",
    "neighbourhood",
    "node_value",
]


def node_value(e: EntityView) -> dict[str, Any]:
    # A view's observation list is its own copy already.
    return {"name": e.name, "nodeType": e.entity_type, "metadata": e.observations}


def edge_value(r: RelationView) -> dict[str, Any]:
    return {
        "from": r.from_entity,
        "to": r.to_entity,
        "edgeType": r.relation_type,
        "weight": r.weight,
    }


def mesh_graph(graph: GraphProjection) -> dict[str, Any]:
    """The whole graph: every node, then every edge, in listing order."""
    return {
        "nodes": [node_value(e) for e in graph.entities()],
        "edges": [edge_value(r) for r in graph.relations()],
    }


def neighbourhood(graph: GraphProjection, matches: Sequence[EntityView]) -> dict[str, Any]:
    """`matches` (alive nodes, each once) with their neighbours and the edges touching them."""
    names = [m.name for m in matches]
    matched = set(names)
    edges = graph.relations_of_any(names)
    # A visible edge has both endpoints alive, so every neighbour named here exists.
    others = {
        name for edge in edges for name in (edge.from_entity, edge.to_entity) if name not in matched
    }
    neighbours = graph.entities_named(others, listing_order=True)
    return {
        "nodes": [node_value(e) for e in (*matches, *neighbours)],
        "edges": [edge_value(r) for r in edges],
    }
