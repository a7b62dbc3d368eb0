"""graph_query's traversal (contract §8.1) over a GraphProjection fed events."""

from __future__ import annotations

from typing import Any

from projections.graph_family import QueryOptions, graph_query
from tests.projections.graph_family_support import Feed

NODE_KEYS = [
    "id",
    "type",
    "name",
    "subtype",
    "confidence",
    "times_mentioned",
    "first_seen",
    "last_seen",
    "source_file",
    "aliases",
    "properties",
    "observations",
]
EDGE_KEYS = [
    "from",
    "to",
    "type",
    "weight",
    "effective_weight",
    "valid_at",
    "invalid_at",
    "ingested_at",
    "last_confirmed",
    "source_session",
    "source_transcript",
    "source_type",
    "evidence",
    "properties",
]


def query(feed: Feed, *entities: str, **options: Any) -> dict[str, Any]:
    return graph_query(feed.graph, QueryOptions(entities=list(entities), **options))


def names(answer: dict[str, Any]) -> list[str]:
    return [node["name"] for node in answer["nodes"]]


def edges(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["from"], e["type"], e["to"]) for e in answer["edges"]]


def team() -> Feed:
    feed = Feed()
    feed.entity("Alice").entity("Bob").entity("Carol").entity("Project X", "Project")
    feed.edge("Alice", "Project X", "WORKS_ON", weight=0.7)
    feed.edge("Bob", "Project X", "WORKS_ON", weight=0.6)
    feed.edge("Carol", "Bob", "KNOWS", weight=0.9)
    return feed


def test_a_traversal_returns_the_start_its_neighbours_and_the_edges_as_output_objects() -> None:
    answer = query(team(), "Alice", max_hops=1)

    assert names(answer) == ["Alice", "Project X"]
    assert list(answer["nodes"][0]) == NODE_KEYS
    assert list(answer["edges"][0]) == EDGE_KEYS
    assert answer["edges"][0] | {"ingested_at": None, "last_confirmed": None} == {
        "from": "alice",
        "to": "project-x",
        "type": "WORKS_ON",
        "weight": 0.7,
        "effective_weight": 0.7,
        "valid_at": None,
        "invalid_at": None,
        "ingested_at": None,
        "last_confirmed": None,
        "source_session": None,
        "source_transcript": None,
        "source_type": None,
        "evidence": None,
        "properties": {},
    }
    assert answer["source_files"] == []
    assert "found" not in answer
    assert "unresolved" not in answer


def test_min_weight_keeps_the_end_of_a_heavier_edge_and_drops_the_end_of_a_lighter_one() -> None:
    feed = Feed().entity("Hub").entity("Strong").entity("Weak")
    feed.edge("Hub", "Strong", "RELATED_TO", weight=0.7)
    feed.edge("Hub", "Weak", "RELATED_TO", weight=0.6)

    answer = query(feed, "Hub", min_weight=0.65)

    assert names(answer) == ["Hub", "Strong"]
    assert edges(answer) == [("hub", "RELATED_TO", "strong")]


def test_entity_types_filter_the_nodes_returned_while_the_walk_passes_through_any_type() -> None:
    answer = query(team(), "Alice", max_hops=3, min_weight=0.5, entity_types=["Person"])

    # Bob and Carol are reached through Project X, which is not returned.
    assert names(answer) == ["Alice", "Bob", "Carol"]
    assert ("bob", "WORKS_ON", "project-x") in edges(answer)


def test_a_canonical_type_filter_matches_case_insensitively() -> None:
    answer = query(team(), "Alice", min_weight=0.5, entity_types=["project"])

    assert names(answer) == ["Project X"]


def test_limit_counts_distinct_nodes_and_edges_keep_only_those_touching_them() -> None:
    feed = Feed().entity("Hub")
    for i in range(6):
        feed.entity(f"Leaf {i}").edge("Hub", f"Leaf {i}", "RELATED_TO", weight=0.5 + i / 20)

    answer = query(feed, "Hub", limit=3)

    # The heaviest edges' ends come first after the start.
    assert names(answer) == ["Hub", "Leaf 5", "Leaf 4"]
    assert len(answer["edges"]) == 6  # every traversal edge touches the returned Hub


def test_an_edge_belongs_when_its_nearer_end_is_closer_than_max_hops() -> None:
    feed = Feed().entity("A").entity("B").entity("C").entity("D")
    feed.edge("A", "B").edge("A", "C").edge("B", "D").edge("C", "D").edge("B", "C")

    one = query(feed, "A", max_hops=1)
    none = query(feed, "A", max_hops=0)

    assert names(one) == ["A", "B", "C"]
    # B-C joins two nodes at distance 1 = max_hops: not a traversal edge.
    assert sorted(edges(one)) == [("a", "KNOWS", "b"), ("a", "KNOWS", "c")]
    assert names(none) == ["A"]
    assert none["edges"] == []


def test_nodes_come_by_distance_then_strongest_edge_then_name() -> None:
    feed = Feed().entity("Start").entity("Zed").entity("Amy").entity("Mid").entity("Far")
    feed.edge("Start", "Zed", weight=0.9).edge("Start", "Amy", weight=0.5)
    feed.edge("Start", "Mid", weight=0.5).edge("Mid", "Far", weight=0.99)

    answer = query(feed, "Start")

    # Mid's strongest traversal edge (to Far, 0.99) ranks it first at distance 1.
    assert names(answer) == ["Start", "Mid", "Zed", "Amy", "Far"]


