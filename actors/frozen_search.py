"""FrozenSearch: the search of a graph that never changes again (an as-of one, or the one the
early reads restore at start-up), in a module of its own so that a light caller
(graphmem.early_reads) need not import the time travel around it."""

from __future__ import annotations

import itertools
from bisect import bisect_right

from projections.graph import GraphProjection
from projections.search import ENTITY_SEPARATOR, entity_text

__all__ = ["FrozenSearch"]


class FrozenSearch:
    """SearchProjection's matching over a graph that never changes again (an as-of one), built
    in one pass over its listing: several times faster than filling a SearchProjection name
    by name, which looks each one up and sorts them all. Same texts, same order: an entity is
    `name NUL type NUL obs...`, lowercased, entities joined by U+0001; a query (which never
    holds either: the edge refuses control characters) cannot match across fields or
    entities."""

    def __init__(self, graph: GraphProjection) -> None:
        names: list[str] = []
        texts: list[str] = []
        for entity in graph.entities():
            names.append(entity.name)
            texts.append(entity_text(entity))
        self._names = names
        # starts[i] is where entity i begins in the joined text; one more marks the end.
        self._starts = list(itertools.accumulate((len(t) + 1 for t in texts), initial=0))
        self._joined = ENTITY_SEPARATOR.join(texts)

    def search(self, graph: GraphProjection, query: str) -> list[str]:
        if not self._names:
            return []
        needle, joined, starts, names = query.lower(), self._joined, self._starts, self._names
        found: list[str] = []
        at = joined.find(needle)
        while at >= 0:
            index = bisect_right(starts, at) - 1
            found.append(names[index])
            at = joined.find(needle, starts[index + 1])
        return found
