"""graph_validate, graph_communities, build context's recent additions and hubs, and the one
conflict view, over a GraphProjection fed events (contract §8.19-8.21)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import EntityCreated, EntityDeleted, EntityUpdated, RelationCreated
from projections.graph import GraphProjection
from projections.graph_family import (
    CommunityOptions,
    conflict_view,
    graph_communities,
    graph_validate,
    recent_additions,
    top_hubs,
)
from projections.graph_family._communities import StrongEdges, dominant_type, grow, hubs
from projections.graph_family._validate import (
    BLOCKLIST,
    Issue,
    generic_name,
    ordered_issues,
    reference_language,
)
from tests.projections.graph_family_support import T0, Feed, days


def validate(graph: GraphProjection, **options: Any) -> dict[str, Any]:
    problems = options.pop("schema_problems", {})
    return graph_validate(graph, schema_problems=problems, **options)


def checks(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(i["severity"], i["type"], i["entity_name"]) for i in answer["issues"]]


# --- graph_validate: the pure rules -----------------------------------------------------------


def test_the_blocklist_holds_the_contracts_44_words() -> None:
    assert len(BLOCKLIST) == 44
    assert {"it", "thing", "data", "information", "server", "tool", "i", "she"} <= BLOCKLIST


def test_a_blocklisted_name_is_generic_in_any_case_and_with_spaces_around() -> None:
    assert generic_name("Data") is not None
    assert generic_name("  SERVER ") is not None
    assert generic_name("Data Lake") is None


def test_short_names_are_generic_unless_they_have_a_capital_or_a_digit() -> None:
    assert generic_name("go") is not None
    assert generic_name("x") is not None
    for spared in ("Go", "AI", "R", "C3", "k8"):
        assert generic_name(spared) is None, spared


def test_reference_language_needs_a_prefix_word_and_fewer_than_40_characters() -> None:
    assert reference_language("The project") is not None
    assert reference_language("our new API") is not None
    assert reference_language("Theory of Mind") is None  # `the` is not a word here
    long_name = "the " + "x" * 36  # 40 characters
    assert reference_language(long_name) is None
    assert reference_language(long_name[:-1]) is not None


def test_issues_order_by_severity_then_casefolded_name_then_code_point() -> None:
    issues = [
        Issue("low", "orphan", "alpha", ""),
        Issue("high", "generic_name", "b", ""),
        Issue("high", "generic_name", "B", ""),
        Issue("medium", "near_duplicate", "a", ""),
        Issue("high", "reference_language", "A thing", ""),
    ]
    ordered = [(i.severity, i.name) for i in ordered_issues(issues)]
    assert ordered == [
        ("high", "A thing"),
        ("high", "B"),
        ("high", "b"),
        ("medium", "a"),
        ("low", "alpha"),
    ]


# --- graph_validate over a graph --------------------------------------------------------------


def test_validate_reports_each_check_once_per_entity_ranked_and_cut_once() -> None:
    feed = Feed().entity("it").entity("The plan").entity("Data Lake").entity("data lake")
    feed.entity("Go").entity("Lonely", confidence=0.3).entity("Busy").entity("Friend")
    feed.edge("Busy", "Friend")

    answer = validate(feed.graph)

    assert checks(answer) == [
        ("high", "generic_name", "it"),
        ("high", "reference_language", "The plan"),
        ("medium", "near_duplicate", "Data Lake"),  # the pair once, on the code-point first
        ("low", "orphan", "Lonely"),
    ]
    assert answer["total_found"] == answer["issue_count"] == 4
    assert answer["by_severity"] == {"high": 2, "medium": 1, "low": 1}
    assert answer["scope"] == "full graph"
    first = answer["issues"][0]
    assert first["entity_id"] == "it" and first["entity_type"] == "Person"
    assert "generic" in first["description"]
    capped = validate(feed.graph, max_issues=2)
    assert checks(capped) == checks(answer)[:2]
    assert capped["total_found"] == 4 and capped["issue_count"] == 2
    assert capped["by_severity"] == {"high": 2, "medium": 0, "low": 0}


def test_a_generic_name_is_not_also_reported_as_reference_language() -> None:
    feed = Feed().entity("that")
    assert checks(validate(feed.graph)) == [("high", "generic_name", "that")]


def test_an_orphan_needs_no_edges_low_confidence_and_one_mention() -> None:
    feed = Feed().entity("Low", confidence=0.4).entity("Sure", confidence=0.41)
    feed.entity("Said twice", confidence=0.2, times_mentioned=2)
    feed.entity("Linked", confidence=0.1).entity("Other").edge("Linked", "Other")
    orphans = [name for _, check, name in checks(validate(feed.graph)) if check == "orphan"]
    assert orphans == ["Low"]


def test_schema_problems_are_medium_issues_naming_the_problem() -> None:
    feed = Feed().entity("Alice Smith")
    answer = validate(feed.graph, schema_problems={"Alice Smith": ["missing required: age"]})
    (issue,) = answer["issues"]
    assert issue["severity"] == "medium" and issue["type"] == "schema_violation"
    assert "missing required: age" in issue["description"]
    assert "Person" in issue["description"]


def test_source_session_scopes_to_edges_of_that_session_and_the_property() -> None:
    feed = Feed().entity("it").entity("x1").entity("one", properties={"source_session": "s1"})
    feed.entity("Anchor").edge("it", "Anchor", source_session="s1").edge("x1", "Anchor")
    answer = validate(feed.graph, source_session="s1")
    assert [name for *_, name in checks(answer)] == ["it", "one"]
    assert answer["scope"] == "session:s1"
    feed.entity("ab").edge("ab", "Anchor", "LIKES", source_session="s1")  # the scope follows
    assert [name for *_, name in checks(validate(feed.graph, source_session="s1"))] == [
        "ab",
        "it",
        "one",
    ]


def test_validate_follows_changes_after_its_answer_was_kept() -> None:
    feed = Feed().entity("thing").entity("Lonely", confidence=0.2)
    assert len(validate(feed.graph)["issues"]) == 2
    feed.entity("Pal").edge("Lonely", "Pal").add(EntityDeleted(name="thing"))
    feed.entity("LONELY")
    assert checks(validate(feed.graph)) == [("medium", "near_duplicate", "LONELY")]


# --- graph_communities ------------------------------------------------------------------------


def communities(graph: GraphProjection, **options: Any) -> dict[str, Any]:
    return graph_communities(graph, CommunityOptions(**options))


def members(answer: dict[str, Any]) -> list[list[str]]:
    return [[m["name"] for m in c["members"]] for c in answer["communities"]]


def test_hubs_seed_communities_by_degree_and_bfs_never_enters_an_earlier_one() -> None:
    feed = Feed()
    for name in ("H", "a", "b", "c", "G", "d", "e"):
        feed.entity(name)
    for other in ("a", "b", "c"):
        feed.edge("H", other, weight=0.9)
    feed.edge("G", "d", weight=0.9).edge("G", "e", weight=0.9).edge("G", "a", weight=0.9)

    answer = communities(feed.graph)

    # G and H both have 3 strong edges of equal weight: id order seeds G first.
    assert members(answer) == [["G", "a", "d", "e", "H", "b", "c"]]
    one_hop = communities(feed.graph, max_hops=1)
    assert members(one_hop) == [["G", "a", "d", "e"], ["H", "b", "c"]]
    first = one_hop["communities"][0]
    assert first["id"] == 1 and first["seed_id"] == "g" and first["seed_name"] == "G"
    assert first["member_count"] == 4 and first["dominant_type"] == "Person"
    assert one_hop["total_members"] == 7
    assert one_hop["coverage"] == {"total_entities": 7, "assigned": 7, "unassigned": 0}
    assert one_hop["coverage_pct"] == 100.0


def test_hubs_tie_on_degree_then_weight_sum_then_id() -> None:
    feed = Feed()
    for name in ("B", "A", "x", "y", "z", "w"):
        feed.entity(name)
    feed.edge("B", "x", weight=0.9).edge("B", "y", weight=0.9)
    feed.edge("A", "z", weight=0.8).edge("A", "w", weight=0.8)
    assert [c["seed_name"] for c in communities(feed.graph, max_hops=1)["communities"]] == [
        "B",
        "A",
    ]
    feed.update_edge("A", "z", "KNOWS", weight=0.9).update_edge("A", "w", "KNOWS", weight=0.9)
    assert [c["seed_name"] for c in communities(feed.graph, max_hops=1)["communities"]] == [
        "A",
        "B",
    ]


def test_only_current_edges_above_the_threshold_strictly_are_strong() -> None:
    feed = Feed().entity("H").entity("a").entity("b").entity("c")
    feed.edge("H", "a", weight=0.4).edge("H", "b", weight=0.9).edge("H", "c", weight=0.9)
    assert members(communities(feed.graph)) == [["H", "b", "c"]]
    feed.update_edge("H", "c", "KNOWS", invalid_at=T0)
    assert members(communities(feed.graph)) == []  # H has one strong edge left: no hub
    assert communities(feed.graph)["coverage_pct"] == 0.0


def test_small_communities_are_dropped_and_their_members_stay_free() -> None:
    feed = Feed().entity("H").entity("a").entity("b")
    feed.edge("H", "a", weight=0.9).edge("H", "b", weight=0.9)
    answer = communities(feed.graph, min_size=4)
    assert answer["communities"] == [] and answer["total_members"] == 0


def test_members_are_capped_at_30_with_the_full_count() -> None:
    feed = Feed().entity("Hub")
    for k in range(40):
        feed.entity(f"m{k:02}").edge("Hub", f"m{k:02}", weight=0.9)
    (community,) = communities(feed.graph)["communities"]
    assert community["member_count"] == 41 and len(community["members"]) == 30
    assert community["members"][0]["name"] == "Hub"


def test_an_empty_graph_has_no_communities_and_zero_coverage() -> None:
    answer = communities(GraphProjection())
    assert answer["communities"] == [] and answer["coverage_pct"] == 0


def test_bfs_orders_by_distance_then_name_and_skips_taken() -> None:
    adjacency = {"s": {"b", "a"}, "a": {"s", "c"}, "b": {"s", "d"}, "c": {"a"}, "d": {"b"}}
    assert grow(adjacency, "s", 2, set()) == ["s", "a", "b", "c", "d"]
    assert grow(adjacency, "s", 2, {"a"}) == ["s", "b", "d"]
    assert grow(adjacency, "s", 1, set()) == ["s", "a", "b"]


def test_the_dominant_type_is_the_most_frequent_ties_alphabetical() -> None:
    assert dominant_type(["Person", "Project", "Project"]) == "Project"
    assert dominant_type(["Project", "Person"]) == "Person"


# --- build context: recent additions and hubs -------------------------------------------------


def test_recent_additions_count_every_entity_in_the_window_and_list_the_newest() -> None:
    feed = Feed().entity("Old").entity("Older")
    feed.add(EntityCreated(name="New 0", entity_type="Person"), ms=T0 + days(10))
    for k in range(1, 5):
        feed.entity(f"New {k}")
    feed.edge("New 0", "New 1")
    now = T0 + days(12)
    recent = recent_additions(feed.graph, now_ms=now, days=7, max_recent=3)
    assert recent["entity_count"] == 5 and recent["edge_count"] == 1 and recent["days"] == 7
    assert [e["name"] for e in recent["entities"]] == ["New 4", "New 3", "New 2"]
    assert set(recent["entities"][0]) == {"id", "name", "type", "first_seen", "confidence"}


def test_top_hubs_need_three_current_edges_above_0_3_ranked_by_degree_then_id() -> None:
    feed = Feed()
    for name in ("b", "a", "x", "y", "z", "w"):
        feed.entity(name)
    for hub in ("a", "b"):
        for other in ("x", "y", "z"):
            feed.edge(hub, other, weight=0.5)
    feed.edge("a", "w", weight=0.3)  # not above 0.3
    hubs = top_hubs(feed.graph, hub_count=5)
    assert [(h["name"], h["degree"]) for h in hubs] == [("a", 3), ("b", 3)]
    assert top_hubs(feed.graph, hub_count=1)[0]["name"] == "a"


# --- the one conflict view --------------------------------------------------------------------


def test_a_superseded_edge_names_the_edge_that_closed_it_and_what_is_current() -> None:
    feed = Feed().entity("Ann").entity("Acme").entity("Initech")
    feed.edge("Ann", "Acme", "WORKS_AT", valid_at=T0 - days(100), invalid_at=T0 - days(5))
    feed.edge("Ann", "Initech", "WORKS_AT", valid_at=T0 - days(5))
    feed.entity("P").entity("Q").edge("P", "Q", "CONTRADICTS", properties={"description": "d"})

    view = conflict_view(feed.graph, None)

    (item,) = view["superseded"]
    assert item["kind"] == "superseded"
    assert (item["edge"]["from"], item["edge"]["to"]) == ("ann", "acme")
    assert item["superseded_by"]["to"] == "initech" and item["current"]["to"] == "initech"
    assert "newer valid_at" in item["why"]
    (contradiction,) = view["contradictions"]
    assert contradiction["current"] is None and "unresolved" in contradiction["why"]
    assert contradiction["node_a"]["name"] == "P"
    assert view["replica_writes"] == []
    assert view["counts"] == {"replica_writes": 0, "superseded": 1, "contradictions": 1}
    assert conflict_view(feed.graph, None, entity="Q")["counts"]["superseded"] == 0


def test_a_superseded_edge_whose_closer_is_gone_says_so() -> None:
    feed = Feed().entity("Ann").entity("Acme")
    feed.edge("Ann", "Acme", "WORKS_AT", valid_at=T0 - days(100), invalid_at=T0 - days(5))
    (item,) = conflict_view(feed.graph, None)["superseded"]
    assert item["superseded_by"] is None and item["current"] is None
    assert "no edge" in item["why"]


# --- kept answers follow the fold -------------------------------------------------------------

_NAMES = ["it", "A", "a", "B", "The x", "C"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_NAMES), st.sampled_from(_NAMES), st.floats(0, 1)),
        max_size=12,
    ),
    st.lists(st.sampled_from(_NAMES), max_size=3),
)
def test_kept_answers_equal_a_fresh_folds_after_further_events(
    edges: list[tuple[str, str, float]], deleted: list[str]
) -> None:
    feed = Feed()
    for name in _NAMES:
        feed.entity(name, confidence=0.3)

    def reads(graph: GraphProjection) -> Any:
        return (
            validate(graph),
            communities(graph, weight_threshold=0.2),
            top_hubs(graph, hub_count=3),
            recent_additions(graph, now_ms=feed.ms, days=1, max_recent=3),
            conflict_view(graph, None),
        )

    reads(feed.graph)  # answers kept from here on
    for source, target, weight in edges:
        feed.add(
            RelationCreated(
                from_entity=source, to_entity=target, relation_type="KNOWS", weight=weight
            )
        )
    for name in deleted:
        feed.add(EntityDeleted(name=name))
    feed.add(EntityUpdated(name="C", entity_type="Fact"))
    assert reads(feed.graph) == reads(feed.refolded())


def test_the_conflict_view_lists_at_most_limit_per_kind_newest_first_with_full_counts() -> None:
    feed = Feed().entity("Ann")
    for k in range(4):
        feed.entity(f"Job {k}")
        feed.edge("Ann", f"Job {k}", "WORKS_AT", valid_at=T0 + k, invalid_at=T0 + k + 1)
    view = conflict_view(feed.graph, None, limit=2)
    assert view["counts"]["superseded"] == 4
    assert [item["edge"]["to"] for item in view["superseded"]] == ["job-3", "job-2"]
    # Job 2 was closed when Job 3 became valid, which is itself closed: nothing current.
    second = view["superseded"][1]
    assert second["superseded_by"]["to"] == "job-3" and second["current"] is None
    assert "itself closed" in second["why"]


def test_only_the_first_100_hubs_seed_communities() -> None:
    feed = Feed()
    for k in range(102):
        feed.entity(f"h{k:03}").entity(f"h{k:03} a").entity(f"h{k:03} b")
        weight = 0.5 if k < 2 else 0.9  # the two lightest rank last
        feed.edge(f"h{k:03}", f"h{k:03} a", weight=weight)
        feed.edge(f"h{k:03}", f"h{k:03} b", weight=weight)
    edges = StrongEdges(feed.graph, 0.4)
    edges.refresh()
    ranked = hubs(edges, str.casefold)
    assert len(ranked) == 100 and ranked[0] == "h002" and "h000" not in ranked
