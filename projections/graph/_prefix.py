"""The graph snapshot of a log's plain prefix, written from its columns without a fold.

A rebuild's direct path (projections.plain_prefix) reads a log from its start while every
event is plain: a new entity's creation, an observation of an entity created before it, a new
relation between two such entities, or an event the graph keeps no element for (schemas,
markers, decay runs), each stamped after every event before it. What the fold makes of such a
prefix is known without folding it, as for a bulk import's log (projections.graph._plain,
whose column helpers this reuses): every entity alive, listed in creation order, its
occurrences in order after its creation; every relation visible, in creation order, in its
endpoints' adjacency. Unlike a bulk import's log, the prefix may hold several origins, each
observation its own stamp, creations with graph attributes, relations with a base that is not
plain, and decay runs. tests/property/test_plain_prefix.py proves the snapshot written here
equal, byte for byte, to the fold's of the same prefix.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import compress, count
from typing import TYPE_CHECKING, Any

from msgspec.structs import astuple

from eventstore.events import DecayApplied, EntityCreated, RelationCreated
from projections.graph._codec import _ENCODER, LAYOUT, _packed_ints, _Snapshot, _Stamps
from projections.graph._plain import _little
from projections.graph._records import (
    PLAIN,
    PLAIN_TAIL,
    FoldStamp,
    Occurrences,
    creation_attrs,
    has_attributes,
    held_base,
)
from projections.prefix_write import writers

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PrefixGraph", "prefix_snapshot", "relation_keys", "same_runs"]


def _ints() -> array[int]:
    return array("q")


@dataclass
class PrefixGraph:
    """The graph elements of a plain prefix as parallel columns, in log order (see the
    module docstring). Stamps are (hlc, origin id, origin_seq), an origin id indexing
    `origins` (every origin of the prefix, in first-seen order). An observation names its
    entity by index; a relation its endpoints. `attributed` and `bases` hold the rare
    creations that are not plain ones, by entity index or relation row."""

    position: int = 0
    # The origin "" first: the zero stamp's, which names written to before any creation hold.
    origins: list[str] = field(default_factory=lambda: [""])
    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    entity_hlc: array[int] = field(default_factory=_ints)
    entity_origin: array[int] = field(default_factory=_ints)
    entity_seq: array[int] = field(default_factory=_ints)
    stubs: list[int] = field(default_factory=list)  # names never created (see PlainPrefix)
    attributed: list[tuple[int, EntityCreated]] = field(default_factory=list)
    observed: array[int] = field(default_factory=_ints)
    contents: list[str] = field(default_factory=list)
    observation_hlc: array[int] = field(default_factory=_ints)
    observation_origin: array[int] = field(default_factory=_ints)
    observation_seq: array[int] = field(default_factory=_ints)
    sources: array[int] = field(default_factory=_ints)
    targets: array[int] = field(default_factory=_ints)
    relation_types: list[str] = field(default_factory=list)
    relation_hlc: array[int] = field(default_factory=_ints)
    relation_origin: array[int] = field(default_factory=_ints)
    relation_seq: array[int] = field(default_factory=_ints)
    # Each element event's kind in log order (0 a creation, 1 an observation, 2 a relation),
    # so that the rows of the three kinds can be put back in log order.
    kinds: array[int] = field(default_factory=lambda: array("b"))
    bases: list[tuple[int, RelationCreated]] = field(default_factory=list)
    decay_runs: list[tuple[int, int, int, DecayApplied]] = field(default_factory=list)


def prefix_snapshot(  # noqa: PLR0915 (the codec's columns, in order)
    graph: PrefixGraph, *, compiled: bool | None = None
) -> bytes:
    """The snapshot GraphProjection.to_snapshot gives after folding the prefix `graph` holds;
    its occurrences packed by the compiled writer or in Python as `compiled` asks
    (projections.prefix_write)."""
    import numpy as np  # noqa: PLC0415 (a rebuild's, not every server's: see _plain)

    n = len(graph.names)
    written = writers(compiled)
    firsts, lasts = relation_keys(graph, compiled=compiled)
    kept = np.arange(len(graph.sources)) == lasts  # a key is listed at its latest creation
    m = int(kept.sum())
    is_stub = np.zeros(n, dtype=bool)
    is_stub[np.array(graph.stubs, dtype=np.intp)] = True
    origins = sorted({"", *graph.origins})
    # Origin ids (first-seen) to the snapshot's sorted origin table.
    renumber = np.array([origins.index(o) for o in graph.origins] or [0], dtype=np.uint32)
    entity_hlc = _column(graph.entity_hlc)
    entity_origin = renumber[_column(graph.entity_origin)]
    entity_seq = _column(graph.entity_seq)
    observed = _column(graph.observed)
    # Each entity's occurrences in log order: a stable sort by entity keeps it.
    order = np.argsort(observed, kind="stable")
    counts = np.bincount(observed, minlength=n)
    ends = np.cumsum(counts)
    obs_hlc = _column(graph.observation_hlc)[order]
    obs_origin = renumber[_column(graph.observation_origin)][order]
    obs_seq = _column(graph.observation_seq)[order]
    # A watermark is the entity's last occurrence, or its creation.
    has = counts > 0
    last = ends[has] - 1
    mark_hlc, mark_origin, mark_seq = entity_hlc.copy(), entity_origin.copy(), entity_seq.copy()
    mark_hlc[has], mark_origin[has], mark_seq[has] = obs_hlc[last], obs_origin[last], obs_seq[last]
    relation_hlc = _column(graph.relation_hlc)[kept]
    relation_origin = renumber[_column(graph.relation_origin)][kept]
    relation_seq = _column(graph.relation_seq)[kept]
    # The stamp table as the codec lays it out: creations, watermarks, relation creations,
    # the newest entity and relation creation (none: the zero stamp, index 0), then every
    # other stamp in the order the codec refers to it (attributes, then decay runs).
    hlc = [entity_hlc, mark_hlc, relation_hlc]
    origin = [entity_origin, mark_origin, relation_origin]
    seq = [entity_seq, mark_seq, relation_seq]
    size = 2 * n + m
    refs: list[tuple[int, int, int]] = []
    entities_last = relations_last = 0
    created = np.flatnonzero(~is_stub)
    if len(created):  # the newest creation: the last entity that is not a stub
        i = int(created[-1])
        refs.append((graph.entity_hlc[i], int(entity_origin[i]), graph.entity_seq[i]))
        entities_last = size + len(refs)
    if m:  # the newest creation is the last row, never superseded
        refs.append((graph.relation_hlc[-1], int(relation_origin[-1]), graph.relation_seq[-1]))
        relations_last = size + len(refs)
    entity_attrs = _attributes(graph, origins, refs, size)
    decay_runs = []
    for run_hlc, run_origin, run_seq, run in graph.decay_runs:
        refs.append((run_hlc, int(renumber[run_origin]), run_seq))
        decay_runs.append((size + len(refs), run))
    if refs:
        hlc.append(np.array([r[0] for r in refs], dtype=np.int64))
        origin.append(np.array([r[1] for r in refs], dtype=np.uint32))
        seq.append(np.array([r[2] for r in refs], dtype=np.int64))
    # Types and relation types index one string table, in first-seen order.
    relation_types = list(compress(graph.relation_types, kept.tolist()))
    strings = dict.fromkeys(graph.types)
    strings.update(dict.fromkeys(relation_types))
    index = {string: i for i, string in enumerate(strings)}.__getitem__
    sources = _column(graph.sources)[kept].astype(np.uint32)
    targets = _column(graph.targets)[kept].astype(np.uint32)
    edge_counts, edges = _adjacency(n, sources, targets, firsts[kept])
    hidden = np.flatnonzero(is_stub[sources] | is_stub[targets]).tolist()
    if written is None:
        packed_at, packed = _occurrences(graph, order, ends, (obs_hlc, obs_origin, obs_seq))
    else:
        packed_at, packed = written.pack_occurrences(
            graph.contents, order, ends, (obs_hlc, obs_origin.astype(np.int64), obs_seq)
        )
    return _ENCODER.encode(
        _Snapshot(
            position=graph.position,
            entities_last=entities_last,
            entities_unsorted=False,
            alive=n - len(graph.stubs),
            relations_last=relations_last,
            relations_unsorted=False,
            visible=m - len(hidden),
            origins=origins,
            strings=list(strings),
            stamps=_Stamps(
                _little(np.concatenate(hlc), "<i8"),
                _little(np.concatenate(origin), "<u4"),
                _little(np.concatenate(seq), "<i8"),
            ),
            names=graph.names,
            types=_packed_ints("I", map(index, graph.types)),
            type_stamps=[],
            dead=graph.stubs,
            deleted=[],
            unsorted=[],
            content_deleted=[],
            packed_at=packed_at,
            packed=packed,
            edge_counts=edge_counts,
            edges=edges,
            from_entities=_little(sources, "<u4"),
            to_entities=_little(targets, "<u4"),
            relation_types=_packed_ints("I", map(index, relation_types)),
            hidden=hidden,
            bases=_bases(graph, kept),
            relation_deleted=[],
            updates=[],
            entity_attrs=entity_attrs,
            decay_runs=decay_runs,
            layout=LAYOUT,
        )
    )


def relation_keys(
    graph: PrefixGraph, *, compiled: bool | None = None
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """For each relation row, the first and the last row of its key (rows are creations; a
    key created again keeps its first one's place in adjacency, the fold lists it at the
    last, and the conflicts model at the first); found by the compiled writers' hash table
    or by sorting, as `compiled` asks (projections.prefix_write)."""
    import numpy as np  # noqa: PLC0415 (see prefix_snapshot)

    written = writers(compiled)
    if written is not None:
        found = written.key_rows(graph.sources, graph.targets, graph.relation_types)
        return np.frombuffer(found[0], np.int64), np.frombuffer(found[1], np.int64)

    types: dict[str, int] = {}
    type_ids = np.fromiter(
        map(types.setdefault, graph.relation_types, count()), np.int64, len(graph.sources)
    )
    rows = np.arange(len(graph.sources))
    sources, targets = _column(graph.sources), _column(graph.targets)
    order = np.lexsort((rows, type_ids, targets, sources))
    return same_runs(order, (sources, targets, type_ids))


def _column(values: array[int]) -> np.ndarray[Any, Any]:
    """An int64 column as a numpy array, without a copy."""
    import numpy as np  # noqa: PLC0415 (see prefix_snapshot)

    return np.frombuffer(values, dtype=np.int64)


def same_runs(
    order: np.ndarray[Any, Any], columns: tuple[np.ndarray[Any, Any], ...]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Rows sorted by key (`order`, rows ascending within a key) to each row's first and last
    row with the same key, as given by `columns`."""
    import numpy as np  # noqa: PLC0415 (see prefix_snapshot)

    size = len(order)
    starts = np.ones(size, dtype=bool)
    for column in columns:
        ordered = column[order]
        starts[1:] &= ordered[1:] == ordered[:-1]
    starts[1:] = ~starts[1:]
    run = np.cumsum(starts) - 1
    begin = np.flatnonzero(starts)
    end = np.append(begin[1:], size) - 1
    firsts = np.empty(size, dtype=np.int64)
    lasts = np.empty(size, dtype=np.int64)
    firsts[order] = order[begin[run]]
    lasts[order] = order[end[run]]
    return firsts, lasts


