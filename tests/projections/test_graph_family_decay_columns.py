"""Decay over columns equals decay element by element: the vectorised formula against
projections.graph_decay.decayed, and graph_decay's report and graph_prune's selection against
a naive per-element computation over random graphs, dates and rates (properties)."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import DecayApplied, EntityDeleted
from projections.graph import GraphProjection
from projections.graph_decay import (
    decayed,
    decayed_column,
    entity_rate,
    newest_run,
    round6_column,
)
from projections.graph_family import (
    DecayReport,
    PruneThresholds,
    Reading,
    decay_report,
    prune_selection,
)
from projections.graph_family._columns import DecayColumns
from projections.graph_family._values import decayed_weight
from tests.projections.graph_family_support import DAY_MS, T0, Feed

HOUR = 3_600_000
TYPES = ["Person", "person", "Fact", "Event", "Technology"]
# Values a graph holds: defaults, thresholds, touches' 6-place results, and arbitrary floats.
VALUES = st.one_of(
    st.sampled_from([0.5, 0.1, 0.05, 0.3, 0.01, 1.0, 0.0, 0.7, 0.0999995, 0.0500005]),
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=0, max_value=1_000_000).map(lambda k: k / 1e6),
)
RATES = st.one_of(
    st.sampled_from([0.996, 0.997, 0.998, 0.993, 0.5, 0.999999, 1.0]),
    st.floats(min_value=0.01, max_value=1.0),
)
FLOORS = st.sampled_from([0.01, 0.0, 0.05, None])


def runs(at: st.SearchStrategy[int]) -> st.SearchStrategy[DecayApplied]:
    return st.builds(
        DecayApplied,
        at=at,
        rate=RATES,
        rates=st.dictionaries(st.sampled_from(["person", "fact", "event"]), RATES, max_size=3),
        edge_rate=st.one_of(st.none(), RATES),
        floor=FLOORS,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(VALUES, st.integers(-DAY_MS, 800 * DAY_MS), st.integers(0, 2), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.one_of(st.none(), RATES), min_size=3, max_size=3),
    runs(st.just(T0)),
)
def test_the_vectorised_formula_equals_decayed_element_by_element(
    elements: list[tuple[float, int, int, bool]],
    class_rates: list[float | None],
    run: DecayApplied,
) -> None:
    base = np.array([e[0] for e in elements], dtype=np.float64)
    reference = np.array([T0 - e[1] for e in elements], dtype=np.int64)
    classes = np.array([e[2] for e in elements], dtype=np.intp)
    exempt = np.array([e[3] for e in elements], dtype=np.bool_)
    got = decayed_column(base, reference, classes, class_rates, run=run, exempt=exempt).tolist()
    expected = [
        value
        if is_exempt or class_rates[c] is None
        else decayed(value, T0 - age, run, class_rates[c] or 0.0)
        for value, age, c, is_exempt in elements
    ]
    assert got == expected


def test_a_decayed_value_next_to_a_half_rounds_as_round_does_not_as_numpy_round() -> None:
    # 0.010875 x 0.996 = 0.0108315 as a decimal, a hair below it as a double: round() gives
    # 0.010831, numpy.round (which scales first) 0.010832.
    run = DecayApplied(at=T0 + DAY_MS, rate=0.996, floor=0.01)
    got = decayed_column(
        np.array([0.010875, 0.011125]),
        np.array([T0, T0], dtype=np.int64),
        np.zeros(2, dtype=np.intp),
        [0.996],
        run=run,
        exempt=np.zeros(2, dtype=np.bool_),
    )
    assert got.tolist() == [decayed(0.010875, T0, run, 0.996), decayed(0.011125, T0, run, 0.996)]
    assert got.tolist() == [0.010831, 0.011081]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
            # Halves at the 7th place, and their neighbours: where rint(x * 1e6) can go wrong.
            st.integers(-(10**9), 10**9).map(lambda k: (k + 0.5) / 1e6),
            st.integers(0, 10**6).map(lambda k: np.nextafter((k + 0.5) / 1e6, 2.0)),
            st.integers(0, 10**6).map(lambda k: np.nextafter((k + 0.5) / 1e6, -2.0)),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_rounding_a_column_to_6_places_equals_round(values: list[float]) -> None:
    column = np.array(values, dtype=np.float64)
    assert round6_column(column).tolist() == [round(float(v), 6) for v in values]


# --- the report and the selection against a naive computation ------------------------------


def naive_report(
    graph: GraphProjection, run: DecayApplied, node_threshold: float, edge_threshold: float
) -> tuple[Any, ...]:
    """The report as §6 and §8.9 say, one element at a time from the graph's own reads (in
    as_plain's shape)."""
    reading = Reading(graph)
    shown = reading.run
    current = newest_run([run, shown] if shown is not None else [run])
    effective = run if current is run else shown
    assert effective is not None
    node_drops: list[tuple[float, str, Any]] = []
    weak: list[str] = []
    for name in graph.entity_names():
        if reading.is_rule(name):
            continue
        attrs = reading.attrs(name)
        rate = entity_rate(effective, reading.entity_type(name))
        new = decayed(attrs.confidence, attrs.last_seen, effective, rate)
        old = reading.confidence(name)
        if new != old:
            node_drops.append((-round(old - new, 6), name, (reading.entity_type(name), old, new)))
        if new < node_threshold:
            weak.append(name)
    edge_drops: list[tuple[float, Any, Any]] = []
    below = 0
    new_weights: dict[Any, tuple[bool, float]] = {}
    for key in graph.relation_keys():
        facts = reading.edge(key)
        if facts is None:
            continue
        exempt = reading.is_rule(key[0]) or reading.is_rule(key[1])
        new = decayed_weight(
            facts.view.weight, facts.details.last_confirmed, effective, exempt=exempt
        )
        new_weights[key] = (exempt, new)
        if exempt:
            continue
        if new != facts.weight:
            edge_drops.append((-round(facts.weight - new, 6), key, (facts.weight, new)))
        if new < edge_threshold:
            below += 1

    def held(name: str) -> bool:
        return any(
            key in new_weights and (new_weights[key][0] or new_weights[key][1] >= edge_threshold)
            for key in graph.incident_keys(name)
        )

    nodes = heapq.nsmallest(100, node_drops, key=lambda d: d[:2])
    edges = heapq.nsmallest(100, edge_drops, key=lambda d: d[:2])
    return (
        effective.at,
        len(node_drops),
        len(edge_drops),
        sum(1 for name in weak if not held(name)),
        below,
        [(name, *rest) for _, name, rest in nodes],
        [(key, *rest) for _, key, rest in edges],
    )


