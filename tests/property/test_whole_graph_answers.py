"""Whole-graph answers take short cuts (graphmem.tools.graph_values, memory_reads): a subgraph
holding every alive entity lists its relations from the graph's relation listing rather than
walking each entity's edges, and a search every entity matches answers from the listing rather
than looking each name up. Over random logs folded in random orders (out-of-order stamps
re-sort the records), each must answer exactly what the long way answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.frozen_search import FrozenSearch
from eventstore.events import Envelope
from graphmem.tools.graph_values import entity_value, subgraph_value, whole_graph
from graphmem.tools.memory_reads import searched
from projections.graph import EntityView, GraphProjection
from projections.search import SearchProjection
from tests.property.test_graph_fold import envelope_sets


def _walked(graph: GraphProjection, entities: list[EntityView]) -> dict[str, Any]:
    """The subgraph as computed before the shortcut: every entity's incident relations."""
    return {
        "entities": [entity_value(e) for e in entities],
        "relations": [
            {"from": f, "to": t, "relationType": rt}
            for f, t, rt in graph.relation_keys_of_any([e.name for e in entities])
        ],
    }


@given(envelope_sets(), st.randoms(use_true_random=False), st.integers(0, 3))
def test_a_subgraph_of_every_entity_answers_what_walking_their_edges_answers(
    envelopes: list[Envelope], rng: Any, dropped: int
) -> None:
    rng.shuffle(envelopes)
    graph = GraphProjection()
    graph.apply_all(envelopes)
    everyone = list(graph.entities())
    assert subgraph_value(graph, everyone) == _walked(graph, everyone)
    assert subgraph_value(graph, everyone) == whole_graph(graph)
    # Fewer than all (or one named twice, as no caller does): the walk, as before.
    some = everyone[dropped:]
    assert subgraph_value(graph, some) == _walked(graph, some)
    if everyone:
        twice = [*everyone[1:], everyone[-1]]
        assert subgraph_value(graph, twice) == _walked(graph, twice)


def _searched_by_walk(graph: GraphProjection, names: list[str]) -> dict[str, Any]:
    return _walked(graph, graph.entities_named(names))


@given(envelope_sets(), st.randoms(use_true_random=False), st.sampled_from(["", "a", "x", "t"]))
def test_a_search_that_every_entity_matches_answers_what_looking_each_up_answers(
    envelopes: list[Envelope], rng: Any, query: str
) -> None:
    rng.shuffle(envelopes)
    graph = GraphProjection()
    graph.apply_all(envelopes)
    writer_search = SearchProjection()
    writer_search.note_names(graph.entity_names())
    for search in (FrozenSearch(graph), writer_search):
        names = search.search(graph, query)
        answer = searched(graph, search, query, entity_type=None, offset=None, limit=None)
        assert answer == _searched_by_walk(graph, names)
