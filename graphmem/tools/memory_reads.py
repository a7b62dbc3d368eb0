"""The answers of the official read tools (search_nodes, open_nodes, read_graph) as pure
functions of the read models, so that the tools and the early path (graphmem.early_reads,
which answers them before the actors run) compute them with one code.

Light on purpose: the early path imports this before the SDK and the actors are loaded.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from graphmem.tools.graph_body import GraphBody
from graphmem.tools.graph_values import paged, subgraph_keys, subgraph_of, subgraph_value
from projections.graph import EntityView, RelationKey
from projections.read_graph import ReadGraph

__all__ = [
    "Searcher",
    "Selection",
    "graph_page",
    "graph_selection",
    "opened",
    "search_selection",
    "searched",
    "shaped",
    "spilled",
]


class Searcher(Protocol):
    """A search index over the graph (the writer's SearchProjection, or a FrozenSearch)."""

    def search(self, graph: Any, query: str) -> list[str]: ...


@contextmanager
def _uncollected() -> Iterator[None]:
    """No cyclic collection while an answer is built. A whole graph's answer makes a few
    hundred thousand dicts and lists, none in a cycle, which set off collections that scan
    the graph's millions of live objects again and again: about a quarter of a broad call at
    50,000 entities. Collection resumes (if it was on) once the answer is built; as in
    projections.graph._codec, never left off by an interleaving thread."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


Selection = tuple[Iterable[EntityView], Iterable[RelationKey]]
"""A subgraph answer's entities (read lazily when they can be) and its relations' keys."""


def graph_page(graph: ReadGraph, offset: int | None, limit: int | None) -> dict[str, Any]:
    """read_graph: the whole graph, or a page of it in name order when either is given."""
    with _uncollected():
        return subgraph_of(*graph_selection(graph, offset, limit))


def graph_selection(graph: ReadGraph, offset: int | None, limit: int | None) -> Selection:
    """What `graph_page` answers, unshaped."""
    if limit is None and offset is None:
        return graph.entities(), graph.relation_keys_read()
    # From the graph's name index: a page costs the same whatever was deleted before.
    page = graph.entities_page(offset or 0, limit)
    return page, subgraph_keys(graph, page)


def searched(
    graph: ReadGraph,
    search: Searcher,
    query: str,
    *,
    entity_type: str | None,
    offset: int | None,
    limit: int | None,
) -> dict[str, Any]:
    """search_nodes: the entities whose text holds `query`, with their relations."""
    selection = search_selection(
        graph, search, query, entity_type=entity_type, offset=offset, limit=limit
    )
    with _uncollected():
        return subgraph_of(*selection)


def search_selection(
    graph: ReadGraph,
    search: Searcher,
    query: str,
    *,
    entity_type: str | None,
    offset: int | None,
    limit: int | None,
) -> Selection:
    """What `searched` answers, unshaped. Every entity is read once, by whoever shapes it."""
    names = search.search(graph, query)
    # A search lists the alive entities that match, each once, in listing order (the search
    # index's property tests hold it to a scan of the listing): when all match, the answer is
    # the listing itself, without a look-up per name, and with no filter nor page it is read
    # as it is shaped (no list of a million views).
    everyone = len(names) == graph.entity_count()
    paging = offset is not None or limit is not None
    if everyone and entity_type is None and not paging:
        return graph.entities(), graph.relation_keys_read()
    with _uncollected():
        found: Iterable[EntityView] = graph.entities() if everyone else graph.entities_named(names)
        if entity_type is not None:
            found = [e for e in found if e.entity_type == entity_type]
        page = paged(found, offset or 0, limit) if paging else list(found)
        return page, subgraph_keys(graph, page)


def shaped(select: Callable[[], Selection]) -> dict[str, Any]:
    """The answer of what `select` picks, as one value (the official JSON shape)."""
    with _uncollected():
        return subgraph_of(*select())


def spilled(select: Callable[[], Selection], directory: Path | None) -> GraphBody:
    """The answer of what `select` picks, spooled (graphmem.tools.graph_body) as it is read,
    the search included with collection paused (its lists set off collections too)."""
    with _uncollected():
        return GraphBody.spill(*select(), directory=directory)


def opened(graph: ReadGraph, names: list[str]) -> dict[str, Any]:
    """open_nodes: the named entities, with their relations."""
    with _uncollected():
        # The official order is the graph's listing order, not the order asked for.
        return subgraph_value(graph, graph.entities_named(names, listing_order=True))
