"""GraphProjection's fold records: stamps, entities, relations and their adjacency."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import chain
from typing import Any

import msgspec

from eventstore.events import RelationCreated

RelationKey = tuple[str, str, str]
"""(from_entity, to_entity, relation_type)"""


# Fold records are invisible to the cycle collector (gc=False): a replay creates millions of
# them, and full collections over them would cost more than the fold itself. They must never
# form a cycle, so a relation names its endpoints instead of pointing at their records.


class _Stamp(msgspec.Struct, frozen=True, order=True, gc=False, array_like=True):
    """A stamp `(hlc, origin, origin_seq)`, ordered like the tuple; as an untracked object it
    keeps the dicts it keys untracked too."""

    hlc: int
    origin: str
    origin_seq: int


_ZERO = _Stamp(0, "", 0)


class _Entity(msgspec.Struct, gc=False, array_like=True):
    """Fold state of one entity name, alive or not (tombstones are kept for LWW)."""

    created: _Stamp
    entity_type: str
    type_stamp: _Stamp
    # The newest stamp of anything that gates or orders occurrences (creation, deletion, content
    # deletions, stored occurrences): an occurrence newer than it is visible while the entity
    # is alive, and is simply appended, which keeps `occ` in stamp order.
    watermark: _Stamp
    alive: bool = False  # created > deleted, kept as a flag so checks need not touch stamps
    deleted: _Stamp = _ZERO
    # Stored occurrences, stamp -> content. Invariant: each is newer than `created`, `deleted`
    # and its content's latest deletion, so it is visible exactly while the entity is alive.
    occ: dict[_Stamp, str] = {}
    occ_unsorted: bool = False
    content_deleted: dict[str, _Stamp] | None = None
    # Occurrences restored from a snapshot and not needed since (an encoded _Occurrences): all
    # are at or below the watermark, so they precede every one in `occ`, where in-order adds
    # still go. Anything else that touches `occ` unpacks them first (GraphProjection._unpack);
    # reads of the contents decode them without unpacking; a snapshot packs `occ` into them.
    packed: bytes | None = None
    # Incident relations: a small tuple while there are few (cheap to build during a replay),
    # then an insertion-ordered set; after a restore, those it restored packed, then the rest.
    # Relation records are never removed, so all only grow.
    edges: tuple[_Relation, ...] | dict[_Relation, None] | _PackedEdges | None = None


class _Relation(msgspec.Struct, gc=False, eq=False, array_like=True):
    """Fold state of one relation key; `visible` is kept current by every event touching it."""

    key: RelationKey
    created: _Stamp = _ZERO
    # The latest creation, which wrote every attribute at `created`.
    base: RelationCreated | None = None
    deleted: _Stamp = _ZERO
    visible: bool = False
    # Attributes written by a RelationUpdated newer than `created`: field -> (stamp, value).
    updates: dict[str, tuple[_Stamp, Any]] | None = None


_SMALL_EDGES = 8


class _PackedEdges(msgspec.Struct, gc=False):
    """An entity's incident relations as a restore left them: indexes into the relations it
    restored, resolved only when iterated, then those added since, held as a fold holds them
    (see _add_edge). Resolving them on the first add instead cost a fold after a restore more
    than building them all cost the restore."""

    relations: tuple[_Relation, ...]  # shared by every entity of the restore, as is `indexes`
    indexes: array[int]
    start: int
    stop: int
    edges: tuple[_Relation, ...] | dict[_Relation, None] | None = None

    def __iter__(self) -> Iterator[_Relation]:
        restored = map(self.relations.__getitem__, self.indexes[self.start : self.stop])
        return chain(restored, self.edges) if self.edges else restored

    def __len__(self) -> int:
        return self.stop - self.start + (len(self.edges) if self.edges else 0)


def _add_edge(holder: _Entity | _PackedEdges, relation: _Relation) -> None:
    edges = holder.edges
    if edges is None:
        holder.edges = (relation,)
    elif isinstance(edges, tuple):
        if len(edges) < _SMALL_EDGES:
            holder.edges = (*edges, relation)
        else:
            holder.edges = dict.fromkeys((*edges, relation))
    elif isinstance(edges, dict):
        edges[relation] = None
    else:  # restored ones: the new one joins those added since
        _add_edge(edges, relation)
