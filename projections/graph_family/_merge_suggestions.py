"""graph_merge_suggestions (contract §8.12): likely duplicates, scored, read only.

1. Degrees: the visible edges touching an entity (any type, either way, current or
   superseded); hub weight `1 / (1 + ln(max(degree, 1)))`.
2. Seeds: the entities `entity_id` resolves to and/or of `entity_type`, by degree descending
   then id, at most 200 (every alive entity when neither is given).
3. Candidates: per seed, the 10 most similar entities of its own type with a similarity of at
   least `min_embedding_similarity` (`Similarities`: the embeddings read model).
4. Pairs in canonical order (`a.id < b.id`), each once with its higher similarity.
5. Signals: the cosine; the hub-weighted Jaccard of the `(neighbour, relation type)` sets,
   the partner excluded (a neighbour shared through different relation types is not shared);
   the Jaccard of the name token sets (letters and digits of any script, casefolded).
6. `score` = the weighted sum; kept from `min_score`, by score descending then ids, cut to
   `limit` (at most 100). Scores, signals and hub weights are rounded to 4 places.

The audit lines (`merge_flagged`) are the tool's to write: `audit_lines` builds them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._index import FamilyIndex
from projections.graph_family._tokens import tokens
from projections.graph_family._types import type_filter
from projections.graph_family._values import Reading

__all__ = [
    "MAX_LIMIT",
    "MAX_SEEDS",
    "Similarities",
    "SuggestOptions",
    "Weights",
    "audit_lines",
    "hub_weight",
    "merge_suggestions",
    "name_similarity",
    "neighbour_jaccard",
    "reason",
]

MAX_SEEDS = 200
CANDIDATES_PER_SEED = 10
MAX_LIMIT = 100
PLACES = 4

Neighbours = dict[tuple[str, str], float]  # (neighbour, relation type) -> its hub weight


@dataclass(frozen=True)
class Weights:
    embedding: float = 0.4
    neighbor_jaccard: float = 0.4
    name: float = 0.2


@dataclass(frozen=True)
class SuggestOptions:
    entity_id: str | None = None
    entity_type: str | None = None
    min_score: float = 0.8
    min_embedding_similarity: float = 0.85
    limit: int = 20
    weights: Weights = field(default_factory=Weights)


class Similarities(Protocol):
    """What merge suggestions ask of an embeddings read model."""

    @property
    def embedder(self) -> str:
        """The embedder's name, reported in the answer."""

    def most_similar_many(
        self, names: Sequence[str], k: int, least: float
    ) -> list[list[tuple[str, float]]]:
        """For each of `names`, the `k` alive entities of its type most similar to it (itself
        excluded), with a cosine of at least `least`, most similar first, ties by name. All
        at once: for 200 seeds, one matrix product rather than 200."""


def hub_weight(degree: int) -> float:
    """1 / (1 + ln(max(degree, 1))): a neighbour shared with a hub says little."""
    return 1.0 / (1.0 + math.log(max(degree, 1)))


def name_similarity(a: str, b: str) -> float:
    """Jaccard of the names' token sets (Unicode letters and digits, casefolded); 0 when
    both have none."""
    left, right = set(tokens(a)), set(tokens(b))
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def neighbour_jaccard(a: Neighbours, b: Neighbours) -> float:
    """Σ hub weight over the shared `(neighbour, relation)` entries / Σ over all of them;
    0 when neither has any."""
    union = sum(a.values()) + sum(w for key, w in b.items() if key not in a)
    shared = sum(w for key, w in a.items() if key in b)
    return shared / union if union else 0.0


def reason(score: float, embedding: float, jaccard: float, name: float) -> str:
    """The audit line's reason, e.g. `score=0.92 (emb=0.97, neighbor_jaccard=0.85, name=0.5)`."""
    return f"score={score} (emb={embedding}, neighbor_jaccard={jaccard}, name={name})"


