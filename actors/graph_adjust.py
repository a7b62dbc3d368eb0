"""Deciding graph_boost / graph_weaken, graph_delete and graph_audit (contract §8.3-8.4, 8.15,
8.17): pure.

Boost and weaken find an existing edge (relation lookup candidates: the name as given, then
its write spelling; either direction for symmetric types), move its weight from the value it
reads as now (decayed) and confirm it now; a `reason` rides in an AuditRecorded of the same
transaction, naming both ends, so read_history shows why the weight moved. Delete removes an
entity and every edge touching it, as one command.
"""

from __future__ import annotations

from typing import Any

from actors.errors import (
    AmbiguousReferenceError,
    GraphEdgeNotFoundError,
    GraphEntityNotFoundError,
)
from actors.graph_commands import GraphAdjust, GraphAudit, GraphDelete
from actors.graph_reader import GraphReader
from actors.graph_results import (
    EdgeState,
    GraphAdjustResult,
    GraphAuditResult,
    GraphDeleteResult,
)
from actors.graph_touch import current_weight, resolved
from actors.graph_weights import below_prune_threshold, boosted, weakened
from actors.working_graph import WorkingGraph
from eventstore.events import AnyEvent, AuditRecorded, RelationUpdated
from projections.graph import RelationView
from projections.naming import (
    SYMMETRIC_RELATION_TYPES,
    entity_id,
    relation_lookup_candidates,
)

__all__ = ["adjust", "audit", "delete"]


def _entity(work: WorkingGraph, reference: str) -> str:
    lookup = resolved(work, reference)
    if lookup.ambiguous:
        raise AmbiguousReferenceError(reference, lookup.ambiguous)
    if lookup.name is None:
        raise GraphEntityNotFoundError(reference)
    return lookup.name


def find_edge(work: WorkingGraph, from_name: str, to_name: str, relation: str) -> RelationView:
    """The edge `from -[relation]-> to` by the lookup rules of §3.4; GraphEdgeNotFoundError."""
    for relation_type in relation_lookup_candidates(relation):
        found = work.relation(from_name, to_name, relation_type)
        if found is None and relation_type.upper() in SYMMETRIC_RELATION_TYPES:
            found = work.relation(to_name, from_name, relation_type)
        if found is not None:
            return found
    raise GraphEdgeNotFoundError((from_name, to_name, relation))


def adjust(
    graph: GraphReader, command: GraphAdjust, now_ms: int
) -> tuple[list[AnyEvent], GraphAdjustResult]:
    """Boost: min(1, w + amount); weaken: max(0, w - amount), from the decayed weight."""
    work = WorkingGraph(graph, now_ms)
    edge = find_edge(
        work,
        _entity(work, command.from_name),
        _entity(work, command.to_name),
        command.relation,
    )
    previous = current_weight(work, edge)
    moved = weakened if command.weaken else boosted
    weight = moved(previous, command.amount)
    ends: dict[str, Any] = {
        "from_entity": edge.from_entity,
        "to_entity": edge.to_entity,
        "relation_type": edge.relation_type,
    }
    work.record(RelationUpdated(**ends, weight=weight, last_confirmed=now_ms))
    if command.reason is not None:
        work.record(
            AuditRecorded(
                action=command.tool,
                detail={
                    "entities": list(dict.fromkeys((edge.from_entity, edge.to_entity))),
                    "relation": edge.relation_type,
                    "previous_weight": previous,
                    "new_weight": weight,
                    "reason": command.reason,
                },
            )
        )
    lookup = work.name_lookup()
    state = EdgeState(
        from_id=entity_id(edge.from_entity, lookup),
        to_id=entity_id(edge.to_entity, lookup),
        relation_type=edge.relation_type,
        weight=weight,
        valid_at=edge.valid_at,
        invalid_at=edge.invalid_at,
    )
    pruned = below_prune_threshold(weight, command.prune_threshold) if command.weaken else None
    return work.events, GraphAdjustResult(
        previous_weight=previous, new_weight=weight, edge=state, pruned=pruned
    )


def delete(
    graph: GraphReader, command: GraphDelete, now_ms: int
) -> tuple[list[AnyEvent], GraphDeleteResult]:
    """The entity the reference names and all its edges, atomically; an unknown reference
    writes nothing (found False); an ambiguous one is refused with its candidates."""
    work = WorkingGraph(graph, now_ms)
    lookup = resolved(work, command.entity_id)
    if lookup.ambiguous:
        raise AmbiguousReferenceError(command.entity_id, lookup.ambiguous)
    name = lookup.name
    if name is None:
        return [], GraphDeleteResult(reference=command.entity_id, found=False)
    shown_id = entity_id(name, work.name_lookup())
    entity_type = work.entity_type(name)
    removed = work.delete_entity(name)
    if command.reason is not None:
        work.record(
            AuditRecorded(
                action="graph_delete",
                detail={"entity": name, "edges_removed": len(removed), "reason": command.reason},
            )
        )
    return work.events, GraphDeleteResult(
        reference=command.entity_id,
        found=True,
        id=shown_id,
        name=name,
        entity_type=entity_type,
        edges_removed=len(removed),
    )


def audit(command: GraphAudit) -> tuple[list[AnyEvent], GraphAuditResult]:
    """One AuditRecorded: the data's keys, then the server's `event` and `timestamp`, which
    win over keys of the same name in the data (a payload cannot forge them)."""
    detail = {k: v for k, v in command.data.items() if k not in ("event", "timestamp")}
    detail.update(event=command.event, timestamp=command.timestamp)
    event = AuditRecorded(action=f"graph_audit:{command.event}", detail=detail)
    return [event], GraphAuditResult(event=command.event, timestamp=command.timestamp)
