"""The conflicts model's snapshot of a log's plain prefix, written from the graph's columns.

ConflictsProjection keeps, per element (an entity, an observation content on an entity, a
relation key), each origin's latest write, in the order elements were first written; its
snapshot is msgpack of (position, {key: write or {origin: write}}). In a plain prefix
(projections.plain_prefix) an entity is written once, and so mostly is every observation
content and relation key: the map is written here from the columns (keys and writes in log
order, by C-level passes) instead of one dict insert per event, and only an element written
again is folded as the model folds it. tests/property/test_plain_prefix.py proves the bytes
equal to the model's.
"""

from __future__ import annotations

from itertools import compress, count, repeat
from typing import TYPE_CHECKING, Any

import msgspec

from projections.graph import PrefixGraph, relation_keys, same_runs
from projections.prefix_write import writers

if TYPE_CHECKING:
    import numpy as np

__all__ = ["conflicts_snapshot"]

_encode = msgspec.msgpack.Encoder().encode
Write = tuple[int, str, int, str]
"""(hlc, origin, origin_seq, event tag): a write as the model's snapshot encodes one."""


def conflicts_snapshot(graph: PrefixGraph, *, compiled: bool | None = None) -> bytes:
    """ConflictsProjection.to_snapshot after folding the prefix `graph` holds, written by the
    compiled writer or this module's Python as `compiled` asks (projections.prefix_write)."""
    written = writers(compiled)
    if written is not None:
        return written.conflicts_snapshot(graph)
    return _python_snapshot(graph)


def _python_snapshot(graph: PrefixGraph) -> bytes:
    """conflicts_snapshot in Python: the fallback, and the compiled writer's reference."""
    import numpy as np  # noqa: PLC0415 (a rebuild's, not every server's)

    names = graph.names
    origin_of = graph.origins.__getitem__
    stubs = set(graph.stubs)
    created = [i not in stubs for i in range(len(names))] if stubs else [True] * len(names)
    keys: list[tuple[str, ...]] = [
        *zip(repeat("entity"), compress(names, created)),
        *zip(repeat("observation"), map(names.__getitem__, graph.observed), graph.contents),
        *zip(
            repeat("relation"),
            map(names.__getitem__, graph.sources),
            map(names.__getitem__, graph.targets),
            graph.relation_types,
        ),
    ]
    writes: list[Any] = [
        *zip(
            compress(graph.entity_hlc, created),
            map(origin_of, compress(graph.entity_origin, created)),
            compress(graph.entity_seq, created),
            repeat("EntityCreated"),
        ),
        *zip(
            graph.observation_hlc,
            map(origin_of, graph.observation_origin),
            graph.observation_seq,
            repeat("ObservationAdded"),
        ),
        *zip(
            graph.relation_hlc,
            map(origin_of, graph.relation_origin),
            graph.relation_seq,
            repeat("RelationCreated"),
        ),
    ]
    kept = np.ones(len(keys), dtype=bool)
    start = len(keys) - len(graph.observed) - len(graph.sources)
    _written_again(_observation_firsts(graph), start, writes, kept)
    _written_again(relation_keys(graph)[0], start + len(graph.observed), writes, kept)
    # The rows are grouped by kind, each kind in log order: the stable sort of the kinds in
    # log order gives each grouped row's place in the log; its inverse, the rows in log order.
    grouped = np.argsort(np.frombuffer(graph.kinds, dtype=np.int8), kind="stable")
    in_log = np.empty(len(grouped), dtype=np.int64)
    in_log[grouped] = np.arange(len(grouped))
    order = in_log[kept[in_log]].tolist()
    flat: list[Any] = [None] * (2 * len(order))
    flat[0::2] = map(keys.__getitem__, order)
    flat[1::2] = map(writes.__getitem__, order)
    # The map as msgspec writes a dict: its header, then key, value, ... as the list's items.
    body = _encode(flat)[_header_size(len(flat)) :]
    return b"\x92" + _encode(graph.position) + _map_header(len(order)) + body


def _observation_firsts(graph: PrefixGraph) -> np.ndarray[Any, Any]:
    """For each observation row, the first row of the same entity and content."""
    import numpy as np  # noqa: PLC0415 (see conflicts_snapshot)

    size = len(graph.observed)
    contents: dict[str, int] = {}
    content_ids = np.fromiter(map(contents.setdefault, graph.contents, count()), np.int64, size)
    entities = np.frombuffer(graph.observed, dtype=np.int64)
    order = np.lexsort((np.arange(size), content_ids, entities))
    return same_runs(order, (entities, content_ids))[0]


def _written_again(
    firsts: np.ndarray[Any, Any], start: int, writes: list[Any], kept: np.ndarray[Any, Any]
) -> None:
    """Each element written more than once (rows `start` + r whose first row is not r): its
    first row takes the writes as the model folds them, the later rows are dropped."""
    import numpy as np  # noqa: PLC0415 (see conflicts_snapshot)

    again = np.flatnonzero(firsts != np.arange(len(firsts))).tolist()
    for row in again:  # in row order, so in stamp order: the prefix's stamps only rise
        first = start + int(firsts[row])
        writes[first] = _folded(writes[first], writes[start + row])
        kept[start + row] = False


def _folded(known: Write | dict[str, Write], write: Write) -> Write | dict[str, Write]:
    """A newer `write` to an element the model holds `known` for: the latest per origin, a
    dict once a second origin wrote it (ConflictsProjection.apply_all)."""
    if isinstance(known, dict):
        known[write[1]] = write
        return known
    if known[1] == write[1]:
        return write
    return {known[1]: known, write[1]: write}


def _header_size(items: int) -> int:
    """The bytes of a msgpack array header for `items` items."""
    return 1 if items < 16 else 3 if items < 1 << 16 else 5


def _map_header(entries: int) -> bytes:
    """A msgpack map header for `entries` entries, as msgspec writes it (the shortest)."""
    if entries < 16:
        return bytes((0x80 | entries,))
    if entries < 1 << 16:
        return b"\xde" + entries.to_bytes(2, "big")
    return b"\xdf" + entries.to_bytes(4, "big")
