"""SearchProjection between warm-up steps: a search scans the segments the filter has not
reached instead of finishing the filter, and answers as a full scan does."""

from __future__ import annotations

import pytest

from eventstore.events import EntityCreated, ObservationAdded
from projections.graph import GraphProjection
from projections.search import SearchProjection
from tests.helpers import stamp, substring_scan

SEGMENT = 4
ENTITIES = 40  # ten segments


def _graph() -> GraphProjection:
    graph = GraphProjection()
    events = []
    for i in range(ENTITIES):
        events.append(EntityCreated(name=f"n{i:02d}", entity_type="thing"))
        events.append(ObservationAdded(entity=f"n{i:02d}", content=f"token{i:02d} shared word"))
    graph.apply_all(stamp(events, start_seq=1))
    return graph


def _segments_only(graph: GraphProjection) -> SearchProjection:
    """An index whose segments are built and whose filter is not: a warm-up under way."""
    search = SearchProjection(segment_size=SEGMENT, buckets=257)
    search.note_names(graph.entity_names())
    assert search.warm(graph, graph.entity_count() + 1)  # the filter is left
    return search


@pytest.mark.parametrize("built", ["by warm", "of_graph"])
def test_a_search_during_a_warm_up_finds_every_match_and_leaves_the_filter_to_it(
    built: str,
) -> None:
    graph = _graph()
    if built == "of_graph":  # the early reads' one pass
        search = SearchProjection.of_graph(graph, segment_size=SEGMENT, buckets=257)
    else:
        search = _segments_only(graph)
    for query in ("token07", "TOKEN39", "shared", "word", "absent", "n1", "en2"):
        assert search.search(graph, query) == substring_scan(graph, query), query
    assert not search.warmed  # no search did the warm-up's work
    steps = 0
    while search.warm(graph, SEGMENT):  # a segment's filter a step
        steps += 1
        assert search.search(graph, "token31") == ["n31"]  # part filtered, part scanned
        assert search.search(graph, "shared") == substring_scan(graph, "shared")
    assert steps >= ENTITIES // SEGMENT - 1
    assert search.warmed
    assert search.search(graph, "token31") == ["n31"]


@pytest.mark.parametrize("built", ["by warm", "of_graph"])
def test_a_search_during_a_warm_up_finishes_a_filter_too_large_to_scan(
    built: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm-up of a large graph advances a step per request when requests keep coming: had
    every search scanned what the filter lacks, each would have cost a scan of most of the
    graph (~40 ms at a million entities) until the warm-up ended."""
    monkeypatch.setattr("projections.search.SCAN_WHILE_WARMING", 2 * SEGMENT)
    graph = _graph()
    if built == "of_graph":
        search = SearchProjection.of_graph(graph, segment_size=SEGMENT, buckets=257)
    else:
        search = _segments_only(graph)
    assert search.search(graph, "token07") == ["n07"]
    assert search.warmed  # finished by the search, not left to the warm-up


def test_without_a_warm_up_each_search_does_a_step_of_the_filter_until_it_is_whole() -> None:
    graph = _graph()
    search = SearchProjection(segment_size=SEGMENT, buckets=257)
    search.note_names(graph.entity_names())  # nobody warms: the searches must finish it
    for _ in range(ENTITIES):  # far more searches than steps
        assert search.search(graph, "token05") == ["n05"]
        if search.warmed:
            break
    assert search.warmed


def test_an_index_built_from_another_copy_of_the_graph_can_hold_this_graphs_names() -> None:
    """The early reads' index, adopted by the writer: after share_names, the names it answers
    are the writer's graph's own strings (no second copy), and its answers are unchanged."""
    built_from, served = _graph(), _graph()
    search = SearchProjection(segment_size=SEGMENT, buckets=257)
    search.note_names(built_from.entity_names())
    search.warm(built_from, ENTITIES + 1)
    own = {name: name for name in served.entity_names()}
    [before] = search.search(built_from, "token12")
    assert before == "n12" and before is not own["n12"]  # two copies of the same names
    search.share_names(served.entity_names())
    [after] = search.search(served, "token12")
    assert after is own["n12"]
    assert all(found is own[found] for found in search.search(served, "shared")) and search.search(
        served, "shared"
    ) == substring_scan(served, "shared")
