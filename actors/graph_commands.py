"""The graph family's commands (contract §8.2-8.4, 8.15, 8.17), decided in actors.graph_relate
and actors.graph_adjust.

Each carries what its decision needs beyond the graph: the tunables that apply (filled in by
the tool from the family's config), so deciding stays pure. Names, types, relations and
times arrive as the caller gave them (trimmed and checked for control characters by the tool);
normalising and parsing them is part of the decision, so a batch can list every failing item.
Weights and confidences arrive already clamped to [0, 1] (the tool warns about the clamp).
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.command_base import CommandOf
from actors.graph_results import (
    GraphAdjustResult,
    GraphAuditResult,
    GraphDeleteResult,
    GraphRelateBatchResult,
    GraphRelateResult,
)

__all__ = [
    "BatchEntity",
    "BatchRelation",
    "GraphAdjust",
    "GraphAudit",
    "GraphDelete",
    "GraphRelate",
    "GraphRelateBatch",
    "Provenance",
]

DEFAULT_WEIGHT = 0.5
DEFAULT_MENTION_BOOST = 0.05


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where an edge's fact came from; None: not given (an existing value stays)."""

    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None


class GraphRelate(CommandOf[GraphRelateResult], frozen=True, kw_only=True):
    """graph_relate, single mode: resolve or create both ends, then create or re-assert the
    edge, with supersession when `valid_at` is given."""

    from_name: str
    from_type: str
    to_name: str
    to_type: str
    relation: str
    weight: float = DEFAULT_WEIGHT
    properties: dict[str, Any] = {}
    evidence: str | None = None
    valid_at: str | None = None  # ISO 8601 as given
    provenance: Provenance = Provenance()
    mention_boost: float = DEFAULT_MENTION_BOOST
    max_properties_chars: int | None = None  # an element's properties after the merge, as JSON
    warnings: list[str] = []  # the tool's own adjustments (clamps), reported with the result


class BatchEntity(msgspec.Struct, frozen=True, kw_only=True):
    local_id: str
    name: str
    entity_type: str
    properties: dict[str, Any] = {}
    confidence: float | None = None


class BatchRelation(msgspec.Struct, frozen=True, kw_only=True):
    from_ref: str  # a localId of the batch, else a reference to an existing entity
    to_ref: str
    relation: str
    weight: float = DEFAULT_WEIGHT
    properties: dict[str, Any] = {}
    evidence: str | None = None
    valid_at: str | None = None


class GraphRelateBatch(CommandOf[GraphRelateBatchResult], frozen=True, kw_only=True):
    """graph_relate, batch mode: all or nothing; every failing item is named with its index."""

    entities: list[BatchEntity] = []
    relations: list[BatchRelation] = []
    provenance: Provenance = Provenance()
    mention_boost: float = DEFAULT_MENTION_BOOST
    max_properties_chars: int | None = None
    warnings: list[str] = []


class GraphAdjust(CommandOf[GraphAdjustResult], frozen=True, kw_only=True):
    """graph_boost (`weaken` False) or graph_weaken: move an existing edge's weight by `amount`;
    `prune_threshold` decides weaken's `pruned` flag; `reason` is recorded with the change."""

    from_name: str
    to_name: str
    relation: str
    amount: float
    weaken: bool = False
    reason: str | None = None
    prune_threshold: float = 0.05
    tool: str = "graph_boost"


class GraphDelete(CommandOf[GraphDeleteResult], frozen=True, kw_only=True):
    """graph_delete: the entity a reference names and all its edges; an unknown reference
    writes nothing and answers found=False."""

    entity_id: str
    reason: str | None = None


class GraphAudit(CommandOf[GraphAuditResult], frozen=True, kw_only=True):
    """graph_audit: record an audit event in the log (the tool also writes the audit file)."""

    event: str
    timestamp: str
    data: dict[str, Any] = {}
