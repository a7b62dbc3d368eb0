"""The FamilyIndex across successive decay runs: a run with the same rates re-derives only the
elements that cross a day boundary, and every read then equals a fresh fold's (a property)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.graph import GraphProjection
from projections.graph_family import (
    ListOptions,
    QueryOptions,
    family_index,
    graph_entities,
    graph_query,
    graph_stats,
)
from tests.projections.graph_family_support import Feed, days

NAMES = ["Ann", "Bo", *(f"P{i}" for i in range(38))]
HOUR = 3_600_000


def reads(graph: GraphProjection, now: int) -> list[Any]:
    return [
        *(
            graph_stats(graph, now_ms=now + days(offset), stale_confidence=0.79, stale_days=1)
            for offset in (0, 100)
        ),
        graph_entities(graph, ListOptions(limit=200)),
        *(
            graph_entities(graph, ListOptions(min_confidence=least, limit=200))["total"]
            for least in (0.1, 0.4, 0.6, 0.75)
        ),
        graph_entities(graph, ListOptions(entity_type="person", limit=200)),
        graph_query(graph, QueryOptions(entities=["Ann"], max_hops=2, min_weight=0.0)),
        # The index's own figures, unrounded.
        sorted((e.name, e.confidence) for e in family_index(graph).entries()),
        sorted((k, e.shown) for k, e in family_index(graph).relation_entries().items()),
        family_index(graph).average_weight(),
        list(family_index(graph).hubs()),
        family_index(graph).stale(0.79, 1 << 62),  # kept across runs
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=72), min_size=len(NAMES), max_size=len(NAMES)),
    # Mostly an hour or two (a few elements cross a day: re-derived one by one), sometimes
    # days (most cross: everything is re-derived).
    st.lists(
        st.sampled_from([0, 1, 2, 3, 5, 30, 24 * 6, 24 * 10 + 20, 24 * 40]), min_size=1, max_size=5
    ),
    st.booleans(),
)
def test_reads_after_successive_runs_equal_those_of_a_fresh_fold(
    ages_hours: list[int], run_gaps_hours: list[int], touch_between: bool
) -> None:
    feed = Feed().entity(NAMES[0], "Person", confidence=0.8)
    start = feed.ms
    # Created (so last seen and confirmed) over three days, in time order as a log has them.
    for name, hours in sorted(zip(NAMES[1:], ages_hours, strict=False), key=lambda p: p[1]):
        feed.entity(name, "Person", confidence=0.8)
        feed.edge(name, NAMES[0], weight=0.7)
        feed.edge(name, NAMES[0], "LIKES", weight=0.31)  # below the hub weight after 11 days
        feed.ms = max(feed.ms, start + hours * HOUR)
    at = feed.ms
    feed.decay(at=at)
    reads(feed.graph, feed.ms)  # builds the index; later runs re-derive it
    for gap in run_gaps_hours:
        at += gap * HOUR
        feed.decay(at=at)
        if touch_between:
            feed.update_edge("Bo", "Ann", "KNOWS", weight=0.9, last_confirmed=at)
        assert reads(feed.graph, feed.ms) == reads(feed.refolded(), feed.ms)


def test_an_edge_crossing_the_hub_weight_in_a_same_rates_run_updates_the_hubs() -> None:
    feed = Feed().entity("Hub", "Person", confidence=0.8)
    for i in range(3):
        feed.entity(f"Fan{i}", "Person", confidence=0.8)
        feed.edge(f"Fan{i}", "Hub", "LIKES", weight=0.31)  # 0.31 x 0.997^11 < 0.3
    created = feed.ms
    feed.ms += 12 * HOUR  # fillers at another time of day: they cross no day with the edges
    for i in range(60):
        feed.entity(f"Filler{i}", "Person", confidence=0.8)
    feed.decay(at=created + days(11) - HOUR)
    assert [name for _, name in family_index(feed.graph).hubs()] == ["Hub"]
    feed.decay(at=created + days(11) + HOUR)  # only the three edges and their ends cross
    assert list(family_index(feed.graph).hubs()) == []
    assert reads(feed.graph, feed.ms) == reads(feed.refolded(), feed.ms)
