"""graph_decay's report and graph_prune's selection (contract §6, §8.9, §8.10): pure functions
over a GraphProjection's FamilyIndex.

A decay run never rewrites an element (§6.5): the report compares each value as shown now (by
the newest run) with the value the new run would give, from the values as written and their
reference times, so it is the same however often decay ran before. Both functions read the
values the index keeps; graph_prune's selection is the one rule preview and execute share, so
execute removes exactly what a preview at the same point lists.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from eventstore.events import DecayApplied
from projections.graph import GraphProjection
from projections.graph_decay import newest_run
from projections.graph_family._index import (
    EntityEntry,
    FamilyIndex,
    RelationEntry,
    family_index,
)
from projections.graph_time import DAY_MS

__all__ = [
    "DETAILS_LIMIT",
    "DecayReport",
    "EdgeDrop",
    "NodeDrop",
    "PruneSelection",
    "PruneThresholds",
    "decay_report",
    "prune_selection",
]

DETAILS_LIMIT = 100
_DECIMALS = 6
RelationKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class NodeDrop:
    name: str
    entity_type: str
    old: float
    new: float


@dataclass(frozen=True, slots=True)
class EdgeDrop:
    key: RelationKey
    old: float
    new: float


@dataclass(frozen=True)
class DecayReport:
    """What a run at `at` changes (would change): counts, flags and the largest drops."""

    at: int
    nodes_decayed: int
    edges_decayed: int
    nodes_flagged: int
    edges_below: int
    details: list[NodeDrop] = field(default_factory=list)
    edge_details: list[EdgeDrop] = field(default_factory=list)


@dataclass(frozen=True)
class PruneThresholds:
    """graph_prune's arguments (defaults: the decay tunables)."""

    node_threshold: float = 0.1
    edge_threshold: float = 0.05
    include_orphans: bool = True
    max_age_days: float = 30.0


@dataclass(frozen=True)
class PruneSelection:
    """What a prune removes: edges (sorted by key), then entities with their reason."""

    edges: list[RelationKey]
    nodes: list[tuple[str, str]]  # (name, "low_confidence" | "orphan"), sorted by name


def _decayer(run: DecayApplied, rate: float) -> Callable[[float, int], float]:
    """The value of (base, reference) after `run` at daily `rate`: projections.graph_decay's
    formula with the powers cached (a run's elements share a few hundred day counts)."""
    at = run.at
    floor = 0.01 if run.floor is None else run.floor
    powers: dict[int, float] = {}

    def value(base: float, reference: int) -> float:
        if at < reference:
            return base
        days = (at - reference) // DAY_MS
        if days < 1:
            return base
        power = powers.get(days)
        if power is None:
            power = powers[days] = math.pow(rate, days)
        decayed = round(max(floor, base * power), _DECIMALS)
        return decayed if decayed < base else base

    return value


def _no_decay(base: float, reference: int) -> float:
    return base


def decay_report(
    graph: GraphProjection,
    run: DecayApplied,
    *,
    node_threshold: float,
    edge_threshold: float,
    limit: int = DETAILS_LIMIT,
) -> DecayReport:
    """The report of a decay run `run` over the graph as it is (§8.9), flags per §6.3 on the
    new values; a run older than the newest one already applied changes nothing.

    An element whose whole-day count is the same under the run shown now and under `run`
    (same rates) keeps its value, so only elements that cross a day boundary are computed."""
    index = family_index(graph)
    relations = index.relation_entries()
    shown = index.run
    current = newest_run([run, shown] if shown is not None else [run])
    effective = run if current is run else shown
    assert effective is not None
    at = effective.at
    same_floor = shown is not None and shown.floor == effective.floor
    shown_at = shown.at if shown is not None else 0
    by_type: dict[str, tuple[Callable[[float, int], float], bool]] = {}
    weak: list[str] = []  # entities whose new confidence is below the node threshold
    node_drops: list[tuple[float, str, NodeDrop]] = []
    for entry in index.entries():
        if entry.rule:
            continue
        found = by_type.get(entry.entity_type)
        if found is None:
            folded = entry.entity_type.casefold()
            rate = effective.rates.get(folded, effective.rate)
            same = same_floor and shown is not None and shown.rates.get(folded, shown.rate) == rate
            found = by_type[entry.entity_type] = (_decayer(effective, rate), same)
        value, same = found
        reference = entry.last_seen
        if same and (at - reference) // DAY_MS == (shown_at - reference) // DAY_MS:
            new = entry.confidence
        else:
            new = value(entry.base_confidence, reference)
            if new != entry.confidence:
                drop = NodeDrop(entry.name, entry.entity_type, entry.confidence, new)
                node_drops.append((entry.confidence - new, entry.name, drop))
        if new < node_threshold:
            weak.append(entry.name)
    edge_rate = effective.edge_rate
    edge_value = _no_decay if edge_rate is None else _decayer(effective, edge_rate)
    same_edges = same_floor and shown is not None and shown.edge_rate == edge_rate
    edge_drops: list[tuple[float, RelationKey, EdgeDrop]] = []
    below = 0
    for key, relation in relations.items():
        if relation.exempt:
            continue
        reference = relation.last_confirmed
        if same_edges and (at - reference) // DAY_MS == (shown_at - reference) // DAY_MS:
            new = relation.shown  # the same whole days (or both runs before the reference)
        else:
            new = edge_value(relation.weight, reference)
            if new != relation.shown:
                edge_drops.append((relation.shown - new, key, EdgeDrop(key, relation.shown, new)))
        if new < edge_threshold:
            below += 1
    flagged = sum(
        1 for name in weak if _weakly_held_then(graph, relations, name, edge_value, edge_threshold)
    )
    return DecayReport(
        at=at,
        nodes_decayed=len(node_drops),
        edges_decayed=len(edge_drops),
        nodes_flagged=flagged,
        edges_below=below,
        details=[d for _, _, d in heapq.nsmallest(limit, node_drops, key=_largest_first)],
        edge_details=[d for _, _, d in heapq.nsmallest(limit, edge_drops, key=_largest_first)],
    )


