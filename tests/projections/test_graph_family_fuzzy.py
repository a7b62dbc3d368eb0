"""Fuzzy name matching after the keyword search (graph_entities' search, graph_query's
fallback): typos and spelling variants are found, the keyword rules stay as they are."""

from __future__ import annotations

from typing import Any

from eventstore.events import EntityDeleted
from projections.graph_family import (
    ListOptions,
    QueryOptions,
    family_index,
    fuzzy_search,
    graph_entities,
    graph_query,
    keyword_search,
)
from projections.graph_family._fuzzy import most_edits
from tests.projections.graph_family_support import Feed


def fuzzy(feed: Feed, text: str, **options: Any) -> list[str]:
    found, total = fuzzy_search(family_index(feed.graph), text, **options)
    if options.get("limit") is None:
        assert total == len(found)
    return found


def listed(feed: Feed, **options: Any) -> dict[str, Any]:
    return graph_entities(feed.graph, ListOptions(**options))


def technologies() -> Feed:
    feed = Feed().entity("PostgreSQL", "Technology").entity("Kubernetes", "Technology")
    return feed.entity("Anna").entity("Vue", "Technology").entity("Redis", "Technology")


def test_postgress_finds_postgresql() -> None:
    assert fuzzy(technologies(), "Postgress") == ["PostgreSQL"]


def test_a_deletion_an_insertion_a_substitution_and_a_swap_are_one_edit_each() -> None:
    feed = technologies()

    assert fuzzy(feed, "Kubernets") == ["Kubernetes"]  # deletion
    assert fuzzy(feed, "Kubbernetes") == ["Kubernetes"]  # insertion
    assert fuzzy(feed, "Kubermetes") == ["Kubernetes"]  # substitution
    assert fuzzy(feed, "Kuberentes") == ["Kubernetes"]  # swap of neighbours
    assert fuzzy(feed, "Rdeis") == ["Redis"]


def test_the_edit_budget_grows_with_the_token() -> None:
    assert [most_edits(t) for t in ("vue", "anne", "redis", "annabel", "postgres")] == [
        0,
        0,
        1,
        1,
        2,
    ]
    feed = technologies()
    assert fuzzy(feed, "Rxdxs") == []  # two edits in five letters: too far
    assert fuzzy(feed, "Kbrnets") == []  # three edits
    assert fuzzy(feed, "Kbrnetes") == ["Kubernetes"]  # two edits in eight letters


def test_the_keyword_rules_are_unchanged_annabel_is_not_anna_and_svelte_not_vue() -> None:
    feed = technologies()
    graph = feed.graph

    assert keyword_search(family_index(graph), graph.name_lookup(), "Postgress") == ([], 0)
    assert fuzzy(feed, "Annabel") == []
    assert fuzzy(feed, "Svelte") == []
    assert fuzzy(feed, "Anne") == []  # four letters: no typo tolerance


def test_keyword_hits_are_not_fuzzy_hits() -> None:
    feed = technologies()

    assert fuzzy(feed, "Postgres") == []  # a prefix: the keyword search's own
    assert fuzzy(feed, "kubernetes") == []


def test_every_query_token_must_match_and_short_ones_only_by_prefix() -> None:
    feed = Feed().entity("Apache Kafka", "Technology").entity("Franz Kafka")

    assert fuzzy(feed, "apache kafak") == ["Apache Kafka"]
    assert fuzzy(feed, "ap kafak") == ["Apache Kafka"]
    assert fuzzy(feed, "kafak") == ["Franz Kafka", "Apache Kafka"]  # the shorter name first
    assert fuzzy(feed, "zz kafak") == []


def test_fuzzy_hits_rank_by_fewest_edits_then_shorter_names_then_name() -> None:
    feed = Feed().entity("Postgres DB", "Technology").entity("PostgreSQL", "Technology")
    feed.entity("Postgrex", "Technology").entity("Postgrez", "Technology")

    # "postgress": one edit from postgres (the DB's token); two from postgrex, postgrez and
    # postgresql, the shorter names first.
    assert fuzzy(feed, "Postgress") == ["Postgres DB", "Postgrex", "Postgrez", "PostgreSQL"]
    assert fuzzy(feed, "Postgress", limit=2) == ["Postgres DB", "Postgrex"]
    assert fuzzy_search(family_index(feed.graph), "Postgress", limit=1)[1] == 4


def test_aliases_are_matched_fuzzily_too() -> None:
    feed = Feed().entity("Amazon Web Services", "Technology", aliases=["Cloudfront"])

    assert fuzzy(feed, "Cloudfornt") == ["Amazon Web Services"]


def test_the_index_follows_writes() -> None:
    feed = technologies()
    assert fuzzy(feed, "Elasticsaerch") == []  # builds the index

    feed.entity("Elasticsearch", "Technology")
    assert fuzzy(feed, "Elasticsaerch") == ["Elasticsearch"]

    feed.add(EntityDeleted(name="Elasticsearch"))
    assert fuzzy(feed, "Elasticsaerch") == []


def test_graph_entities_lists_keyword_hits_first_then_fuzzy_ones_and_counts_both() -> None:
    feed = Feed().entity("Postgres", "Technology").entity("PostgreSQL", "Technology")
    feed.entity("Postgrex", "Technology").entity("Alice")

    answer = listed(feed, search="Postgres")
    assert [e["name"] for e in answer["entities"]] == ["Postgres", "PostgreSQL", "Postgrex"]
    assert answer["total"] == 3

    cut = listed(feed, search="Postgres", limit=2)
    assert [e["name"] for e in cut["entities"]] == ["Postgres", "PostgreSQL"]
    assert cut["total"] == 3


def test_graph_entities_filters_fuzzy_hits_by_type() -> None:
    feed = Feed().entity("PostgreSQL", "Technology").entity("Postgresql Fan Club", "Group")

    answer = listed(feed, search="Postgress", entity_type="Technology")
    assert [e["name"] for e in answer["entities"]] == ["PostgreSQL"]
    assert answer["total"] == 1


def test_graph_query_falls_back_to_the_best_fuzzy_match() -> None:
    feed = technologies().edge("PostgreSQL", "Redis", "CACHED_BY")

    answer = graph_query(feed.graph, QueryOptions(entities=["Postgress", "Annabel"]))

    assert [n["name"] for n in answer["nodes"]] == ["PostgreSQL", "Redis"]
    assert answer["unresolved"] == ["Annabel"]


def test_the_ranking_is_stable_across_rebuilds() -> None:
    names = [f"Service {i:03d}" for i in range(50)] + ["Serve Mesh", "Servive Bus"]

    def build() -> Feed:
        feed = Feed()
        for name in names:
            feed.entity(name, "Technology")
        return feed

    found = fuzzy(build(), "servce")
    assert found == fuzzy(build(), "servce")
    # One edit from "serve" and "service" (shorter names first, then by name); two from
    # "servive": too far for six letters.
    assert found == ["Serve Mesh", *names[:50]]
