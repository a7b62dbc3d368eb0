"""graph_merge and graph_unmerge (contract §8.13, §8.11): their commands and the results the
writer answers them with, decided in actors.graph_merge and actors.graph_unmerge.

References, names and types arrive as the caller gave them (trimmed and checked for control
characters by the tool); resolving and normalising them is part of the decision, so a refused
call names every problem at once. Results carry entity ids as the graph stood after the write
(for a dry run: as it would stand) and the decision's time, which the tool writes into the
merge audit file.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from actors.command_base import CommandOf

__all__ = [
    "EdgeToMove",
    "GraphMerge",
    "GraphMergeResult",
    "GraphUnmerge",
    "GraphUnmergeResult",
    "MovedEdge",
]


class GraphMergeResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a merge did (or, dry, would do): the source's id before the merge, the target's
    after it; exact counts; the property keys adopted, sorted."""

    source_id: str
    source_name: str
    target_id: str
    target_name: str
    edges_added: int
    edges_consolidated: int
    self_loops_dropped: int
    properties_adopted: list[str] = []
    dry_run: bool = False
    at_ms: int  # the decision's "now": the audit line's timestamp
    warnings: list[str] = []


class GraphMerge(CommandOf[GraphMergeResult], frozen=True, kw_only=True):
    """graph_merge: fold the entity `source_id` names into the one `target_id` names; with
    `dry_run`, decide everything and append nothing (the counts are exact)."""

    source_id: str
    target_id: str
    reason: str
    dry_run: bool = False
    max_properties_chars: int | None = None  # the target's properties after the adoption


class EdgeToMove(msgspec.Struct, frozen=True, kw_only=True):
    """An edge of the entity being split, by its other end, relation type and direction."""

    other_entity_id: str
    relation_type: str
    direction: Literal["in", "out"]


class MovedEdge(msgspec.Struct, frozen=True, kw_only=True):
    """An edge as re-created on the new entity (ends as ids after the split)."""

    from_id: str
    to_id: str
    relation_type: str


class GraphUnmergeResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a split did: the original with the number of edges it kept, the new entity with
    the edges moved onto it."""

    original_id: str
    original_name: str
    remaining_edges: int
    new_id: str
    new_name: str
    new_type: str
    moved: list[MovedEdge] = []
    at_ms: int
    warnings: list[str] = []


class GraphUnmerge(CommandOf[GraphUnmergeResult], frozen=True, kw_only=True):
    """graph_unmerge: create `new_entity_name` and move the listed edges of `entity_id` onto
    it, every attribute kept; an item that matches no edge refuses the whole call."""

    entity_id: str
    new_entity_name: str
    new_entity_type: str
    edges_to_move: list[EdgeToMove] = []
    reason: str
    properties: dict[str, Any] = {}  # for the new entity (§3.6; the tool bounds its size)