def as_plain(report: DecayReport) -> tuple[Any, ...]:
    return (
        report.at,
        report.nodes_decayed,
        report.edges_decayed,
        report.nodes_flagged,
        report.edges_below,
        [(d.name, d.entity_type, d.old, d.new) for d in report.details],
        [(d.key, d.old, d.new) for d in report.edge_details],
    )


def naive_candidates(
    graph: GraphProjection, node_threshold: float, edge_threshold: float
) -> tuple[list[Any], list[str], list[str]]:
    """Prune's edges, low-confidence entities and edgeless entities, element by element."""
    reading = Reading(graph)
    edges, low, edgeless = [], [], []
    visible = {key: reading.edge(key) for key in graph.relation_keys()}
    for key, facts in visible.items():
        rule = reading.is_rule(key[0]) or reading.is_rule(key[1])
        if facts is not None and not rule and facts.weight < edge_threshold:
            edges.append(key)
    for name in graph.entity_names():
        if reading.is_rule(name):
            continue
        mine = [k for k in graph.incident_keys(name) if visible.get(k) is not None]
        strong = any(
            reading.is_rule(k[0]) or reading.is_rule(k[1]) or facts.weight >= edge_threshold
            for k in mine
            if (facts := visible[k]) is not None
        )
        if reading.confidence(name) < node_threshold and not strong:
            low.append(name)
        if not mine:
            edgeless.append(name)
    return sorted(edges), sorted(low), sorted(edgeless)


ENTITY = st.tuples(
    st.sampled_from(TYPES),
    VALUES,
    st.integers(0, 400 * 24),  # hours before the end of the feed it was last seen
    st.sampled_from([None, None, None, "rule"]),
)
EDGE = st.tuples(
    st.integers(0, 11),
    st.integers(0, 11),
    st.sampled_from(["KNOWS", "USES"]),
    VALUES,
    st.integers(0, 400 * 24),  # hours before the end of the feed it was last confirmed
)