def _attributes(
    graph: PrefixGraph, origins: list[str], refs: list[tuple[int, int, int]], size: int
) -> list[tuple[int, dict[str, tuple[int, Any]]]]:
    """The entity attribute registers the creations in `graph.attributed` wrote, each
    stamp added to the table (`refs`, after `size` columns) as the codec adds it."""
    columns: list[tuple[int, dict[str, tuple[int, Any]]]] = []
    for i, event in graph.attributed:
        if not has_attributes(event):
            continue
        stamp = FoldStamp(graph.entity_hlc[i], graph.origins[graph.entity_origin[i]], 0)
        registers: dict[str, tuple[int, Any]] = {}
        for name, (_, value) in creation_attrs(event, stamp).items():
            refs.append((stamp.hlc, origins.index(stamp.origin), graph.entity_seq[i]))
            registers[name] = (size + len(refs), value)
        if registers:
            columns.append((i, registers))
    return columns


def _bases(
    graph: PrefixGraph, kept: np.ndarray[Any, Any]
) -> list[tuple[int, RelationCreated | None]]:
    """The relations whose base is not their key's plain creation, as the codec lists them
    (by index among the rows kept)."""
    at = (kept.cumsum() - 1).tolist()
    listed = kept.tolist()
    return [
        (at[j], event)
        for j, event in graph.bases
        if listed[j] and held_base(event) is not PLAIN and astuple(event)[3:] != PLAIN_TAIL
    ]