def _weakly_held_then(
    graph: GraphProjection,
    relations: dict[RelationKey, RelationEntry],
    name: str,
    edge_value: Callable[[float, int], float],
    edge_threshold: float,
) -> bool:
    """After the run: no edge at or above the threshold, none touching an exempt entity."""
    for key in graph.incident_keys(name):
        relation = relations.get(key)
        if relation is None:
            continue
        if relation.exempt or edge_value(relation.weight, relation.last_confirmed) >= (
            edge_threshold
        ):
            return False
    return True


def _largest_first(item: tuple[float, object, object]) -> tuple[float, object]:
    return (-round(item[0], _DECIMALS), item[1])


@dataclass(frozen=True)
class _Candidates:
    """What a selection keeps between calls while the index does not move: the edges, the
    low-confidence entities, and the entities without edges by last_seen (orphans by age)."""

    edges: list[RelationKey]
    low: list[str]
    edgeless: list[tuple[int, str]]


def prune_selection(
    graph: GraphProjection, thresholds: PruneThresholds, now_ms: int
) -> PruneSelection:
    """§8.10's selection on the graph as it is at `now_ms`: edges below the edge threshold with
    neither end exempt; entities below the node threshold, not exempt, whose every edge is
    below the edge threshold and none touches an exempt entity; with `include_orphans`,
    entities without edges last seen more than `max_age_days` ago. Listed once each."""
    index = family_index(graph)
    found = _candidates_of(graph, index, thresholds.node_threshold, thresholds.edge_threshold)
    nodes = [(name, "low_confidence") for name in found.low]
    if thresholds.include_orphans:
        seen_before = now_ms - thresholds.max_age_days * DAY_MS
        low = set(found.low)
        cut = bisect.bisect_left(found.edgeless, (math.ceil(seen_before), ""))
        nodes.extend((name, "orphan") for _, name in found.edgeless[:cut] if name not in low)
        nodes.sort()
    return PruneSelection(list(found.edges), nodes)


def _candidates_of(
    graph: GraphProjection, index: FamilyIndex, node_threshold: float, edge_threshold: float
) -> _Candidates:
    """The candidates at these thresholds, kept by the index until it next changes."""

    def compute() -> _Candidates:
        relations = index.relation_entries()
        edges = sorted(
            key
            for key, relation in relations.items()
            if relation.shown < edge_threshold and not relation.exempt
        )
        low: list[str] = []
        edgeless: list[tuple[int, str]] = []
        for entry in index.entries():
            if entry.rule:
                continue
            if entry.confidence < node_threshold and _weakly_held(
                graph, relations, entry, edge_threshold
            ):
                low.append(entry.name)
            if index.degree(entry.name) == 0:
                edgeless.append((entry.last_seen, entry.name))
        low.sort()
        edgeless.sort()
        return _Candidates(edges, low, edgeless)

    return index.derived(("prune_candidates", node_threshold, edge_threshold), compute)


def _weakly_held(
    graph: GraphProjection,
    relations: dict[RelationKey, RelationEntry],
    entry: EntityEntry,
    edge_threshold: float,
) -> bool:
    """No visible edge at or above the threshold, none touching an exempt entity."""
    for key in graph.incident_keys(entry.name):
        relation = relations.get(key)
        if relation is None:
            continue
        if relation.exempt or relation.shown >= edge_threshold:
            return False
    return True