def random_graph(
    entities: list[tuple[str, float, int, str | None]],
    edges: list[tuple[int, int, str, float, int]],
    deleted: list[int],
    earlier_run: DecayApplied | None,
) -> Feed:
    feed = Feed()
    end = T0 + 500 * DAY_MS
    names = [f"E{i}" for i in range(len(entities))]
    for name, (entity_type, confidence, hours, subtype) in zip(names, entities, strict=True):
        feed.entity(
            name,
            entity_type,
            confidence=confidence,
            last_seen=end - hours * HOUR,
            subtype=subtype,
        )
    for source, target, relation_type, weight, hours in edges:
        if source < len(names) and target < len(names):
            feed.edge(
                names[source],
                names[target],
                relation_type,
                weight=weight,
                last_confirmed=end - hours * HOUR,
            )
    for i in deleted:
        if i < len(names):
            feed.add(EntityDeleted(name=names[i]))
    if earlier_run is not None:
        feed.add(earlier_run)
    feed.ms = max(feed.ms, end)
    return feed


@settings(max_examples=150, deadline=None)
@given(
    st.lists(ENTITY, min_size=1, max_size=12),
    st.lists(EDGE, max_size=30),
    st.lists(st.integers(0, 11), max_size=2),
    st.one_of(st.none(), runs(st.integers(T0 + 100 * DAY_MS, T0 + 520 * DAY_MS))),
    runs(st.integers(T0 + 100 * DAY_MS, T0 + 900 * DAY_MS)),
    st.sampled_from([(0.1, 0.05), (0.5, 0.3), (0.0100001, 0.01)]),
    st.booleans(),
)
def test_the_report_and_the_selection_equal_a_naive_computation_element_by_element(
    entities: list[tuple[str, float, int, str | None]],
    edges: list[tuple[int, int, str, float, int]],
    deleted: list[int],
    earlier_run: DecayApplied | None,
    run: DecayApplied,
    thresholds: tuple[float, float],
    index_first: bool,
) -> None:
    feed = random_graph(entities, edges, deleted, earlier_run)
    graph = feed.graph
    node_threshold, edge_threshold = thresholds
    if index_first:  # the index built before the earlier run: it re-derived on the run
        feed = random_graph(entities, edges, deleted, None)
        graph = feed.graph
        prune_selection(graph, PruneThresholds(), feed.ms)
        if earlier_run is not None:
            feed.add(earlier_run)
    report = decay_report(graph, run, node_threshold=node_threshold, edge_threshold=edge_threshold)
    assert as_plain(report) == naive_report(graph, run, node_threshold, edge_threshold)
    selection = prune_selection(
        graph,
        PruneThresholds(node_threshold, edge_threshold, include_orphans=True, max_age_days=0),
        feed.ms + 10 * 365 * DAY_MS,  # every edgeless entity is old enough to be an orphan
    )
    edges_out, low, edgeless = naive_candidates(graph, node_threshold, edge_threshold)
    assert selection.edges == edges_out
    expected_nodes = sorted(
        [(n, "low_confidence") for n in low] + [(n, "orphan") for n in edgeless if n not in low]
    )
    assert selection.nodes == expected_nodes


def test_columns_keep_every_slot_through_growth_removal_and_a_return() -> None:
    columns: DecayColumns[str] = DecayColumns()
    names = [f"N{i}" for i in range(1500)]
    columns.extend(
        names[:700],
        names[:700],
        base=[0.5] * 700,
        reference=list(range(700)),
        rate_class=[0] * 700,
        exempt=[False] * 700,
        shown=[0.4] * 700,
    )
    for i, name in enumerate(names[700:], start=700):  # one by one, past the first capacity
        columns.put(
            name, name, base=i / 1500, reference=i, rate_class=1, exempt=i % 2 == 0, shown=0.1
        )
    columns.remove("N3")
    columns.put("N3", "again", base=0.9, reference=3, rate_class=1, exempt=False, shown=0.9)
    assert columns.size == 1500 and columns.slots_of(["N0", "N3", "N1499"]).tolist() == [0, 3, 1499]
    assert columns.reference[: columns.size].tolist() == list(range(1500))
    assert columns.base[[0, 3, 1499]].tolist() == [0.5, 0.9, 1499 / 1500]
    assert columns.entries[3] == "again" and bool(columns.alive[: columns.size].all())
    columns.remove("N1499")
    assert columns.entries[1499] is None and not columns.alive[1499]
