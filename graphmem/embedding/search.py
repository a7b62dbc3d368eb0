"""graph_search's answer (contract §8.22) from the vector search's candidates, read on the
writer's thread so every seed and edge comes from one graph state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family import Reading, family_index, type_filter
from projections.naming import fold_name

__all__ = ["EXPAND_EDGES", "EXPAND_SEEDS", "SearchOptions", "search_answer"]

EXPAND_SEEDS = 5
EXPAND_EDGES = 30
NOTHING_MATCHED = (
    "nothing matched: lower min_similarity, or use graph_query or graph_entities for names "
    "and keywords"
)


@dataclass(frozen=True)
class SearchOptions:
    query: str
    top_k: int
    min_similarity: float
    entity_types: list[str] | None
    expand: bool
    expand_min_weight: float


def search_answer(
    graph: GraphProjection, options: SearchOptions, candidates: Sequence[tuple[str, float]]
) -> dict[str, Any]:
    """Seeds: the candidates still alive, plus every entity whose name or alias equals the
    query (similarity 1.0: a lexical embedder scores a bare name below its "name — Type"
    text), of the wanted types; by similarity descending, then name; `top_k` of them."""
    reading = Reading(graph)
    keep = None if options.entity_types is None else type_filter(options.entity_types)
    similarity: dict[str, float] = {}
    for name, score in candidates:
        if graph.entity_type(name) is not None:
            similarity[name] = min(1.0, max(0.0, round(score, 6)))
    folded = fold_name(options.query)
    lookup = reading.lookup
    for name in (*lookup.names_folded(folded), *lookup.names_with_alias(folded)):
        similarity[name] = 1.0
    seeds = [
        name
        for name in similarity
        if similarity[name] >= options.min_similarity
        and (keep is None or keep(reading.entity_type(name)))
    ]
    seeds.sort(key=lambda name: (-similarity[name], name))
    seeds = seeds[: options.top_k]
    answer: dict[str, Any] = {
        "query": options.query,
        "seeds": [
            {
                "id": reading.entity_id(name),
                "name": name,
                "type": reading.entity_type(name),
                "confidence": reading.confidence(name),
                "similarity": similarity[name],
                "score": similarity[name],
            }
            for name in seeds
        ],
        "expansion": None,
    }
    if not seeds:
        answer["note"] = NOTHING_MATCHED
    elif options.expand:
        answer["expansion"] = _expansion(graph, reading, seeds, options.expand_min_weight)
    return answer


def _expansion(
    graph: GraphProjection, reading: Reading, seeds: list[str], least: float
) -> dict[str, Any]:
    """The first seeds' current edges stronger than `least` (strictly), strongest first, at
    most 30, each once; edges keep their stored direction (upstream turns incoming facts
    around). Nodes: the non-seed ends, each once, with the first seed that reached them."""
    entries = family_index(graph).relation_entries()
    first = seeds[:EXPAND_SEEDS]
    reached_by: dict[tuple[str, str, str], str] = {}
    for seed in first:
        for key in graph.incident_keys(seed):
            entry = entries.get(key)
            if entry is None or not entry.current or entry.shown <= least:
                continue
            reached_by.setdefault(key, seed)
    keys = sorted(
        reached_by,
        key=lambda k: (-entries[k].shown, reading.entity_id(k[0]), k[2], reading.entity_id(k[1])),
    )[:EXPAND_EDGES]
    seed_set = set(seeds)
    nodes: dict[str, str] = {}
    for seed in first:  # the first seed (in seed order) that reached a node names it
        for key in keys:
            if seed in (key[0], key[1]):
                other = key[1] if key[0] == seed else key[0]
                if other not in seed_set and other not in nodes:
                    nodes[other] = seed
    edges = [
        {
            "from": reading.entity_id(k[0]),
            "to": reading.entity_id(k[1]),
            "from_name": k[0],
            "to_name": k[1],
            "relation": k[2],
            "weight": entries[k].shown,
        }
        for k in keys
    ]
    return {
        "nodes": [
            {
                "id": reading.entity_id(name),
                "name": name,
                "type": reading.entity_type(name),
                "from_seed": reading.entity_id(seed),
            }
            for name, seed in nodes.items()
        ],
        "edges": edges,
        "node_count": len(nodes),
        "edge_count": len(edges),
    }
