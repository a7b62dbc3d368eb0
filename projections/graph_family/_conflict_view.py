"""The one conflict view: the three ways memory can disagree, side by side, each item saying
which side is current and why.

- `replica_writes`: elements several nodes wrote, settled silently by last-writer-wins (the
  ConflictsProjection): the write with the highest hybrid-clock stamp is current.
- `superseded`: edges closed by a newer `valid_at` (contract §5): the sibling (same source and
  relation type) whose `valid_at` is the closed edge's `invalid_at` superseded it; what is
  current is that sibling if it still is, else the source's current sibling of the newest
  `valid_at`, else nothing.
- `contradictions`: CONTRADICTS edges (§8.6): the server never settles one, so neither side is
  current by its decision: `current` is null, `why` says whether a client resolved it.

read_conflicts and graph_contradictions both answer with it. Superseded edges are found from
the FamilyIndex (kept until the graph changes); lists are newest first.
"""

from __future__ import annotations

from typing import Any

from eventstore.hlc import ms_of
from projections.conflicts import Conflict, ConflictsProjection, ConflictWrite
from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._contradictions import graph_contradictions
from projections.graph_family._entries import RelationKey
from projections.graph_family._values import Reading
from projections.graph_time import format_ms

__all__ = ["LWW_WHY", "VIEW_LIMIT", "conflict_view", "replica_write", "superseded_edges"]

# Items per kind when the caller sets no limit: a graph holds thousands of superseded edges
# (15,000 in the 100k benchmark graph), and the counts say how many there are.
VIEW_LIMIT = 50

LWW_WHY = (
    "last-writer-wins: nodes wrote this concurrently and the write with the highest stamp "
    "(hybrid-clock time, then node id) is the one kept; the others are in read_history"
)


def replica_write(c: Conflict) -> dict[str, Any]:
    """read_conflicts' item for a replica conflict, with `current` (the kept write) and `why`."""
    value: dict[str, Any] = {"element": c.kind}
    if c.kind == "relation":
        value["relation"] = {"from": c.key[0], "to": c.key[1], "relationType": c.key[2]}
    else:
        value["entityName"] = c.key[0]
        if c.kind == "observation":
            value["observation"] = c.key[1]
    value["writes"] = [_write(w) for w in c.writes]
    value["kept"] = _write(c.kept)
    value["current"] = _write(c.kept)
    value["why"] = LWW_WHY
    return value


def _write(w: ConflictWrite) -> dict[str, Any]:
    return {
        "node": w.origin,
        "time": format_ms(ms_of(w.hlc)),
        "hlc": w.hlc,
        "seq": w.origin_seq,
        "event": w.event,
    }


def superseded_edges(graph: GraphProjection) -> list[RelationKey]:
    """Keys of the visible edges closed by supersession (invalid_at set), newest closing
    first, then by key."""
    index = family_index(graph)

    def closed() -> list[RelationKey]:
        found: list[tuple[int, RelationKey]] = []
        for key, entry in index.relation_entries().items():
            if not entry.current:
                view = graph.relation(*key)
                assert view is not None and view.invalid_at is not None, "closed and visible"
                found.append((-view.invalid_at, key))
        found.sort()
        return [key for _, key in found]

    return index.derived(("superseded",), closed)


def _edge_ref(reading: Reading, key: RelationKey) -> dict[str, Any] | None:
    facts = reading.edge(key)
    if facts is None:
        return None
    view = facts.view
    return {
        "from": reading.entity_id(key[0]),
        "to": reading.entity_id(key[1]),
        "type": key[2],
        "weight": facts.weight,
        "valid_at": format_ms(view.valid_at),
        "invalid_at": format_ms(view.invalid_at),
    }


def _siblings(graph: GraphProjection, key: RelationKey) -> list[Any]:
    source, _, relation_type = key
    return [
        view
        for other in graph.incident_keys(source)
        if other[0] == source and other[2] == relation_type and other != key
        for view in (graph.relation(*other),)
        if view is not None
    ]


def _superseded_item(graph: GraphProjection, reading: Reading, key: RelationKey) -> dict[str, Any]:
    view = graph.relation(*key)
    assert view is not None, "a listed edge is visible"
    siblings = _siblings(graph, key)
    closer = next((s for s in sorted(siblings, key=_newest) if s.valid_at == view.invalid_at), None)
    current_now = [s for s in siblings if s.invalid_at is None]
    if closer is not None and closer.invalid_at is None:
        current = closer
    else:
        current = min(current_now, key=_newest) if current_now else None
    by = _ref(reading, closer)
    now = _ref(reading, current)
    label = f"{key[0]} -[{key[2]}]-> {key[1]}"
    closed_at = format_ms(view.invalid_at)
    if closer is None:
        why = (
            f"{label} was closed at {closed_at}; no edge of the same source and relation "
            "starting then remains (it was deleted or moved)"
        )
    else:
        why = (
            f"{label} was closed at {closed_at} by {closer.from_entity} -[{key[2]}]-> "
            f"{closer.to_entity}, valid from {format_ms(closer.valid_at)}: the newer valid_at wins"
        )
        if current is not closer:
            why += f", and that edge was itself closed at {format_ms(closer.invalid_at)}"
    if current is None:
        why += "; nothing of this source and relation is current now"
    elif current is not closer:
        why += f"; current now: {current.from_entity} -[{key[2]}]-> {current.to_entity}"
    return {
        "kind": "superseded",
        "edge": _edge_ref(reading, key),
        "superseded_by": by,
        "current": now,
        "why": why,
    }


def _newest(view: Any) -> tuple[int, str]:
    return (-(view.valid_at if view.valid_at is not None else -1), view.to_entity)


def _ref(reading: Reading, view: Any) -> dict[str, Any] | None:
    if view is None:
        return None
    return _edge_ref(reading, (view.from_entity, view.to_entity, view.relation_type))


def _contradiction_item(item: dict[str, Any]) -> dict[str, Any]:
    if item["resolved"]:
        why = (
            "marked resolved (resolved: true): a client settled it, usually by weakening or "
            "superseding the wrong fact; the server never picks a side"
        )
    else:
        why = (
            "unresolved: a client recorded that these disagree; both facts stand until one is "
            "weakened or superseded and the edge is marked resolved: true"
        )
    return {"kind": "contradiction", **item, "current": None, "why": why}


def conflict_view(
    graph: GraphProjection,
    conflicts: ConflictsProjection | None,
    *,
    entity: str | None = None,
    limit: int = VIEW_LIMIT,
    include_resolved: bool = False,
) -> dict[str, Any]:
    """`{replica_writes, superseded, contradictions, counts}`; with `entity`, only items that
    touch it; each list newest first, at most `limit` long (default VIEW_LIMIT; counts are
    before the cut)."""
    reading = Reading(graph)
    replicas = [] if conflicts is None else [replica_write(c) for c in conflicts.conflicts(entity)]
    closed = superseded_edges(graph)
    if entity is not None:
        closed = [key for key in closed if entity in key[:2]]
    contradictions = graph_contradictions(graph, include_resolved=include_resolved)
    items = contradictions["contradictions"]
    if entity is not None:
        items = [i for i in items if entity in (i["node_a"]["name"], i["node_b"]["name"])]
    cut = slice(limit)
    return {
        "replica_writes": replicas[cut],
        "superseded": [_superseded_item(graph, reading, key) for key in closed[cut]],
        "contradictions": [_contradiction_item(i) for i in items[cut]],
        "counts": {
            "replica_writes": len(replicas),
            "superseded": len(closed),
            "contradictions": len(items),
        },
    }