def _adjacency(
    n: int,
    sources: np.ndarray[Any, Any],
    targets: np.ndarray[Any, Any],
    firsts: np.ndarray[Any, Any],
) -> tuple[bytes, bytes]:
    """Each entity's incident relations (a self-relation once) in the order the fold added
    them, their keys' first creations, as the codec's counts and concatenated indexes.
    _plain's `_adjacency` where no key was created twice (there each row is its own first)."""
    import numpy as np  # noqa: PLC0415 (see prefix_snapshot)

    others = sources != targets
    relation = np.arange(len(sources), dtype=np.uint32)
    entities = np.concatenate([sources, targets[others]])
    relations = np.concatenate([relation, relation[others]])
    added = np.concatenate([firsts, firsts[others]])
    order = np.lexsort((added, entities))
    counts = np.bincount(entities, minlength=n)
    return _little(counts, "<u4"), _little(relations[order], "<u4")


def _occurrences(
    graph: PrefixGraph,
    order: np.ndarray[Any, Any],
    ends: np.ndarray[Any, Any],
    stamps: tuple[np.ndarray[Any, Any], ...],
) -> tuple[bytes, list[bytes]]:
    """The entities with observations, and each one's occurrences packed as the codec packs
    them (contents, then the stamps as columns, origins indexing the snapshot's table)."""
    contents = list(map(graph.contents.__getitem__, order.tolist()))
    hlcs, origins, seqs = (column.tolist() for column in stamps)
    encode = _ENCODER.encode
    packed_at: list[int] = []
    packed: list[bytes] = []
    start = 0
    for i, end in enumerate(ends.tolist()):
        if end > start:
            packed_at.append(i)
            packed.append(
                encode(
                    Occurrences(
                        contents[start:end], hlcs[start:end], origins[start:end], seqs[start:end]
                    )
                )
            )
            start = end
    return _packed_ints("I", packed_at), packed
