"""graph_query's traversal (contract §8.1): from resolved starts, breadth-first and undirected,
through edges heavy enough (and current, by default), to at most `max_hops`.

- Starts: each entry resolves (§3.3; all matches if ambiguous), else falls back to the first
  keyword-search hit, else to the best fuzzy match (`_fuzzy`), else is listed in
  `unresolved`; none at all gives `found: false`.
- An edge belongs to the traversal when both ends were reached and the nearer end is at a
  distance below `max_hops`: exactly the qualifying edges of the nodes expanded.
- Nodes: starts first, then by distance, then by the highest effective weight of a traversal
  edge touching them, then name; `entity_types` filters them (the walk passes through any
  type); `limit` counts distinct nodes.
- Edges: traversal edges with an end among the nodes returned, by effective weight
  (descending), then from, type, to.
- Project affinity: edges within one hop of the project weigh `hop_1` times more in ranking,
  those whose nearer end is two hops away `hop_2` times; distances from the project run over
  current edges of any weight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._entries import RelationEntry
from projections.graph_family._fuzzy import fuzzy_search
from projections.graph_family._index import FamilyIndex
from projections.graph_family._search import keyword_search
from projections.graph_family._types import type_filter
from projections.graph_family._values import EdgeFacts, Reading, rounded

__all__ = ["QueryOptions", "find_project", "graph_query"]

RelationKey = tuple[str, str, str]
CONTEXT_LEVELS = ("minimal", "full", "relations-only")
_FAR = 1 << 30


@dataclass(frozen=True)
class QueryOptions:
    """graph_query's inputs after checking (the tool layer applies defaults and ranges)."""

    entities: Sequence[str]
    entity_types: Sequence[str] | None = None
    max_hops: int = 2
    min_weight: float = 0.3
    limit: int = 20
    project_context: str | None = None
    context_level: str = "full"
    current_only: bool = True
    hop_1_multiplier: float = 1.3
    hop_2_multiplier: float = 1.15


def graph_query(graph: GraphProjection, options: QueryOptions) -> dict[str, Any]:
    """graph_query's answer object for `options` over `graph`."""
    reading = Reading(graph)
    starts, unresolved = _starts(graph, reading, options.entities)
    if not starts:
        return _answer(reading, options, [], [], {}, unresolved, found=False)
    index = family_index(graph)
    entries = index.relation_entries()
    distance, edges = _walk(graph, entries, starts, options)
    multiplier = _affinity(graph, index, reading, options)
    effective = {key: rounded(entry.shown * multiplier(key)) for key, entry in edges.items()}
    best: dict[str, float] = {}
    for key, weight in effective.items():
        for name in (key[0], key[1]):
            if weight > best.get(name, -1.0):
                best[name] = weight
    reached = list(distance)
    if options.entity_types is not None:
        keep = type_filter(options.entity_types)
        reached = [name for name in reached if keep(reading.entity_type(name))]
    reached.sort(key=lambda name: (distance[name], -best.get(name, 0.0), name))
    nodes = reached[: options.limit]
    returned = set(nodes)
    chosen = [key for key in edges if key[0] in returned or key[1] in returned]
    chosen.sort(
        key=lambda key: (
            -effective[key],
            reading.entity_id(key[0]),
            key[2],
            reading.entity_id(key[1]),
        )
    )
    shown: dict[RelationKey, tuple[EdgeFacts, float]] = {}
    for key in chosen:
        facts = reading.edge(key)
        assert facts is not None, "a traversal edge is visible"
        shown[key] = (facts, effective[key])
    return _answer(reading, options, nodes, chosen, shown, unresolved, found=True)


def _starts(
    graph: GraphProjection, reading: Reading, entries: Sequence[str]
) -> tuple[list[str], list[str]]:
    starts: dict[str, None] = {}
    unresolved: list[str] = []
    for entry in entries:
        names = list(graph.resolve_name(entry).names)
        if not names:
            index = family_index(graph)
            names, _ = keyword_search(index, reading.lookup, entry, limit=1)
            if not names:  # then the best fuzzy match: a typo or a spelling variant
                names, _ = fuzzy_search(index, entry, limit=1)
        if names:
            starts.update(dict.fromkeys(names))
        else:
            unresolved.append(entry)
    return list(starts), unresolved


