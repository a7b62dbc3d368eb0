"""Tombstone collection: dropping the fold records a graph keeps only to reject late, older
events, once no such event can arrive any more.

The caller vouches for `watermark` (graphmem.replication.gate): every event that will ever be
folded after this is newer than every stamp (origin n, seq s) with s <= watermark[n]. Under
that promise a record whose stamps are all covered decides nothing a missing record would not:
each later event is newer than all it holds, and folds on a fresh stub exactly as on it. So a
record is dropped only when it is invisible and *every* stamp it holds is covered, and an
entity only with all its incident relations (its edges name them). The log is not touched:
history and as-of reads fold it again, tombstones included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from projections.graph._records import (
    SMALL_EDGES,
    EntityRecord,
    FoldStamp,
    GraphState,
    RelationRecord,
)

__all__ = ["Collected", "collect_tombstones"]


@dataclass(frozen=True)
class Collected:
    """How many entity and relation records a collection dropped."""

    entities: int = 0
    relations: int = 0


def collect_tombstones(state: GraphState, watermark: Mapping[str, int]) -> Collected:
    """Drop from `state` the invisible records whose every stamp `watermark` covers."""

    def covered(stamps: Iterable[FoldStamp]) -> bool:
        # ZERO (origin "", seq 0) is covered: it stands for "never written".
        return all(s.origin_seq <= watermark.get(s.origin, 0) for s in stamps)

    dropped: set[int] = set()  # ids of the relation records dropped (eq=False: by identity)
    for key, relation in list(state.relations.items()):
        updated = [w[0] for w in relation.updates.values()] if relation.updates else []
        if relation.visible or not covered((relation.created, relation.deleted, *updated)):
            continue
        del state.relations[key]
        dropped.add(id(relation))
    entities = 0
    for name, entity in list(state.entities.items()):
        edges = list(entity.edges) if entity.edges else []
        kept = [r for r in edges if id(r) not in dropped]
        if not entity.alive and not kept and covered(_stamps(entity)):
            del state.entities[name]
            entities += 1
        elif len(kept) != len(edges):
            entity.edges = _edges(kept)
    return Collected(entities, len(dropped))


def _stamps(entity: EntityRecord) -> list[FoldStamp]:
    """Every stamp an entity record holds; its watermark bounds the packed occurrences'."""
    stamps = [
        entity.created,
        entity.type_stamp,
        entity.deleted,
        entity.watermark,
        *(entity.occ or ()),
    ]
    if entity.content_deleted:
        stamps += entity.content_deleted.values()
    if entity.attrs:
        stamps += [w[0] for w in entity.attrs.values()]
    return stamps


def _edges(
    kept: list[RelationRecord],
) -> tuple[RelationRecord, ...] | dict[RelationRecord, None] | None:
    if not kept:
        return None
    return tuple(kept) if len(kept) <= SMALL_EDGES else dict.fromkeys(kept)
