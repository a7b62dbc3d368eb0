"""graph_communities (contract §8.20): greedy seeded breadth-first clustering over strong edges.

Strong edges are current edges whose shown (decayed) weight is above the threshold, strictly,
direction ignored; a self-loop connects nothing and is left out. Hubs are the entities with at
least 2 strong edges, by strong degree (descending), the sum of their strong weights
(descending), then id; the first 100. Each hub in turn, while communities are wanted and it is
not yet assigned, grows a community breadth-first up to `max_hops`, never entering an entity
an earlier community holds; members are the hub, then the reached entities by distance, then
name. One smaller than `min_size` is dropped and its members stay free for later ones.

The answer for a set of arguments is kept by the FamilyIndex until the graph changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._index import family_index
from projections.graph_family._values import Reading

__all__ = ["MAX_HUBS", "MAX_SHOWN_MEMBERS", "CommunityOptions", "graph_communities", "hubs"]

MAX_HUBS = 100
MAX_SHOWN_MEMBERS = 30
_MICRO = 1_000_000


@dataclass(frozen=True)
class CommunityOptions:
    weight_threshold: float = 0.4
    max_communities: int = 10
    max_hops: int = 3
    min_size: int = 2


Adjacency = dict[str, set[str]]


def strong_adjacency(graph: GraphProjection, threshold: float) -> tuple[Adjacency, Counter[str]]:
    """Neighbours over strong edges, and the hubs' rank: strong degree, then the sum of strong
    weights in millionths (exact), packed in one number per entity with 2 or more."""
    adjacency: Adjacency = {}
    degree: Counter[str] = Counter()
    weight: Counter[str] = Counter()
    for (source, target, _), entry in family_index(graph).relation_entries().items():
        if not entry.current or entry.shown <= threshold or source == target:
            continue
        adjacency.setdefault(source, set()).add(target)
        adjacency.setdefault(target, set()).add(source)
        degree[source] += 1
        degree[target] += 1
        weight[source] += entry.weight_micro
        weight[target] += entry.weight_micro
    return adjacency, _ranked(degree, weight)


def _ranked(degree: Counter[str], weight: Counter[str]) -> Counter[str]:
    # Packs the ranking into one Counter the caller orders: degree, then weight sum.
    return Counter({name: d * (1 << 48) + weight[name] for name, d in degree.items() if d >= 2})


def hubs(rank: Counter[str], entity_id: Any) -> list[str]:
    """Entities with at least 2 strong edges, by degree, weight sum (both descending), then
    id; the first MAX_HUBS."""
    ordered = sorted(rank, key=lambda name: (-rank[name], entity_id(name)))
    return ordered[:MAX_HUBS]


def grow(
    adjacency: Adjacency, seed: str, max_hops: int, taken: set[str] | dict[str, int]
) -> list[str]:
    """The seed, then the entities reached breadth-first within `max_hops` (never one in
    `taken`), by distance then name."""
    members = [seed]
    seen = {seed}
    frontier = [seed]
    for _ in range(max_hops):
        reached: set[str] = set()
        for name in frontier:
            for other in adjacency.get(name, ()):
                if other not in seen and other not in taken:
                    reached.add(other)
        if not reached:
            break
        seen |= reached
        frontier = sorted(reached)
        members.extend(frontier)
    return members


def dominant_type(types: Sequence[str]) -> str:
    """The most frequent type; ties alphabetical."""
    counts = Counter(types)
    return min(counts, key=lambda t: (-counts[t], t))


def graph_communities(graph: GraphProjection, options: CommunityOptions) -> dict[str, Any]:
    index = family_index(graph)
    answer: dict[str, Any] = index.derived(
        ("communities", options), lambda: _communities(graph, options)
    )
    return dict(answer)


def _communities(graph: GraphProjection, options: CommunityOptions) -> dict[str, Any]:
    reading = Reading(graph)
    adjacency, rank = strong_adjacency(graph, options.weight_threshold)
    assigned: dict[str, int] = {}
    communities: list[dict[str, Any]] = []
    for seed in hubs(rank, reading.entity_id):
        if len(communities) >= options.max_communities:
            break
        if seed in assigned:
            continue
        members = grow(adjacency, seed, options.max_hops, assigned)
        if len(members) < options.min_size:
            continue
        number = len(communities) + 1
        for name in members:
            assigned[name] = number
        communities.append(
            {
                "id": number,
                "seed_id": reading.entity_id(seed),
                "seed_name": seed,
                "member_count": len(members),
                "dominant_type": dominant_type([reading.entity_type(n) for n in members]),
                "members": [
                    {"id": reading.entity_id(n), "name": n, "type": reading.entity_type(n)}
                    for n in members[:MAX_SHOWN_MEMBERS]
                ],
            }
        )
    total = family_index(graph).entity_count
    return {
        "communities": communities,
        "total_members": len(assigned),
        "coverage_pct": round(100 * len(assigned) / total, 1) if total else 0,
        "coverage": {
            "total_entities": total,
            "assigned": len(assigned),
            "unassigned": total - len(assigned),
        },
    }
