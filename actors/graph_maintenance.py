"""graph_decay and graph_prune as commands (contract §6, §8.9, §8.10): their commands, results
and pure decisions, in one module beside the family's other commands.

A decay run is one DecayApplied {at, rate, rates, edge_rate, floor} with the tunables in force
(carried by the command); every value is derived from it by the read model, so nothing is
rewritten and running it again changes nothing more. A prune recomputes its selection at the
point it is decided (never trusting an earlier preview) and appends every deletion together:
edges first, then entities with any edges still on them. Deletions are tombstones: as_of
before the prune and read_history still show what was removed, and re-creating brings it back.
"""

from __future__ import annotations

import msgspec

from actors.command_base import CommandOf
from actors.errors import GraphWriteRefusedError
from actors.graph_reader import GraphReader
from actors.graph_tunables import DEFAULT_RATE_KEY, Decay
from eventstore.events import AnyEvent, DecayApplied, EntityDeleted, RelationDeleted
from projections.graph import GraphProjection
from projections.graph_family import (
    DecayReport,
    PruneSelection,
    PruneThresholds,
    Reading,
    decay_report,
    family_index,
    prune_selection,
)
from projections.naming import entity_id

__all__ = [
    "DecayRates",
    "GraphDecay",
    "GraphDecayResult",
    "GraphPrune",
    "GraphPruneResult",
    "PrunedEdge",
    "PrunedNode",
    "decay",
    "decay_command",
    "prune",
]

RelationKey = tuple[str, str, str]


class DecayRates(msgspec.Struct, frozen=True, kw_only=True):
    """The decay tunables a run records: `rate` for types without an entry in `rates`
    (casefolded type -> daily rate), `edge_rate` for edges, no value below `floor`."""

    rate: float = 0.996
    rates: dict[str, float] = {}
    edge_rate: float = 0.997
    floor: float = 0.01


class _MaintenanceResult(msgspec.Struct, frozen=True, kw_only=True):
    """Base of graph_decay's and graph_prune's results."""


class GraphDecayResult(_MaintenanceResult, frozen=True):
    """The report (§8.9) with ids as the graph stood when the run was decided."""

    report: DecayReport
    ids: dict[str, str]  # entity name -> id shown, for every name the details mention
    dry_run: bool


class PrunedEdge(msgspec.Struct, frozen=True):
    from_id: str
    to_id: str
    relation_type: str
    weight: float


class PrunedNode(msgspec.Struct, frozen=True):
    id: str
    name: str
    entity_type: str
    confidence: float
    last_seen: int
    edge_count: int
    reason: str


class GraphPruneResult(_MaintenanceResult, frozen=True):
    """What a prune removes (preview) or removed (execute): edges in deletion order, then the
    entities; `extra_edges` were still on a removed entity (none under §8.10's rules)."""

    edges: list[PrunedEdge]
    nodes: list[PrunedNode]
    extra_edges: list[PrunedEdge] = []


class GraphDecay(CommandOf[GraphDecayResult], frozen=True, kw_only=True):
    """graph_decay: a run now (one DecayApplied), or with `dry_run` a preview at `at` (None:
    now; never before now) that writes nothing. Flags use the prune thresholds."""

    rates: DecayRates = DecayRates()
    dry_run: bool = False
    at: int | None = None
    node_threshold: float = 0.1
    edge_threshold: float = 0.05


class GraphPrune(CommandOf[GraphPruneResult], frozen=True, kw_only=True):
    """graph_prune execute: remove what §8.10 selects at the point this is decided."""

    node_threshold: float = 0.1
    edge_threshold: float = 0.05
    include_orphans: bool = True
    max_age_days: float = 30.0


def decay_command(decay: Decay, *, dry_run: bool = False, at: int | None = None) -> GraphDecay:
    """A graph_decay run with the tunables in force: the default rate, the casefolded types'
    own rates, the edge rate and the floor, flags at the prune thresholds."""
    rates = DecayRates(
        rate=decay.rates[DEFAULT_RATE_KEY],
        rates={t: r for t, r in decay.rates.items() if t != DEFAULT_RATE_KEY},
        edge_rate=decay.edge_rate,
        floor=decay.floor,
    )
    return GraphDecay(
        rates=rates,
        dry_run=dry_run,
        at=at,
        node_threshold=decay.prune_node_threshold,
        edge_threshold=decay.prune_edge_threshold,
    )