def test_edges_come_by_effective_weight_then_from_type_to() -> None:
    feed = Feed().entity("S").entity("B").entity("A")
    feed.edge("S", "B", "USES", weight=0.5).edge("S", "A", "USES", weight=0.5)
    feed.edge("A", "S", "KNOWS", weight=0.8)

    answer = query(feed, "S")

    assert edges(answer) == [("a", "KNOWS", "s"), ("s", "USES", "a"), ("s", "USES", "b")]


def test_superseded_edges_are_hidden_by_default_and_shown_with_current_only_false() -> None:
    feed = Feed().entity("Alice").entity("Old Co", "Project").entity("New Co", "Project")
    feed.edge("Alice", "Old Co", "WORKS_AT", weight=0.8, valid_at=1_000)
    feed.edge("Alice", "New Co", "WORKS_AT", weight=0.8, valid_at=2_000)
    feed.update_edge("Alice", "Old Co", "WORKS_AT", invalid_at=2_000)

    current = query(feed, "Alice")
    everything = query(feed, "Alice", current_only=False)

    assert names(current) == ["Alice", "New Co"]
    assert sorted(names(everything)) == ["Alice", "New Co", "Old Co"]
    old = next(e for e in everything["edges"] if e["to"] == "old-co")
    assert old["invalid_at"] == "1970-01-01T00:00:02.000Z"
    assert old["valid_at"] == "1970-01-01T00:00:01.000Z"


def test_an_ambiguous_start_uses_every_match_and_unknown_ones_are_listed() -> None:
    feed = Feed().entity("Data Lake", "Concept").entity("data lake", "Concept")

    answer = query(feed, "DATA LAKE", "Nobody")

    assert sorted(names(answer)) == ["Data Lake", "data lake"]
    # Two live entities share the slug: each is known by its exact name.
    assert sorted(n["id"] for n in answer["nodes"]) == ["Data Lake", "data lake"]
    assert answer["unresolved"] == ["Nobody"]
    assert "found" not in answer


def test_an_entry_no_step_resolves_falls_back_to_the_first_keyword_match() -> None:
    feed = Feed().entity("PostgreSQL Database", "Object").entity("Postgres Mirror", "Object")

    answer = query(feed, "postgres")

    # Neither resolves; both match the prefix; the one with `postgres` as a whole token wins.
    assert names(answer) == ["Postgres Mirror"]


def test_nothing_resolving_gives_found_false_with_the_unresolved_entries() -> None:
    answer = query(team(), "Nobody", "Nothing")

    assert answer == {
        "nodes": [],
        "edges": [],
        "source_files": [],
        "unresolved": ["Nobody", "Nothing"],
        "found": False,
    }


def test_minimal_and_relations_only_levels_give_their_shapes() -> None:
    minimal = query(team(), "Alice", context_level="minimal")
    relations = query(team(), "Alice", context_level="relations-only")

    assert minimal == {
        "nodes": [
            {"id": "alice", "type": "Person", "name": "Alice", "confidence": 0.5},
            {"id": "project-x", "type": "Project", "name": "Project X", "confidence": 0.5},
            {"id": "bob", "type": "Person", "name": "Bob", "confidence": 0.5},
        ],
        "edge_count": 2,
    }
    assert relations["nodes"][0] == {"id": "alice", "type": "Person", "name": "Alice"}
    assert edges(relations) == [
        ("alice", "WORKS_ON", "project-x"),
        ("bob", "WORKS_ON", "project-x"),
    ]


def test_full_level_lists_the_distinct_source_files_of_the_nodes() -> None:
    feed = Feed().entity("A", source_file="notes/a.md").entity("B", source_file="notes/a.md")
    feed.entity("C").edge("A", "B").edge("A", "C")

    assert query(feed, "A")["source_files"] == ["notes/a.md"]


def affinity_chain() -> Feed:
    """Project P - n1 - n2 - n3 - n4, all at weight 0.5 (a chain away from the project)."""
    feed = Feed().entity("P", "Project", properties={"directory": "/home/u/p"})
    for name in ("n1", "n2", "n3", "n4"):
        feed.entity(name)
    feed.edge("P", "n1", weight=0.5).edge("n1", "n2", weight=0.5)
    feed.edge("n2", "n3", weight=0.5).edge("n3", "n4", weight=0.5)
    return feed


def test_project_affinity_weighs_one_hop_by_1_3_two_hops_by_1_15_and_further_by_1() -> None:
    answer = query(affinity_chain(), "n4", max_hops=4, project_context="P")

    effective = {(e["from"], e["to"]): e["effective_weight"] for e in answer["edges"]}
    assert effective == {
        ("p", "n1"): 0.65,
        ("n1", "n2"): 0.65,
        ("n2", "n3"): 0.575,
        ("n3", "n4"): 0.5,
    }
    assert all(e["weight"] == 0.5 for e in answer["edges"])


def test_a_working_directory_inside_the_project_finds_it_longest_directory_first() -> None:
    feed = affinity_chain()
    feed.entity("Home", "Project", properties={"directory": "/home/u"})

    answer = query(feed, "n1", max_hops=1, project_context="/home/u/p/src/module")

    assert {e["effective_weight"] for e in answer["edges"]} == {0.65}


def test_without_project_context_effective_weight_equals_weight() -> None:
    answer = query(affinity_chain(), "n2")

    assert all(e["effective_weight"] == e["weight"] for e in answer["edges"])


def test_unicode_names_keep_their_letters_in_ids() -> None:
    feed = Feed().entity("東京", "Object").entity("Zoë").edge("Zoë", "東京", "VISITED")

    answer = query(feed, "zoë")

    assert [n["id"] for n in answer["nodes"]] == ["zoë", "東京"]
    assert edges(answer) == [("zoë", "VISITED", "東京")]
