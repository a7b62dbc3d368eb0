"""ReadGraph: what the official read tools read of a graph (graphmem.tools.memory_reads).

A GraphProjection provides it, and so does a graph's read image (projections.graph_image),
which answers the same reads from a mapped file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from projections.views import EntityView

__all__ = ["ReadGraph"]


class ReadGraph(Protocol):
    """The reads behind search_nodes, open_nodes and read_graph, with GraphProjection's
    semantics (alive entities and visible relations, in listing order)."""

    def entity_count(self) -> int: ...

    def entities(self) -> Iterator[EntityView]: ...

    def entities_named(
        self, names: Iterable[str], *, listing_order: bool = False
    ) -> list[EntityView]: ...

    def entities_page(self, offset: int, limit: int | None) -> list[EntityView]: ...

    def relation_keys(self) -> list[tuple[str, str, str]]: ...

    def relation_keys_read(self) -> Iterator[tuple[str, str, str]]: ...

    def relation_keys_of_any(self, names: Iterable[str]) -> list[tuple[str, str, str]]: ...