def _projection(graph: GraphReader, what: str) -> GraphProjection:
    if not isinstance(graph, GraphProjection):
        raise GraphWriteRefusedError(
            what, ["it runs on its own, not as a step of a transaction; call it alone"]
        )
    return graph


def run_event(rates: DecayRates, at: int) -> DecayApplied:
    """The DecayApplied of a run at `at` with these tunables."""
    return DecayApplied(
        at=at,
        rate=rates.rate,
        rates=dict(rates.rates),
        edge_rate=rates.edge_rate,
        floor=rates.floor,
    )


def decay(
    graph: GraphReader, command: GraphDecay, now_ms: int
) -> tuple[list[AnyEvent], GraphDecayResult]:
    """A run at `now_ms` (one DecayApplied), or a dry run at max(at, now) writing nothing."""
    projection = _projection(graph, "graph_decay")
    at = max(command.at, now_ms) if command.dry_run and command.at is not None else now_ms
    run = run_event(command.rates, at)
    report = decay_report(
        projection,
        run,
        node_threshold=command.node_threshold,
        edge_threshold=command.edge_threshold,
    )
    lookup = projection.name_lookup()
    names = {d.name for d in report.details}
    names.update(end for d in report.edge_details for end in d.key[:2])
    ids = {name: entity_id(name, lookup) for name in names}
    result = GraphDecayResult(report=report, ids=ids, dry_run=command.dry_run)
    if command.dry_run:
        return [], result
    affected = report.nodes_decayed + report.edges_decayed
    return [msgspec.structs.replace(run, affected=affected)], result


def _thresholds(command: GraphPrune) -> PruneThresholds:
    return PruneThresholds(
        node_threshold=command.node_threshold,
        edge_threshold=command.edge_threshold,
        include_orphans=command.include_orphans,
        max_age_days=command.max_age_days,
    )


def prune_preview(graph: GraphProjection, command: GraphPrune, now_ms: int) -> GraphPruneResult:
    """What `prune` would remove at `now_ms` (a read: nothing written)."""
    return _described(graph, prune_selection(graph, _thresholds(command), now_ms))


def prune(
    graph: GraphReader, command: GraphPrune, now_ms: int
) -> tuple[list[AnyEvent], GraphPruneResult]:
    """Remove the selection at this point, as one command: the listed edges, then the listed
    entities with any edges left on them (tombstones, like every deletion)."""
    projection = _projection(graph, "graph_prune")
    selection = prune_selection(projection, _thresholds(command), now_ms)
    result = _described(projection, selection)
    events: list[AnyEvent] = []
    gone: set[RelationKey] = set()
    for key in selection.edges:
        events.append(RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2]))
        gone.add(key)
    lookup = projection.name_lookup()
    extra: list[PrunedEdge] = []
    for name, _ in selection.nodes:
        events.append(EntityDeleted(name=name))
        for key in projection.incident_keys(name):
            if key in gone:
                continue
            gone.add(key)
            events.append(
                RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2])
            )
            view = projection.relation(*key)
            weight = view.weight if view is not None else 0.0
            extra.append(
                PrunedEdge(entity_id(key[0], lookup), entity_id(key[1], lookup), key[2], weight)
            )
    return events, msgspec.structs.replace(result, extra_edges=extra)


def _described(graph: GraphProjection, selection: PruneSelection) -> GraphPruneResult:
    index = family_index(graph)
    relations = index.relation_entries()
    shown = Reading(graph).entity_id  # ids cached per name, slugs across calls

    edges = [
        PrunedEdge(shown(key[0]), shown(key[1]), key[2], relations[key].shown)
        for key in selection.edges
    ]
    nodes: list[PrunedNode] = []
    for name, reason in selection.nodes:
        entry = index.entry(name)
        assert entry is not None, "selected entities are alive"
        nodes.append(
            PrunedNode(
                shown(name),
                name,
                entry.entity_type,
                entry.confidence,
                entry.last_seen,
                index.degree(name),
                reason,
            )
        )
    return GraphPruneResult(edges=edges, nodes=nodes)
