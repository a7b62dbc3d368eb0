"""Keyword search and graph_entities (contract §8.5) over a GraphProjection fed events."""

from __future__ import annotations

from typing import Any

from eventstore.events import EntityDeleted, EntityUpdated
from projections.graph_family import ListOptions, family_index, graph_entities, keyword_search
from tests.projections.graph_family_support import Feed


def search(feed: Feed, text: str) -> list[str]:
    graph = feed.graph
    found, total = keyword_search(family_index(graph), graph.name_lookup(), text)
    assert total == len(found)
    return found


def listed(feed: Feed, **options: Any) -> dict[str, Any]:
    return graph_entities(feed.graph, ListOptions(**options))


def listed_names(feed: Feed, **options: Any) -> list[str]:
    return [e["name"] for e in listed(feed, **options)["entities"]]


def test_every_query_token_must_start_a_token_of_the_name_id_or_an_alias() -> None:
    feed = Feed().entity("Ada Lovelace").entity("Ada Byron", aliases=["Countess"])
    feed.entity("Grace Hopper")

    assert search(feed, "ada") == ["Ada Byron", "Ada Lovelace"]
    assert search(feed, "lov ad") == ["Ada Lovelace"]
    assert search(feed, "count") == ["Ada Byron"]
    assert search(feed, "ada-lovelace") == ["Ada Lovelace"]  # its id
    assert search(feed, "hopper grace x") == []


def test_there_is_no_typo_tolerance() -> None:
    feed = Feed().entity("Vue", "Object").entity("Anna")

    assert search(feed, "Svelte") == []
    assert search(feed, "Annabel") == []


def test_an_exact_name_or_alias_ranks_first_then_whole_tokens_then_shorter_names() -> None:
    feed = Feed().entity("Java Script Engine").entity("Javanese").entity("Java")
    feed.entity("Coffee", aliases=["java bean"]).entity("Java Island")

    assert search(feed, "java") == [
        "Java",
        "Coffee",
        "Java Island",
        "Java Script Engine",
        "Javanese",
    ]
    assert search(feed, "JAVA BEAN") == ["Coffee"]


def test_a_query_without_letters_or_digits_matches_only_an_equal_name() -> None:
    feed = Feed().entity("???").entity("Plain")

    assert search(feed, "???") == ["???"]
    assert search(feed, "!!") == []


def test_unicode_tokens_are_found_by_their_prefixes() -> None:
    feed = Feed().entity("東京タワー", "Object").entity("Zoë Keating")

    assert search(feed, "東京") == ["東京タワー"]
    assert search(feed, "ZOË") == ["Zoë Keating"]


def test_search_puts_the_name_first_and_total_counts_every_match() -> None:
    feed = Feed().entity("Bob Smith").entity("Bob").entity("Bobby Tables")

    answer = listed(feed, search="Bob")

    assert [e["name"] for e in answer["entities"]] == ["Bob", "Bob Smith", "Bobby Tables"]
    assert answer["total"] == 3


def test_total_honours_search_type_and_min_confidence_before_limit() -> None:
    feed = Feed()
    for i in range(5):
        feed.entity(f"Tool {i}", "Object", confidence=0.2 * i)
    feed.entity("Tool Person", "Person", confidence=0.9)

    assert listed(feed, search="tool", limit=1)["total"] == 6
    assert listed(feed, search="tool", entity_type="object", limit=1)["total"] == 5
    assert listed(feed, search="tool", min_confidence=0.5, limit=1)["total"] == 3
    assert listed(feed, entity_type="Object", min_confidence=0.5)["total"] == 2
    assert listed(feed, min_confidence=0.5)["total"] == 3
    assert listed(feed, limit=2)["total"] == 6
    assert len(listed(feed, limit=2)["entities"]) == 2


def test_a_type_filter_matches_a_canonical_type_case_insensitively_and_others_exactly() -> None:
    feed = Feed().entity("Ann", "person").entity("Ben", "Person").entity("Acme", "Organization")

    assert listed_names(feed, entity_type="PERSON", sort_by="name") == ["Ann", "Ben"]
    assert listed_names(feed, entity_type="organization") == []
    assert listed_names(feed, entity_type="Organization") == ["Acme"]


def test_without_search_entities_are_ordered_by_sort_by_with_ties_by_name() -> None:
    feed = Feed().entity("Cid", confidence=0.9).entity("Abe", confidence=0.4)
    feed.entity("Bea", confidence=0.9)

    assert listed_names(feed) == ["Bea", "Cid", "Abe"]
    assert listed_names(feed, sort_by="name") == ["Abe", "Bea", "Cid"]
    assert listed_names(feed, sort_by="last_seen") == ["Bea", "Abe", "Cid"]


def test_edge_count_counts_current_and_superseded_edges_in_both_directions() -> None:
    feed = Feed().entity("A").entity("B").entity("C")
    feed.edge("A", "B", "WORKS_AT", valid_at=1, invalid_at=2).edge("C", "A", "KNOWS")

    entities = {e["name"]: e for e in listed(feed)["entities"]}

    assert entities["A"]["edge_count"] == 2
    assert entities["B"]["edge_count"] == 1


def test_listings_follow_writes_folded_after_the_index_was_built() -> None:
    feed = Feed().entity("Alpha").entity("Beta")
    assert listed(feed, search="alpha")["total"] == 1  # builds the index

    feed.add(EntityDeleted(name="Alpha"))
    feed.entity("Alphabet").add(EntityUpdated(name="Beta", aliases=["alpha two"], confidence=0.9))

    assert listed_names(feed, search="alpha") == ["Beta", "Alphabet"]
    assert listed_names(feed, min_confidence=0.8) == ["Beta"]
