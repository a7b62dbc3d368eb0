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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eventstore.events import DecayApplied
from projections.graph import GraphProjection
from projections.graph_decay import newest_run, round6_column
from projections.graph_family._build import family_index
from projections.graph_family._index import FamilyIndex
from projections.graph_time import DAY_MS

if TYPE_CHECKING:
    # numpy is imported by the functions that run over the columns (projections.graph_decay
    # says why): a server that never decays nor prunes never loads it.
    import numpy as np
    import numpy.typing as npt

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

    Every element's new value comes from one vectorised pass over the index's DecayColumns
    (equal to projections.graph_decay.decayed element by element), so a new day's run, which
    moves every value, costs array operations rather than 400,000 Python calls."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    index = family_index(graph)
    relations = index.relation_columns()
    entities = index.entity_columns()
    shown = index.run
    current = newest_run([run, shown] if shown is not None else [run])
    effective = run if current is run else shown
    assert effective is not None
    n, m = entities.size, relations.size
    confidence = entities.decayed(effective, index.entity_rates(effective))
    weight = relations.decayed(effective, [effective.edge_rate])
    decaying = entities.alive[:n] & ~entities.exempt[:n]
    node_moved = np.flatnonzero(decaying & (confidence != entities.shown[:n]))
    edge_decaying = relations.alive[:m] & ~relations.exempt[:m]
    edge_moved = np.flatnonzero(edge_decaying & (weight != relations.shown[:m]))
    weak = decaying & (confidence < node_threshold)
    # An end of a visible edge that stays at or above the threshold, or is exempt, is held.
    holding = relations.alive[:m] & (relations.exempt[:m] | (weight >= edge_threshold))
    held = np.zeros(n, dtype=np.bool_)
    held[relations.ends[:m][holding].reshape(-1)] = True
    node_keys = entities.keys
    nodes = [
        NodeDrop(node_keys[i], entities.entries[i].entity_type, old, new)
        for i, old, new in _largest_drops(node_moved, entities.shown, confidence, node_keys, limit)
    ]
    edge_keys = relations.keys
    edges = [
        EdgeDrop(edge_keys[i], old, new)
        for i, old, new in _largest_drops(edge_moved, relations.shown, weight, edge_keys, limit)
    ]
    return DecayReport(
        at=effective.at,
        nodes_decayed=int(node_moved.size),
        edges_decayed=int(edge_moved.size),
        nodes_flagged=int(np.count_nonzero(weak & ~held)),
        edges_below=int(np.count_nonzero(edge_decaying & (weight < edge_threshold))),
        details=nodes,
        edge_details=edges,
    )


def _largest_drops(
    moved: npt.NDArray[np.intp],
    old: npt.NDArray[np.float64],
    new: npt.NDArray[np.float64],
    keys: Sequence[Any],
    limit: int,
) -> list[tuple[int, float, float]]:
    """(slot, old, new) of the `limit` largest drops among the `moved` slots: by the drop
    rounded to 6 places descending, then key. The rounded drops are exact (round6_column),
    so only the slots tied at the cut are ordered by key in Python."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    if moved.size == 0 or limit <= 0:
        return []
    drops = round6_column(old[moved] - new[moved])
    slots = moved.tolist()
    if len(slots) > limit:
        cut = np.partition(drops, len(slots) - limit)[len(slots) - limit]  # limit-th largest
        above = np.flatnonzero(drops > cut).tolist()
        tied = np.flatnonzero(drops == cut).tolist()
        by_key = heapq.nsmallest(limit - len(above), tied, key=lambda p: keys[slots[p]])
        chosen = [*above, *by_key]
    else:
        chosen = list(range(len(slots)))
    chosen.sort(key=lambda p: (-drops[p], keys[slots[p]]))
    return [(slots[p], float(old[slots[p]]), float(new[slots[p]])) for p in chosen]


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
        import numpy as np  # noqa: PLC0415 (see the imports)

        # Over the index's columns: a pass in numpy, Python only for what is selected.
        entities, relations = index.entity_columns(), index.relation_columns()
        n, m = entities.size, relations.size
        visible, exempt, weight = relations.alive[:m], relations.exempt[:m], relations.shown[:m]
        ends = relations.ends[:m]
        edge_keys = relations.keys
        below = np.flatnonzero(visible & ~exempt & (weight < edge_threshold))
        edges = sorted(edge_keys[i] for i in below.tolist())
        held = np.zeros(n, dtype=np.bool_)  # an end of an exempt edge or one at the threshold
        held[ends[visible & (exempt | (weight >= edge_threshold))].reshape(-1)] = True
        touched = np.zeros(n, dtype=np.bool_)  # an end of a visible edge
        touched[ends[visible].reshape(-1)] = True
        decaying = entities.alive[:n] & ~entities.exempt[:n]
        names = entities.keys
        weak = np.flatnonzero(decaying & (entities.shown[:n] < node_threshold) & ~held)
        low = sorted(names[i] for i in weak.tolist())
        alone = np.flatnonzero(decaying & ~touched)
        seen = entities.reference[alone].tolist()
        edgeless = sorted(zip(seen, [names[i] for i in alone.tolist()], strict=True))
        return _Candidates(edges, low, edgeless)

    return index.derived(("prune_candidates", node_threshold, edge_threshold), compute)
