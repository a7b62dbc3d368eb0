"""The graph snapshot of a log of plain creations, built from the creations themselves.

A bulk import into an empty store writes, in one origin's stamp order, an EntityCreated for
each of its entities (each name once) followed by that entity's ObservationAdded events, then a
RelationCreated for each of its relations (each key once, both endpoints among those entities),
every attribute at its default. What the fold makes of such a log is known without folding it:
every entity alive, in creation order, its occurrences in order after its creation; every
relation visible, in creation order, in its endpoints' adjacency. So the snapshot a fold would
encode is written here as columns straight from the creations (about a tenth of the fold's and
the encoding's time at 1,000,000 entities, and no record object per element).
tests/property/test_plain_snapshot.py proves it equal, byte for byte, to the fold's snapshot of
the same log.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat

from projections.graph._codec import _ENCODER, _packed, _packed_ints, _Snapshot, _Stamps


@dataclass(frozen=True)
class PlainGraph:
    """What a log of plain creations holds (see the module docstring), for `plain_snapshot`.

    Entity i is `names[i]` of type `types[i]`, created at the stamp (`entity_hlc[i]`,
    `origin`, `entity_seq[i]`); its observations follow it at the next origin_seqs, with the
    same clock reading. Relation j joins entities `relations[j][0]` and `[1]` (indexes) with
    type `[2]`, created at (`relation_hlc[j]`, `origin`, `relation_seq[j]`). `position` is the
    log position of the last of these events."""

    position: int
    origin: str
    names: Sequence[str]
    types: Sequence[str]
    observations: Sequence[Sequence[str]]
    entity_hlc: array[int]
    entity_seq: array[int]
    relations: Sequence[tuple[int, int, str]]
    relation_hlc: array[int]
    relation_seq: array[int]


def plain_snapshot(graph: PlainGraph) -> bytes:
    """The snapshot GraphProjection.to_snapshot gives after folding the log `graph` describes."""
    n, m = len(graph.names), len(graph.relations)
    if not n:
        raise ValueError("a log of plain creations holds at least one entity")
    origin = graph.origin
    origins = sorted({"", origin})
    counts = array("q", map(len, graph.observations))
    # The stamp table as the codec lays it out: each entity's creation, each entity's
    # watermark (its last occurrence, or its creation), each relation's creation, then the
    # newest entity creation and the newest relation creation (0: the zero stamp).
    hlc = array("q", chain(graph.entity_hlc, graph.entity_hlc, graph.relation_hlc))
    seq = array("q", graph.entity_seq)
    seq.extend(map(int.__add__, graph.entity_seq, counts))
    seq.extend(graph.relation_seq)
    hlc.append(graph.entity_hlc[-1])
    seq.append(graph.entity_seq[-1])
    relations_last = 0
    if m:
        hlc.append(graph.relation_hlc[-1])
        seq.append(graph.relation_seq[-1])
        relations_last = len(hlc)
    strings: dict[str, int] = {}
    new = strings.setdefault
    types = _packed_ints("I", [new(t, len(strings)) for t in graph.types])
    relation_types = _packed_ints("I", [new(r[2], len(strings)) for r in graph.relations])
    from_entities = array("I", [r[0] for r in graph.relations])
    to_entities = array("I", [r[1] for r in graph.relations])
    edge_counts, edges = _adjacency(n, from_entities, to_entities)
    packed_at, packed = _occurrences(graph, origin)
    return _ENCODER.encode(
        _Snapshot(
            position=graph.position,
            entities_last=2 * n + m + 1,
            entities_unsorted=False,
            alive=n,
            relations_last=relations_last,
            relations_unsorted=False,
            visible=m,
            origins=origins,
            strings=list(strings),
            stamps=_Stamps(
                _packed(hlc),
                _packed_ints("I", repeat(origins.index(origin), len(hlc))),
                _packed(seq),
            ),
            names=list(graph.names),
            types=types,
            type_stamps=[],
            dead=[],
            deleted=[],
            unsorted=[],
            content_deleted=[],
            packed_at=packed_at,
            packed=packed,
            edge_counts=edge_counts,
            edges=edges,
            from_entities=_packed(from_entities),
            to_entities=_packed(to_entities),
            relation_types=relation_types,
            hidden=[],
            bases=[],
            relation_deleted=[],
            updates=[],
            entity_attrs=[],
            decay_runs=[],
        )
    )


def _adjacency(n: int, sources: array[int], targets: array[int]) -> tuple[bytes, bytes]:
    """Each entity's incident relations in creation order (a self-relation once), as the
    codec's counts and concatenated indexes."""
    incident: list[list[int]] = [[] for _ in range(n)]
    for j, (src, dst) in enumerate(zip(sources, targets, strict=True)):
        incident[src].append(j)
        if dst != src:
            incident[dst].append(j)
    counts = _packed_ints("I", map(len, incident))
    return counts, _packed_ints("I", chain.from_iterable(incident))


def _occurrences(graph: PlainGraph, origin: str) -> tuple[bytes, list[bytes]]:
    """The entities with observations, and each one's occurrences packed as the codec packs
    them: (contents, stamps), a stamp being (hlc, origin, origin_seq)."""
    encode = _ENCODER.encode
    packed_at: list[int] = []
    packed: list[bytes] = []
    for i, (contents, hlc, created) in enumerate(
        zip(graph.observations, graph.entity_hlc, graph.entity_seq, strict=True)
    ):
        if contents:
            stamps = [(hlc, origin, s) for s in range(created + 1, created + 1 + len(contents))]
            packed_at.append(i)
            packed.append(encode((contents, stamps)))
    return _packed_ints("I", packed_at), packed
