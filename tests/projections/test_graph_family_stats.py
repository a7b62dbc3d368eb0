"""graph_stats, graph_contradictions, decayed values and export rows over a GraphProjection
fed events, and the FamilyIndex kept current by the fold."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import GraphProjection
from projections.graph_family import (
    ListOptions,
    QueryOptions,
    export_rows,
    graph_contradictions,
    graph_entities,
    graph_query,
    graph_stats,
)
from tests.projections.graph_family_support import T0, Feed, days


def stats(graph: GraphProjection, now: int = T0) -> dict[str, Any]:
    return graph_stats(graph, now_ms=now, stale_confidence=0.2, stale_days=90)


# --- stats ------------------------------------------------------------------------------------


def test_stats_count_entities_by_type_and_edges_by_relation_type() -> None:
    feed = Feed().entity("Alice").entity("Bob").entity("X", "Project").entity("Lonely", "Fact")
    feed.edge("Alice", "X", "WORKS_ON", weight=0.5).edge("Bob", "X", "WORKS_ON", weight=0.7)
    feed.edge("Alice", "Bob", "KNOWS", weight=0.9, valid_at=1, invalid_at=2)

    answer = stats(feed.graph)

    assert answer == {
        "schema_version": "1",
        "nodes": {"total": 4, "by_type": {"Fact": 1, "Person": 2, "Project": 1}},
        "edges": {"total": 3, "by_type": {"KNOWS": 1, "WORKS_ON": 2}},
        "health": {
            "avg_weight": 0.7,
            "orphaned_nodes": 1,
            "unresolved_contradictions": 0,
            "stale_nodes": 0,
        },
    }


def test_an_empty_graph_has_zero_average_weight() -> None:
    assert stats(GraphProjection())["health"]["avg_weight"] == 0


def test_stale_nodes_are_unconfident_and_unseen_for_more_than_the_stale_days() -> None:
    feed = Feed().entity("Faded", confidence=0.1).entity("Sure", confidence=0.9)
    feed.entity("Fresh", confidence=0.1, last_seen=T0 + days(80))

    assert stats(feed.graph, now=T0 + days(89))["health"]["stale_nodes"] == 0
    assert stats(feed.graph, now=T0 + days(91))["health"]["stale_nodes"] == 1
    assert stats(feed.graph, now=T0 + days(200))["health"]["stale_nodes"] == 2


def test_stats_follow_deletions_type_changes_and_new_edges_after_the_first_read() -> None:
    feed = Feed().entity("A").entity("B").entity("C").edge("A", "B", weight=0.4)
    assert stats(feed.graph)["health"]["orphaned_nodes"] == 1

    feed.add(EntityDeleted(name="A"), EntityUpdated(name="C", entity_type="Fact"))
    feed.edge("B", "C", "CONTRADICTS", weight=0.8)
    answer = stats(feed.graph)

    assert answer["nodes"] == {"total": 2, "by_type": {"Fact": 1, "Person": 1}}
    assert answer["edges"] == {"total": 1, "by_type": {"CONTRADICTS": 1}}
    assert answer["health"]["avg_weight"] == 0.8
    assert answer["health"]["orphaned_nodes"] == 0
    assert answer["health"]["unresolved_contradictions"] == 1


# --- contradictions ---------------------------------------------------------------------------


def contradictions() -> Feed:
    feed = Feed().entity("Claim A", "Fact", properties={"content": "The sky is green"})
    feed.entity("Claim B", "Fact").entity("Claim C", "Fact")
    feed.edge(
        "Claim A",
        "Claim B",
        "CONTRADICTS",
        properties={"description": "colour", "detected_date": "2025-03-01"},
    )
    feed.edge(
        "Claim B",
        "Claim C",
        "CONTRADICTS",
        properties={"description": "settled", "detected_date": "2025-05-01", "resolved": True},
    )
    feed.edge("Claim A", "Claim C", "CONTRADICTS", properties={"description": "newest"})
    return feed


def test_unresolved_contradictions_are_listed_newest_first_with_their_description() -> None:
    answer = graph_contradictions(contradictions().graph, include_resolved=False)

    assert answer["count"] == 2
    newest, older = answer["contradictions"]
    assert newest["description"] == "newest"  # no detected_date: its ingestion time, 2026
    assert older == {
        "node_a": {
            "id": "claim-a",
            "type": "Fact",
            "name": "Claim A",
            "content": "The sky is green",
        },
        "node_b": {"id": "claim-b", "type": "Fact", "name": "Claim B", "content": "Claim B"},
        "description": "colour",
        "detected_date": "2025-03-01T00:00:00.000Z",
        "resolved": False,
    }


def test_resolved_contradictions_show_only_with_include_resolved() -> None:
    feed = contradictions()

    answer = graph_contradictions(feed.graph, include_resolved=True)

    assert [c["description"] for c in answer["contradictions"]] == ["newest", "settled", "colour"]
    assert answer["contradictions"][1]["resolved"] is True
    assert stats(feed.graph)["health"]["unresolved_contradictions"] == 2


def test_resolving_a_contradiction_later_moves_it_out_of_the_default_list() -> None:
    feed = contradictions()
    assert graph_contradictions(feed.graph, include_resolved=False)["count"] == 2

    feed.update_edge(
        "Claim A",
        "Claim B",
        "CONTRADICTS",
        properties={"description": "colour", "resolved": True},
    )

    assert graph_contradictions(feed.graph, include_resolved=False)["count"] == 1
    assert stats(feed.graph)["health"]["unresolved_contradictions"] == 1


# --- decayed values ---------------------------------------------------------------------------


def entity_named(graph: GraphProjection, name: str) -> dict[str, Any]:
    found = graph_entities(graph, ListOptions(search=name, limit=1))["entities"]
    assert found and found[0]["name"] == name
    return found[0]


def test_reads_show_confidence_and_weight_decayed_by_the_newest_run() -> None:
    feed = Feed().entity("Ann", confidence=0.8).entity("Proj", "Project", confidence=0.8)
    feed.edge("Ann", "Proj", "WORKS_ON", weight=0.8)
    start = feed.ms
    before = entity_named(feed.graph, "Ann")["confidence"]

    feed.decay(at=start + days(30))
    mid = entity_named(feed.graph, "Ann")["confidence"]
    feed.decay(at=start + days(50))

    query = graph_query(feed.graph, QueryOptions(entities=["Ann"], context_level="full"))
    ann = query["nodes"][0]
    assert before == 0.8
    assert mid == round(0.8 * 0.998**30, 6)  # ≈ 0.7534
    # Only the newest run counts: 50 days from the last touch, not 30 + 50.
    assert ann["confidence"] == round(0.8 * 0.998**50, 6)
    assert query["edges"][0]["weight"] == round(0.8 * 0.997**50, 6)  # ≈ 0.6884
    assert query["nodes"][1]["confidence"] == round(0.8 * 0.996**50, 6)  # the default rate
    answer = stats(feed.graph)
    assert answer["health"]["avg_weight"] == round(0.8 * 0.997**50, 2)


def test_rule_entities_and_their_edges_never_decay() -> None:
    feed = Feed().entity("Tabs over spaces", "Preference", subtype="rule", confidence=0.9)
    feed.entity("Ann").edge("Ann", "Tabs over spaces", "PREFERS", weight=0.9)
    feed.decay(at=feed.ms + days(400))

    query = graph_query(feed.graph, QueryOptions(entities=["Ann"]))

    assert {n["name"]: n["confidence"] for n in query["nodes"]} == {
        "Ann": round(0.5 * 0.998**400, 6),
        "Tabs over spaces": 0.9,
    }
    assert query["edges"][0]["weight"] == 0.9


def test_min_confidence_and_stats_read_the_decayed_values() -> None:
    feed = Feed().entity("Old", confidence=0.3)
    assert graph_entities(feed.graph, ListOptions(min_confidence=0.25))["total"] == 1

    feed.decay(at=feed.ms + days(365), rates={"person": 0.99})

    assert graph_entities(feed.graph, ListOptions(min_confidence=0.25))["total"] == 0
    assert stats(feed.graph, now=feed.ms + days(365))["health"]["stale_nodes"] == 1


# --- export rows ------------------------------------------------------------------------------


def test_export_rows_are_meta_then_nodes_by_first_seen_then_edges_by_key() -> None:
    feed = Feed().entity("Zed").entity("Amy", aliases=["A."]).entity("Mo")
    feed.edge("Zed", "Amy", "KNOWS", weight=0.6, evidence="said so").edge("Amy", "Mo", "KNOWS")

    rows = list(export_rows(feed.graph, exported_at_ms=T0))

    assert rows[0] == {
        "record": "meta",
        "format": "graphmem-graph",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00.000Z",
        "node_count": 3,
        "edge_count": 2,
    }
    assert [r["name"] for r in rows[1:4]] == ["Zed", "Amy", "Mo"]
    assert rows[2]["aliases"] == ["A."]
    assert [(r["from_id"], r["to_id"]) for r in rows[4:]] == [("amy", "mo"), ("zed", "amy")]
    assert rows[5]["evidence"] == "said so"
    assert rows[5]["weight"] == 0.6
    assert "embedding" not in rows[1]


# --- the index kept by the fold -----------------------------------------------------------------

NAMES = ["Ann", "ann", "Bob", "Cy", "Dee"]
TYPES = ["Person", "Project", "Fact"]
RELATIONS = ["KNOWS", "CONTRADICTS", "USES"]

_events = st.one_of(
    st.builds(
        lambda n, t, c: EntityCreated(name=n, entity_type=t, confidence=c),
        st.sampled_from(NAMES),
        st.sampled_from(TYPES),
        st.sampled_from([None, 0.1, 0.9]),
    ),
    st.builds(lambda n: EntityDeleted(name=n), st.sampled_from(NAMES)),
    st.builds(
        lambda n, s, a: EntityUpdated(name=n, subtype=s, aliases=a),
        st.sampled_from(NAMES),
        st.sampled_from([None, "rule"]),
        st.sampled_from([None, ["Bobby"], []]),
    ),
    st.builds(lambda n: ObservationAdded(entity=n, content="seen"), st.sampled_from(NAMES)),
    st.builds(
        lambda a, b, t, w: RelationCreated(from_entity=a, to_entity=b, relation_type=t, weight=w),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(RELATIONS),
        st.sampled_from([0.2, 0.7]),
    ),
    st.builds(
        lambda a, b, t, r: RelationUpdated(
            from_entity=a, to_entity=b, relation_type=t, properties={"resolved": r}
        ),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(RELATIONS),
        st.booleans(),
    ),
    st.builds(
        lambda a, b, t: RelationDeleted(from_entity=a, to_entity=b, relation_type=t),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(RELATIONS),
    ),
)


def reads(graph: GraphProjection, now: int) -> list[Any]:
    return [
        *(
            graph_stats(graph, now_ms=now + days(offset), stale_confidence=0.2, stale_days=90)
            for offset in (0, 100, 300, 1000)
        ),
        graph_entities(graph, ListOptions(limit=200)),
        graph_entities(graph, ListOptions(sort_by="last_seen", limit=200)),
        *(
            graph_entities(graph, ListOptions(min_confidence=least, limit=200))["total"]
            for least in (0.05, 0.1, 0.2, 0.3, 0.5, 0.8)
        ),
        graph_entities(graph, ListOptions(search="b", min_confidence=0.3, limit=200)),
        graph_entities(graph, ListOptions(entity_type="person", sort_by="last_seen")),
        graph_contradictions(graph, include_resolved=True),
        graph_contradictions(graph, include_resolved=False),
    ]


_timed = st.lists(st.tuples(_events, st.sampled_from([0, 0, 40, 200])), max_size=12)


def fed(feed: Feed, timed: list[tuple[Any, int]]) -> None:
    for event, gap in timed:
        feed.add(event, ms=feed.ms + days(gap))


@settings(max_examples=80, deadline=None)
@given(_timed, _timed, st.sampled_from([None, 5, 500]))
def test_reads_after_more_events_equal_those_of_a_fresh_fold(
    first: list[tuple[Any, int]], then: list[tuple[Any, int]], decay_days: int | None
) -> None:
    feed = Feed()
    for name in NAMES:  # most events then touch live entities
        feed.entity(name)
    fed(feed, first)
    reads(feed.graph, feed.ms)  # builds the index, which the fold must then keep current
    fed(feed, then)
    if decay_days is not None:
        feed.decay(at=feed.ms + days(decay_days))

    assert reads(feed.graph, feed.ms) == reads(feed.refolded(), feed.ms)


def test_a_contradictions_ids_follow_an_entity_that_comes_to_share_a_slug() -> None:
    feed = Feed().entity("Data Lake", "Concept").entity("Warehouse", "Concept")
    feed.edge("Data Lake", "Warehouse", "CONTRADICTS", properties={"description": "d"})
    before = graph_contradictions(feed.graph, include_resolved=False)

    feed.entity("data lake", "Concept")
    after = graph_contradictions(feed.graph, include_resolved=False)

    assert before["contradictions"][0]["node_a"]["id"] == "data-lake"
    assert after["contradictions"][0]["node_a"]["id"] == "Data Lake"
