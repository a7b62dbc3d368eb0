"""graph_entities (contract §8.5): search or list entities, filter, count, cut.

With `search`, the candidates are the keyword search's matches, best first, then the fuzzy
matches (`_fuzzy`: typos, spelling variants), fewest edits first; without it, every
entity by `sort_by` (confidence and last_seen descending, name ascending; ties by name). Then
`type` (a canonical type case-insensitively) and `min_confidence` (on the decayed confidence)
filter. `total` counts every candidate that passes the filters, before `limit`. Each entity is
a node object with its `edge_count` (its visible edges, current and superseded, both ways).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._entries import EntityEntry
from projections.graph_family._fuzzy import fuzzy_search
from projections.graph_family._index import FamilyIndex
from projections.graph_family._search import keyword_search
from projections.graph_family._types import type_filter
from projections.graph_family._values import Reading

__all__ = ["SORT_KEYS", "ListOptions", "graph_entities"]

SORT_KEYS = ("confidence", "last_seen", "name")
# A type filter with fewer entities than this share of all is walked through its own names
# rather than along the global order.
_SPARSE_SHARE = 8


@dataclass(frozen=True)
class ListOptions:
    search: str | None = None
    entity_type: str | None = None
    min_confidence: float | None = None
    sort_by: str = "confidence"
    limit: int = 20


def graph_entities(graph: GraphProjection, options: ListOptions) -> dict[str, Any]:
    """graph_entities' answer object for `options` over `graph`."""
    index = family_index(graph)
    reading = Reading(graph)
    keep_entry = _filter(options)
    if options.search is not None:
        names, total = keyword_search(
            index, reading.lookup, options.search, keep=keep_entry, limit=options.limit
        )
        # Then the fuzzy matches (typos, spelling variants), after every keyword match.
        fuzzy, fuzzy_total = fuzzy_search(
            index, options.search, keep=keep_entry, limit=options.limit - len(names)
        )
        names += fuzzy
        total += fuzzy_total
    else:

        def keep(name: str) -> bool:
            entry = index.entry(name)
            return entry is not None and (keep_entry is None or keep_entry(entry))

        names, total = _listed(index, options, keep)
    entities = []
    for name in names:
        value = reading.node(name)
        value["edge_count"] = len(graph.incident_keys(name))
        entities.append(value)
    return {"entities": entities, "total": total}


def _filter(options: ListOptions) -> Callable[[EntityEntry], bool] | None:
    """What `type` and `min_confidence` keep; None when neither is given."""
    if options.entity_type is None and options.min_confidence is None:
        return None
    matches_type = None if options.entity_type is None else type_filter([options.entity_type])
    least = options.min_confidence

    def keep(entry: EntityEntry) -> bool:
        return (matches_type is None or matches_type(entry.entity_type)) and (
            least is None or entry.confidence >= least
        )

    return keep


def _listed(
    index: FamilyIndex, options: ListOptions, keep: Callable[[str], bool]
) -> tuple[list[str], int]:
    least = options.min_confidence
    if options.entity_type is None:
        total = index.entity_count if least is None else index.count_confident(least)
        ordered: Iterable[str] = index.ordered(options.sort_by)
        if least is not None and options.sort_by == "confidence":
            ordered = index.confident(least)
        return list(islice(filter(keep, ordered), options.limit)), total
    types = index.types_matching(type_filter([options.entity_type]))
    of_type = index.names_of_types(types)
    total = len(of_type) if least is None else index.count_confident(least, types)
    if len(of_type) * _SPARSE_SHARE >= index.entity_count:
        return list(islice(filter(keep, index.ordered(options.sort_by)), options.limit)), total
    entries = [e for e in map(index.entry, of_type) if e is not None and keep(e.name)]
    return [e.name for e in heapq.nsmallest(options.limit, entries, key=_sort_key(options))], total


def _sort_key(options: ListOptions) -> Callable[[EntityEntry], tuple[Any, ...]]:
    if options.sort_by == "confidence":
        return lambda e: (-e.confidence, e.name)
    if options.sort_by == "last_seen":
        return lambda e: (-e.last_seen, e.name)
    return lambda e: (e.name,)
