"""What the graph writer answers the graph family's commands with (contract §8.2-8.4, 8.15,
8.17): ids as the graph stood after the write, times in wall milliseconds. The tools shape
them into the contract's JSON (ISO times, `from`/`to` keys)."""

from __future__ import annotations

import msgspec

__all__ = [
    "BatchEdgeDetail",
    "BatchEntityDetail",
    "EdgeState",
    "GraphAdjustResult",
    "GraphAuditResult",
    "GraphDeleteResult",
    "GraphRelateBatchResult",
    "GraphRelateResult",
    "SupersededEdge",
]


class _GraphResult(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the graph family's results; never used on its own."""


class EdgeState(msgspec.Struct, frozen=True, kw_only=True):
    """An edge after a write: endpoints as ids, its weight and validity window."""

    from_id: str
    to_id: str
    relation_type: str
    weight: float
    valid_at: int | None = None
    invalid_at: int | None = None


class SupersededEdge(msgspec.Struct, frozen=True, kw_only=True):
    """A sibling edge a dated write closed, and when (contract §5.2)."""

    from_id: str
    to_id: str
    relation_type: str
    invalid_at: int


class GraphRelateResult(_GraphResult, frozen=True):
    """graph_relate, single mode: whether the edge was new, the edge as written, the entities
    the call created (names), the siblings it closed, and adjustments made."""

    action: str  # "created" | "strengthened"
    edge: EdgeState
    created_entities: list[str] = []
    superseded: list[SupersededEdge] = []
    warnings: list[str] = []


class BatchEntityDetail(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    id: str
    action: str  # "created" | "merged"


class BatchEdgeDetail(msgspec.Struct, frozen=True, kw_only=True):
    from_name: str
    to_name: str
    edge: EdgeState
    action: str  # "created" | "strengthened"


class GraphRelateBatchResult(_GraphResult, frozen=True):
    """graph_relate, batch mode: counts, what each entity item and relation did, in order."""

    entities_created: int
    entities_merged: int
    edges_created: int
    edges_strengthened: int
    superseded: list[SupersededEdge] = []
    entity_details: list[BatchEntityDetail] = []
    edge_details: list[BatchEdgeDetail] = []
    warnings: list[str] = []


class GraphAdjustResult(_GraphResult, frozen=True):
    """graph_boost / graph_weaken: the weight before (decayed, as read) and after; `pruned` only
    for weaken (whether prune would now remove the edge)."""

    previous_weight: float
    new_weight: float
    edge: EdgeState
    pruned: bool | None = None


class GraphDeleteResult(_GraphResult, frozen=True):
    """graph_delete: `found` False (nothing written) when the reference names no entity."""

    reference: str
    found: bool
    id: str | None = None
    name: str | None = None
    entity_type: str | None = None
    edges_removed: int = 0


class GraphAuditResult(_GraphResult, frozen=True):
    """graph_audit: the event recorded and the server's timestamp written with it."""

    event: str
    timestamp: str
