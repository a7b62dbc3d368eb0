"""A subgraph holding every alive entity (a broad search_nodes) lists its relations from the
graph's relation listing rather than walking each entity's edges (graphmem.tools.graph_values):
over random logs, folded in random orders (out-of-order stamps re-sort the records), it must
answer exactly what the walk answers, and what read_graph answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import Envelope
from graphmem.tools.graph_values import entity_value, subgraph_value, whole_graph
from projections.graph import EntityView, GraphProjection
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