def merge_suggestions(
    graph: GraphProjection, options: SuggestOptions, similar: Similarities
) -> dict[str, Any]:
    """graph_merge_suggestions' answer for `options` over `graph`, with `similar` (a
    `Similarities`) for the embedding signal. An `entity_id` that resolves to nothing gives
    `found: false`."""
    index = family_index(graph)
    reading = Reading(graph)
    scope: dict[str, Any] = {}
    if options.entity_id is not None:
        scope["entity_id"] = options.entity_id
    if options.entity_type is not None:
        scope["entity_type"] = options.entity_type
    scope["global"] = options.entity_id is None and options.entity_type is None
    answer: dict[str, Any] = {
        "suggestions": [],
        "total_pairs_evaluated": 0,
        "threshold_used": options.min_score,
        "embedder": similar.embedder,
        "scope": scope,
    }
    seeds = _seeds(graph, index, reading, options)
    if seeds is None:
        answer["found"] = False
        return answer
    pairs: dict[tuple[str, str], tuple[str, str, float]] = {}
    nearest = similar.most_similar_many(
        seeds, CANDIDATES_PER_SEED, options.min_embedding_similarity
    )
    for seed, candidates in zip(seeds, nearest, strict=True):
        for other, cosine in candidates:
            a, b = sorted((seed, other), key=reading.entity_id)
            key = (reading.entity_id(a), reading.entity_id(b))
            if key not in pairs or pairs[key][2] < cosine:
                pairs[key] = (a, b, cosine)
    answer["total_pairs_evaluated"] = len(pairs)
    weights = options.weights
    neighbours = _Neighbourhoods(graph, index)
    scored = []
    for (id_a, id_b), (a, b, cosine) in pairs.items():
        near_a = neighbours.of(a, b)
        near_b = neighbours.of(b, a)
        jaccard = neighbour_jaccard(near_a, near_b)
        names = name_similarity(a, b)
        score = (
            weights.embedding * cosine + weights.neighbor_jaccard * jaccard + weights.name * names
        )
        if score >= options.min_score:
            scored.append((-score, id_a, id_b, a, b, cosine, jaccard, names, near_a, near_b))
    limit = min(options.limit, MAX_LIMIT)
    for negated, _, _, a, b, cosine, jaccard, names, near_a, near_b in heapq.nsmallest(
        limit, scored, key=lambda s: (s[0], s[1], s[2])
    ):
        shared_keys = sorted(
            (key for key in near_a if key in near_b),
            key=lambda key: (-near_a[key], reading.entity_id(key[0]), key[1]),
        )
        shared = [
            {
                "id": reading.entity_id(neighbour),
                "relation": relation,
                "degree": index.degree(neighbour),
                "weight": round(near_a[(neighbour, relation)], PLACES),
            }
            for neighbour, relation in shared_keys
        ]
        answer["suggestions"].append(
            {
                "entity_a": _entity(reading, a, len(near_a)),
                "entity_b": _entity(reading, b, len(near_b)),
                "score": round(-negated, PLACES),
                "signals": {
                    "embedding_similarity": round(cosine, PLACES),
                    "name_similarity": round(names, PLACES),
                    "neighbor_jaccard": round(jaccard, PLACES),
                    "shared_neighbors": shared,
                },
                "recommended_action": "review",
            }
        )
    return answer


def audit_lines(answer: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """One `merge_flagged` record per suggestion (the tool adds `event` and `timestamp`)."""
    for suggestion in answer["suggestions"]:
        signals = suggestion["signals"]
        yield {
            "entity_a": suggestion["entity_a"]["id"],
            "entity_b": suggestion["entity_b"]["id"],
            "reason": reason(
                suggestion["score"],
                signals["embedding_similarity"],
                signals["neighbor_jaccard"],
                signals["name_similarity"],
            ),
        }


def _seeds(
    graph: GraphProjection, index: FamilyIndex, reading: Reading, options: SuggestOptions
) -> list[str] | None:
    """The seeds, by degree descending then id, at most MAX_SEEDS; None when `entity_id`
    resolves to nothing."""
    if options.entity_id is not None:
        names: Iterable[str] = graph.resolve_name(options.entity_id).names
        if not names:
            return None
    elif options.entity_type is not None:
        names = index.names_of_types(index.types_matching(type_filter([options.entity_type])))
    else:
        names = (entry.name for entry in index.entries())
    if options.entity_type is not None and options.entity_id is not None:
        matches = type_filter([options.entity_type])
        names = [n for n in names if matches(reading.entity_type(n))]
    by_degree = [(-index.degree(name), name) for name in names]
    if len(by_degree) > MAX_SEEDS:
        # Only the degree groups that reach the 200th seed need their ids (slugs) computed.
        cut = heapq.nsmallest(MAX_SEEDS, by_degree)[-1][0]
        by_degree = [pair for pair in by_degree if pair[0] <= cut]
    ranked = sorted(by_degree, key=lambda pair: (pair[0], reading.entity_id(pair[1])))
    return [name for _, name in ranked[:MAX_SEEDS]]


class _Neighbourhoods:
    """N(x) per entity, computed once per call (a seed that is a hub is in up to 10 pairs)."""

    def __init__(self, graph: GraphProjection, index: FamilyIndex) -> None:
        self._graph = graph
        self._index = index
        self._full: dict[str, Neighbours] = {}

    def of(self, name: str, partner: str) -> Neighbours:
        """N(name): its visible edges' `(other end, relation type)`, the partner excluded,
        each with the other end's hub weight."""
        full = self._full.get(name)
        if full is None:
            full = self._full[name] = {}
            for from_entity, to_entity, relation in self._graph.incident_keys(name):
                other = to_entity if from_entity == name else from_entity
                full[(other, relation)] = hub_weight(self._index.degree(other))
        if not any(other == partner for other, _ in full):
            return full
        return {key: weight for key, weight in full.items() if key[0] != partner}


def _entity(reading: Reading, name: str, edge_count: int) -> dict[str, Any]:
    return {
        "id": reading.entity_id(name),
        "name": name,
        "type": reading.entity_type(name),
        "edge_count": edge_count,
    }
