"""graph_merge_suggestions decided purely (contract §8.12): hub weights, the neighbour and
name signals, seeds, canonical pairs, the score and its cut.

The embedding signal comes in as a table of cosines (`Cosines`): merge_suggestions takes any
`Similarities`, and the real one (the embedding service) is exercised end to end in
tests/tools/test_graph_suggest_tools.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from projections.graph_family import SuggestOptions, Weights, audit_lines, merge_suggestions
from projections.graph_family._merge_suggestions import (
    hub_weight,
    name_similarity,
    neighbour_jaccard,
    reason,
)
from tests.projections.graph_family_support import Feed


class Cosines:
    """Similarities from a table of pair cosines (symmetric), same type only."""

    embedder = "table"

    def __init__(self, feed: Feed, pairs: dict[tuple[str, str], float]) -> None:
        self._graph = feed.graph
        self._pairs = {**pairs, **{(b, a): c for (a, b), c in pairs.items()}}
        self.asked: list[str] = []

    def most_similar(self, name: str, k: int, least: float) -> list[tuple[str, float]]:
        self.asked.append(name)
        kind = self._graph.entity_type(name)
        found = [
            (b, c)
            for (a, b), c in self._pairs.items()
            if a == name and c >= least and self._graph.entity_type(b) == kind
        ]
        return sorted(found, key=lambda p: (-p[1], p[0]))[:k]

    def most_similar_many(
        self, names: Sequence[str], k: int, least: float
    ) -> list[list[tuple[str, float]]]:
        return [self.most_similar(name, k, least) for name in names]


def suggest(feed: Feed, pairs: dict[tuple[str, str], float], **options: Any) -> dict[str, Any]:
    return merge_suggestions(feed.graph, SuggestOptions(**options), Cosines(feed, pairs))


@pytest.mark.parametrize(
    ("degree", "weight"),
    [
        (0, 1.0),
        (1, 1.0),
        (2, 0.5906),
        (3, 0.4765),
        (4, 0.4191),
        (5, 0.3832),
        (10, 0.3028),
        (50, 0.2036),
        (100, 0.1784),
    ],
)
def test_hub_weights_follow_the_contracts_table(degree: int, weight: float) -> None:
    assert round(hub_weight(degree), 4) == weight


def test_neighbour_jaccard_weighs_entries_by_hub_weight_and_is_zero_when_both_are_empty() -> None:
    a = {("x", "USES"): 1.0, ("hub", "USES"): 0.25}
    b = {("x", "USES"): 1.0, ("y", "KNOWS"): 0.5}

    assert neighbour_jaccard(a, b) == pytest.approx(1.0 / 1.75)
    assert neighbour_jaccard({}, {}) == 0.0
    # A neighbour shared through different relation types is not shared.
    assert neighbour_jaccard({("x", "USES"): 1.0}, {("x", "LIKES"): 1.0}) == 0.0


def test_name_tokens_are_unicode_letters_and_digits_casefolded() -> None:
    assert name_similarity("Postgres", "PostgreSQL") == 0.0
    assert name_similarity("John Smith", "Jon Smith") == pytest.approx(1 / 3)
    assert name_similarity("Müller GmbH", "MÜLLER gmbh") == 1.0
    assert name_similarity("東京 タワー", "東京") == 0.5
    assert name_similarity("Straße", "STRASSE") == 1.0  # casefolding, not lower()
    assert name_similarity("???", "!!!") == 0.0


def people() -> Feed:
    """Jon and John Smith share Acme (degree 2 after both) and Bob; John also knows Carol."""
    feed = Feed().entity("John Smith").entity("Jon Smith").entity("Bob").entity("Carol")
    feed.entity("Acme", "Organization")
    feed.edge("John Smith", "Acme", "WORKS_AT").edge("Jon Smith", "Acme", "WORKS_AT")
    feed.edge("Bob", "John Smith", "KNOWS").edge("Bob", "Jon Smith", "KNOWS")
    feed.edge("John Smith", "Carol", "KNOWS")
    # Jon likes Carol: the same neighbour through another relation type is not shared.
    feed.edge("Jon Smith", "Carol", "LIKES")
    return feed


def test_a_pair_is_scored_from_its_three_signals_and_rounded_to_four_places() -> None:
    answer = suggest(people(), {("John Smith", "Jon Smith"): 0.9}, min_score=0)

    [found] = answer["suggestions"]
    assert found["entity_a"] == {
        "id": "john-smith",
        "name": "John Smith",
        "type": "Person",
        "edge_count": 3,
    }
    assert found["entity_b"]["id"] == "jon-smith"
    acme, bob, carol = hub_weight(2), hub_weight(2), hub_weight(2)
    jaccard = (acme + bob) / (acme + bob + 2 * carol)
    names = 1 / 3
    signals = found["signals"]
    assert signals["embedding_similarity"] == 0.9
    assert signals["neighbor_jaccard"] == round(jaccard, 4)
    assert signals["name_similarity"] == round(names, 4)
    assert found["score"] == round(0.4 * 0.9 + 0.4 * jaccard + 0.2 * names, 4)
    assert signals["shared_neighbors"] == [
        {"id": "acme", "relation": "WORKS_AT", "degree": 2, "weight": 0.5906},
        {"id": "bob", "relation": "KNOWS", "degree": 2, "weight": 0.5906},
    ]
    assert found["recommended_action"] == "review"
    assert answer["total_pairs_evaluated"] == 1
    assert answer["embedder"] == "table"
    assert answer["scope"] == {"global": True}
    assert "found" not in answer


def test_the_partner_is_not_its_own_shared_neighbour() -> None:
    feed = Feed().entity("Ann Lee").entity("Anne Lee").entity("Zed")
    feed.edge("Ann Lee", "Anne Lee", "SAME_AS").edge("Ann Lee", "Zed").edge("Anne Lee", "Zed")

    [found] = suggest(feed, {("Ann Lee", "Anne Lee"): 0.95}, min_score=0)["suggestions"]

    assert found["signals"]["neighbor_jaccard"] == 1.0
    assert [s["id"] for s in found["signals"]["shared_neighbors"]] == ["zed"]
    assert found["entity_a"]["edge_count"] == 1


def test_weights_are_overridable_and_min_score_keeps_from_the_threshold() -> None:
    pairs = {("John Smith", "Jon Smith"): 0.9}

    only_names = suggest(people(), pairs, min_score=0, weights=Weights(0, 0, 1))
    assert only_names["suggestions"][0]["score"] == round(1 / 3, 4)
    assert suggest(people(), pairs, min_score=0.34, weights=Weights(0, 0, 1))["suggestions"] == []
    assert suggest(people(), pairs)["threshold_used"] == 0.8


def test_candidates_must_reach_min_embedding_similarity_and_share_the_type() -> None:
    feed = people().entity("Smith", "Organization")
    pairs = {("John Smith", "Jon Smith"): 0.8, ("John Smith", "Smith"): 0.99}

    assert suggest(feed, pairs, min_score=0)["total_pairs_evaluated"] == 0  # 0.8 < 0.85
    answer = suggest(feed, pairs, min_score=0, min_embedding_similarity=0.8)
    assert [(s["entity_a"]["id"], s["entity_b"]["id"]) for s in answer["suggestions"]] == [
        ("john-smith", "jon-smith")
    ]


def test_pairs_are_canonical_by_id_counted_once_and_sorted_by_score_then_ids() -> None:
    feed = Feed()
    for name in ("Zoe", "Zoey", "Amy", "Amie", "Bea", "Bee"):
        feed.entity(name)
    pairs = {("Zoey", "Zoe"): 0.9, ("Amy", "Amie"): 0.9, ("Bee", "Bea"): 0.95}

    answer = suggest(feed, pairs, min_score=0)

    assert answer["total_pairs_evaluated"] == 3  # each pair is seen from both seeds
    assert [(s["entity_a"]["id"], s["entity_b"]["id"]) for s in answer["suggestions"]] == [
        ("bea", "bee"),
        ("amie", "amy"),
        ("zoe", "zoey"),
    ]
    assert [s["score"] for s in answer["suggestions"]] == [0.38, 0.36, 0.36]


def test_limit_cuts_and_is_never_above_one_hundred() -> None:
    feed = Feed()
    pairs = {}
    for i in range(120):
        feed.entity(f"P{i:03d}a").entity(f"P{i:03d}b")
        pairs[(f"P{i:03d}a", f"P{i:03d}b")] = 0.9
    # 240 entities: every one a seed only when scoped by type (at most 200 seeds).
    assert len(suggest(feed, pairs, min_score=0, limit=3)["suggestions"]) == 3
    assert len(suggest(feed, pairs, min_score=0, limit=1000)["suggestions"]) == 100


def test_seeds_are_taken_by_degree_then_id_at_most_two_hundred() -> None:
    feed = Feed()
    for i in range(210):
        feed.entity(f"E{i:03d}")
    feed.entity("Hub", "Place")
    for i in range(5):
        feed.edge(f"E{i:03d}", "Hub")
    feed.edge("E004", "E005")
    similar = Cosines(feed, {})

    merge_suggestions(feed.graph, SuggestOptions(entity_type="person"), similar)

    # E004: degree 2; E000-E003 and E005: 1, by id; then degree 0 by id.
    assert similar.asked[:6] == ["E004", "E000", "E001", "E002", "E003", "E005"]
    assert similar.asked[6:9] == ["E006", "E007", "E008"]
    assert len(similar.asked) == 200
    assert "Hub" not in similar.asked


def test_an_unknown_entity_id_gives_no_suggestions_and_found_false() -> None:
    answer = suggest(people(), {}, entity_id="nobody")

    assert answer["suggestions"] == []
    assert answer["found"] is False
    assert answer["scope"] == {"entity_id": "nobody", "global": False}


def test_an_entity_scope_seeds_only_that_entity_by_name_alias_or_id() -> None:
    feed = people()
    for reference in ("Jon Smith", "jon-smith", "JON SMITH"):
        similar = Cosines(feed, {("John Smith", "Jon Smith"): 0.9})
        answer = merge_suggestions(
            feed.graph, SuggestOptions(entity_id=reference, min_score=0), similar
        )
        assert similar.asked == ["Jon Smith"]
        assert len(answer["suggestions"]) == 1
    scoped = suggest(feed, {}, entity_id="Jon Smith", entity_type="Organization")
    assert scoped["scope"] == {
        "entity_id": "Jon Smith",
        "entity_type": "Organization",
        "global": False,
    }
    assert scoped["total_pairs_evaluated"] == 0
    assert "found" not in scoped


def test_audit_lines_name_the_pair_and_the_reason() -> None:
    answer = suggest(people(), {("John Smith", "Jon Smith"): 0.97}, min_score=0)

    [line] = audit_lines(answer)
    found = answer["suggestions"][0]
    signals = found["signals"]
    assert line == {
        "entity_a": "john-smith",
        "entity_b": "jon-smith",
        "reason": f"score={found['score']} (emb=0.97, "
        f"neighbor_jaccard={signals['neighbor_jaccard']}, name={signals['name_similarity']})",
    }
    assert reason(0.92, 0.97, 0.85, 0.5) == "score=0.92 (emb=0.97, neighbor_jaccard=0.85, name=0.5)"
    assert math.isclose(found["score"], round(found["score"], 4))
