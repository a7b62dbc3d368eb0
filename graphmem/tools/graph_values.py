"""The official JSON shapes of entities, relations and graphs, built from the read model."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

from projections.graph import EntityView, GraphProjection, RelationKey, RelationView
from projections.read_graph import ReadGraph


def entity_value(e: EntityView) -> dict[str, Any]:
    # A view's observation list is its own copy already.
    return {"name": e.name, "entityType": e.entity_type, "observations": e.observations}


def relation_value(r: RelationView) -> dict[str, Any]:
    return {"from": r.from_entity, "to": r.to_entity, "relationType": r.relation_type}


def whole_graph(graph: GraphProjection) -> dict[str, Any]:
    return {
        "entities": [entity_value(e) for e in graph.entities()],
        "relations": [
            {"from": f, "to": t, "relationType": rt} for f, t, rt in graph.relation_keys()
        ],
    }


def subgraph_value(graph: ReadGraph, entities: Sequence[EntityView]) -> dict[str, Any]:
    """Entities plus every relation with either endpoint among them (official since 2026.7.4)."""
    return subgraph_of(entities, subgraph_keys(graph, entities))


def subgraph_keys(graph: ReadGraph, entities: Sequence[EntityView]) -> list[RelationKey]:
    """(from, to, type) of every visible relation with either endpoint among `entities`."""
    names = [e.name for e in entities]
    # A broad search holds every alive entity: then the relations touching them are all the
    # visible ones, in the same creation order, listed without walking each entity's edges
    # and sorting what they reach (most of a broad search's time at 50,000 entities).
    everyone = len(names) == graph.entity_count() and len(set(names)) == len(names)
    return graph.relation_keys() if everyone else graph.relation_keys_of_any(names)


def subgraph_of(entities: Iterable[EntityView], keys: Iterable[RelationKey]) -> dict[str, Any]:
    """The official {"entities", "relations"} value of these entities and relation keys."""
    return {
        "entities": [entity_value(e) for e in entities],
        "relations": [{"from": f, "to": t, "relationType": rt} for f, t, rt in keys],
    }


def paged(entities: Iterable[EntityView], offset: int, limit: int | None) -> list[EntityView]:
    """A page of `entities` in name order (a stable order a client can walk page by page while
    others write): skip `offset`, then take at most `limit` (None: the rest)."""
    stop = None if limit is None else offset + limit
    return list(islice(sorted(entities, key=_name), offset, stop))


def _name(entity: EntityView) -> str:
    return entity.name
