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
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from projections.graph._codec import _ENCODER, LAYOUT, _packed_ints, _Snapshot, _Stamps
from projections.graph._records import Occurrences
from projections.prefix_write import Writers, writers

if TYPE_CHECKING:
    # numpy is imported by the bulk import that builds the snapshot, not by every server that
    # imports projections.graph (a stdio server never uses it: ~15 MiB, 0.2-0.4 s to load).
    import numpy as np

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)


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


def plain_snapshot(graph: PlainGraph, *, compiled: bool | None = None) -> bytes:
    """The snapshot GraphProjection.to_snapshot gives after folding the log `graph` describes,
    its occurrences packed by the compiled writer or in Python as `compiled` asks
    (projections.prefix_write: None the default)."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    n, m = len(graph.names), len(graph.relations)
    if not n:
        raise ValueError("a log of plain creations holds at least one entity")
    origins = sorted({"", graph.origin})
    entity_hlc = np.frombuffer(graph.entity_hlc, dtype=np.int64)
    entity_seq = np.frombuffer(graph.entity_seq, dtype=np.int64)
    counts = np.fromiter(map(len, graph.observations), dtype=np.int64, count=n)
    # The stamp table as the codec lays it out: each entity's creation, each entity's
    # watermark (its last occurrence, or its creation), each relation's creation, then the
    # newest entity creation and the newest relation creation (none: the zero stamp, 0).
    last_hlc, last_seq = [entity_hlc[-1:]], [entity_seq[-1:]]
    if m:
        last_hlc.append(np.frombuffer(graph.relation_hlc, dtype=np.int64)[-1:])
        last_seq.append(np.frombuffer(graph.relation_seq, dtype=np.int64)[-1:])
    hlc = np.concatenate([entity_hlc, entity_hlc, graph.relation_hlc, *last_hlc])
    seq = np.concatenate([entity_seq, entity_seq + counts, graph.relation_seq, *last_seq])
    # Types and relation types index one string table, in first-seen order.
    strings = dict.fromkeys(graph.types)
    strings.update(dict.fromkeys(map(_THIRD, graph.relations)))
    index = {string: i for i, string in enumerate(strings)}.__getitem__
    sources = np.fromiter(map(_FIRST, graph.relations), dtype=np.uint32, count=m)
    targets = np.fromiter(map(_SECOND, graph.relations), dtype=np.uint32, count=m)
    edge_counts, edges = _adjacency(n, sources, targets)
    written = writers(compiled)
    origin = origins.index(graph.origin)
    packed_at, packed = (
        _occurrences(graph, origin)
        if written is None
        else _occurrences_compiled(written, graph, origin, counts)
    )
    return _ENCODER.encode(
        _Snapshot(
            position=graph.position,
            entities_last=2 * n + m + 1,
            entities_unsorted=False,
            alive=n,
            relations_last=2 * n + m + 2 if m else 0,
            relations_unsorted=False,
            visible=m,
            origins=origins,
            strings=list(strings),
            stamps=_Stamps(
                _little(hlc, "<i8"),
                _little(np.full(len(hlc), origins.index(graph.origin)), "<u4"),
                _little(seq, "<i8"),
            ),
            names=list(graph.names),
            types=_packed_ints("I", map(index, graph.types)),
            type_stamps=[],
            dead=[],
            deleted=[],
            unsorted=[],
            content_deleted=[],
            packed_at=packed_at,
            packed=packed,
            edge_counts=edge_counts,
            edges=edges,
            from_entities=_little(sources, "<u4"),
            to_entities=_little(targets, "<u4"),
            relation_types=_packed_ints("I", map(index, map(_THIRD, graph.relations))),
            hidden=[],
            bases=[],
            relation_deleted=[],
            updates=[],
            entity_attrs=[],
            decay_runs=[],
            layout=LAYOUT,
        )
    )


def _little(values: np.ndarray[Any, Any], dtype: str) -> bytes:
    """`values` as the codec's little-endian column of `dtype`."""
    return values.astype(dtype, copy=False).tobytes()


def _adjacency(
    n: int, sources: np.ndarray[Any, Any], targets: np.ndarray[Any, Any]
) -> tuple[bytes, bytes]:
    """Each entity's incident relations in creation order (a self-relation once), as the
    codec's counts and concatenated indexes: (entity, relation) pairs sorted by both."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    others = sources != targets
    relation = np.arange(len(sources), dtype=np.uint32)
    entities = np.concatenate([sources, targets[others]])
    relations = np.concatenate([relation, relation[others]])
    order = np.lexsort((relations, entities))
    counts = np.bincount(entities, minlength=n)
    return _little(counts, "<u4"), _little(relations[order], "<u4")


def _occurrences_compiled(
    written: Writers, graph: PlainGraph, origin: int, counts: np.ndarray[Any, Any]
) -> tuple[bytes, list[bytes]]:
    """`_occurrences` by the compiled writer the rebuild's prefix uses: every observation a
    row, in entity order, its stamp columns spread from its entity's. In Python, a loop that
    made an Occurrences per entity and encoded it took 0.8-0.9 s of a 1M-entity import."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    contents = list(chain.from_iterable(graph.observations))
    rows = len(contents)
    ends = np.cumsum(counts)
    # Entity i's occurrences follow its creation at the next sequence numbers: row r of it,
    # the k-th (from 0), is at entity_seq[i] + 1 + k, and k = r - (its first row).
    entity_seq = np.frombuffer(graph.entity_seq, dtype=np.int64)
    first_seq = np.repeat(entity_seq + 1 - (ends - counts), counts)
    stamps = (
        np.repeat(np.frombuffer(graph.entity_hlc, dtype=np.int64), counts),
        np.full(rows, origin, dtype=np.int64),
        first_seq + np.arange(rows, dtype=np.int64),
    )
    return written.pack_occurrences(contents, np.arange(rows, dtype=np.int64), ends, stamps)


def _occurrences(graph: PlainGraph, origin: int) -> tuple[bytes, list[bytes]]:
    """The entities with observations, and each one's occurrences packed as the codec packs
    them: an Occurrences whose stamps are columns, the origin an index into the snapshot's
    origin table (`origin`, the one origin of a plain log)."""
    encode = _ENCODER.encode
    packed_at: list[int] = []
    packed: list[bytes] = []
    for i, (contents, hlc, created) in enumerate(
        zip(graph.observations, graph.entity_hlc, graph.entity_seq, strict=True)
    ):
        if contents:
            count = len(contents)
            packed_at.append(i)
            packed.append(
                encode(
                    Occurrences(
                        list(contents),
                        [hlc] * count,
                        [origin] * count,
                        list(range(created + 1, created + 1 + count)),
                    )
                )
            )
    return _packed_ints("I", packed_at), packed