def _walk(
    graph: GraphProjection,
    entries: dict[RelationKey, RelationEntry],
    starts: list[str],
    options: QueryOptions,
) -> tuple[dict[str, int], dict[RelationKey, RelationEntry]]:
    # The index's entries (shown weight, current flag) decide which edges are followed, so
    # an edge the walk refuses costs a dict lookup, not a read of its attributes.
    distance = dict.fromkeys(starts, 0)
    edges: dict[RelationKey, RelationEntry] = {}
    refused: set[RelationKey] = set()
    least = options.min_weight
    current_only = options.current_only
    frontier = starts
    for hop in range(options.max_hops):
        following: list[str] = []
        for name in frontier:
            for key in graph.incident_keys(name):
                if key in edges or key in refused:
                    continue
                entry = entries.get(key)
                if entry is None or entry.shown < least or (current_only and not entry.current):
                    refused.add(key)
                    continue
                edges[key] = entry
                other = key[1] if key[0] == name else key[0]
                if other not in distance:
                    distance[other] = hop + 1
                    following.append(other)
        frontier = following
    return distance, edges


class _Affinity:
    """An edge's multiplier by its nearer end's distance from the project, over current
    edges of any weight: the project's neighbours are found once, and an end's distance only
    when an edge asks (two hops: one of its current neighbours is the project's)."""

    def __init__(
        self,
        graph: GraphProjection,
        entries: dict[RelationKey, RelationEntry],
        project: str,
        options: QueryOptions,
    ) -> None:
        self._graph = graph
        self._entries = entries
        self._hop_1 = options.hop_1_multiplier
        self._hop_2 = options.hop_2_multiplier
        self._near = set(self._neighbours(project))
        self._distance: dict[str, int] = {project: 0}

    def _neighbours(self, name: str) -> list[str]:
        found = []
        for key in self._graph.incident_keys(name):
            entry = self._entries.get(key)
            if entry is not None and entry.current:
                found.append(key[1] if key[0] == name else key[0])
        return found

    def distance(self, name: str) -> int:
        known = self._distance.get(name)
        if known is None:
            if name in self._near:
                known = 1
            elif not self._near.isdisjoint(self._neighbours(name)):
                known = 2
            else:
                known = _FAR
            self._distance[name] = known
        return known

    def __call__(self, key: RelationKey) -> float:
        nearer = min(self.distance(key[0]), self.distance(key[1]))
        if nearer <= 1:
            return self._hop_1
        if nearer == 2:
            return self._hop_2
        return 1.0


def _no_affinity(key: RelationKey) -> float:
    return 1.0


def _affinity(
    graph: GraphProjection, index: FamilyIndex, reading: Reading, options: QueryOptions
) -> Callable[[RelationKey], float]:
    if options.project_context is None:
        return _no_affinity
    project = find_project(graph, index, reading, options.project_context)
    if project is None:
        return _no_affinity
    return _Affinity(graph, index.relation_entries(), project, options)


def find_project(
    graph: GraphProjection, index: FamilyIndex, reading: Reading, context: str
) -> str | None:
    """The Project `context` names: one that resolves from it, else the one whose `directory`
    equals it, contains it, or is a parent folder of it (longest directory first)."""
    is_project = type_filter(["Project"])
    for name in graph.resolve_name(context).names:
        if is_project(reading.entity_type(name)):
            return name
    return index.project_in(context)


def _answer(  # noqa: PLR0917 (the parts of one answer)
    reading: Reading,
    options: QueryOptions,
    nodes: list[str],
    edges: list[RelationKey],
    shown: dict[RelationKey, tuple[EdgeFacts, float]],
    unresolved: list[str],
    *,
    found: bool,
) -> dict[str, Any]:
    level = options.context_level
    answer: dict[str, Any]
    edge_values = [_edge_value(reading, *shown[key]) for key in edges] if level != "minimal" else []
    if level == "minimal":
        answer = {
            "nodes": [
                {
                    "id": reading.entity_id(name),
                    "type": reading.entity_type(name),
                    "name": name,
                    "confidence": reading.confidence(name),
                }
                for name in nodes
            ],
            "edge_count": len(edges),
        }
    elif level == "relations-only":
        answer = {
            "nodes": [
                {"id": reading.entity_id(name), "type": reading.entity_type(name), "name": name}
                for name in nodes
            ],
            "edges": edge_values,
        }
    else:
        node_values = [reading.node(name) for name in nodes]
        sources = [n["source_file"] for n in node_values if n["source_file"] is not None]
        answer = {
            "nodes": node_values,
            "edges": edge_values,
            "source_files": list(dict.fromkeys(sources)),
        }
    if unresolved:
        answer["unresolved"] = unresolved
    if not found:
        answer["found"] = False
    return answer


def _edge_value(reading: Reading, facts: EdgeFacts, effective: float) -> dict[str, Any]:
    value = reading.edge_value(facts)
    value["effective_weight"] = effective
    return value
