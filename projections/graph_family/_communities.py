"""graph_communities (contract §8.20): greedy seeded breadth-first clustering over strong edges.

Strong edges are current edges whose shown (decayed) weight is above the threshold, strictly,
direction ignored; a self-loop connects nothing and is left out. Hubs are the entities with at
least 2 strong edges, by strong degree (descending), the sum of their strong weights
(descending), then id; the first 100. Each hub in turn, while communities are wanted and it is
not yet assigned, grows a community breadth-first up to `max_hops`, never entering an entity
an earlier community holds; members are the hub, then the reached entities by distance, then
name. One smaller than `min_size` is dropped and its members stay free for later ones.

The strong edges of a threshold are kept current by re-deriving the entities a write touched
(StrongEdges, a FamilyIndex listener); the answer for a set of arguments is kept until the
graph next changes.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._entries import RelationEntry, RelationKey
from projections.graph_family._values import Reading

__all__ = [
    "MAX_HUBS",
    "MAX_SHOWN_MEMBERS",
    "CommunityOptions",
    "StrongEdges",
    "graph_communities",
    "hubs",
]

MAX_HUBS = 100
MAX_SHOWN_MEMBERS = 30


@dataclass(frozen=True)
class CommunityOptions:
    weight_threshold: float = 0.4
    max_communities: int = 10
    max_hops: int = 3
    min_size: int = 2


Adjacency = dict[str, set[str]]
# Thresholds whose strong edges are kept at once (callers usually keep to the default).
KEPT_THRESHOLDS = 4


class StrongEdges:
    """Per entity, its neighbours over strong edges and its strong degree and weight sum (in
    millionths, so sums are exact), for one threshold; kept current by re-deriving the
    entities the FamilyIndex says a write touched (both ends of a changed edge are), rebuilt
    at a new decay run. A self-loop connects nothing and is left out."""

    def __init__(self, graph: GraphProjection, threshold: float) -> None:
        self._graph = graph
        self.threshold = threshold
        self.adjacency: Adjacency = {}
        self.degree: dict[str, int] = {}
        self.weight: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._everything = True

    def touched(self, names: set[str], *, everything: bool) -> None:
        if everything:
            self._everything = True
            self._dirty = set()
        elif not self._everything:
            self._dirty |= names

    def refresh(self) -> None:
        if self._everything:
            self._everything = False
            self._dirty = set()
            self._build()
            return
        dirty, self._dirty = self._dirty, set()
        entries = family_index(self._graph).relation_entries()
        for name in dirty:
            self._derive(name, entries)

    def _build(self) -> None:
        adjacency: Adjacency = {}
        degree: Counter[str] = Counter()
        weight: Counter[str] = Counter()
        threshold = self.threshold
        for (source, target, _), entry in family_index(self._graph).relation_entries().items():
            if not entry.current or entry.shown <= threshold or source == target:
                continue
            adjacency.setdefault(source, set()).add(target)
            adjacency.setdefault(target, set()).add(source)
            degree[source] += 1
            degree[target] += 1
            weight[source] += entry.weight_micro
            weight[target] += entry.weight_micro
        self.adjacency, self.degree, self.weight = adjacency, dict(degree), dict(weight)

    def _derive(self, name: str, entries: dict[RelationKey, RelationEntry]) -> None:
        neighbours: set[str] = set()
        degree = weight = 0
        for key in self._graph.incident_keys(name):
            entry = entries.get(key)
            source, target, _ = key
            if entry is None or not entry.current or entry.shown <= self.threshold:
                continue
            if source == target:
                continue
            neighbours.add(target if source == name else source)
            degree += 1
            weight += entry.weight_micro
        if degree:
            self.adjacency[name] = neighbours
            self.degree[name] = degree
            self.weight[name] = weight
        else:
            self.adjacency.pop(name, None)
            self.degree.pop(name, None)
            self.weight.pop(name, None)


class KeptStrongEdges:
    """StrongEdges of the last few thresholds asked for (a FamilyIndex listener)."""

    def __init__(self, graph: GraphProjection) -> None:
        self._graph = graph
        self._kept: dict[float, StrongEdges] = {}

    def touched(self, names: set[str], *, everything: bool) -> None:
        for edges in self._kept.values():
            edges.touched(names, everything=everything)

    def at(self, threshold: float) -> StrongEdges:
        found = self._kept.pop(threshold, None)
        if found is None:
            found = StrongEdges(self._graph, threshold)
            while len(self._kept) >= KEPT_THRESHOLDS:
                del self._kept[next(iter(self._kept))]
        self._kept[threshold] = found  # the newest last
        found.refresh()
        return found


def hubs(edges: StrongEdges, entity_id: Callable[[str], str]) -> list[str]:
    """Entities with at least 2 strong edges, by degree, weight sum (both descending), then
    id; the first MAX_HUBS. Ids are computed only for the best ranks (and their ties)."""
    weight = edges.weight
    # Degree and weight sum in one number (a sum stays below 2^48 up to 2^28 edges).
    rank = {name: d * (1 << 48) + weight[name] for name, d in edges.degree.items() if d >= 2}
    best = heapq.nlargest(MAX_HUBS, rank.values())
    if not best:
        return []
    floor = best[-1]
    chosen = [name for name, value in rank.items() if value >= floor]
    chosen.sort(key=lambda name: (-rank[name], entity_id(name)))
    return chosen[:MAX_HUBS]


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
    kept = family_index(graph).listener("graph_communities", lambda: KeptStrongEdges(graph))
    edges = kept.at(options.weight_threshold)
    adjacency = edges.adjacency
    assigned: dict[str, int] = {}
    communities: list[dict[str, Any]] = []
    for seed in hubs(edges, reading.entity_id):
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
