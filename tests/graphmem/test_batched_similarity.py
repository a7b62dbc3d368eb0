"""Merge suggestions' batched top-k (one matrix product for every seed) gives what a separate,
exact search per entity gives: on random vectors with ties and near-ties, and on random graphs
through graph_merge_suggestions' own computation (contract §8.12)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest

from graphmem.embedding.embedders import HashEmbedder, Matrix
from graphmem.embedding.service import EmbeddingService
from graphmem.embedding.vectors import VectorIndex
from graphmem.tools.graph_suggest_tools import ServiceSimilarities
from projections.graph_family import SuggestOptions, merge_suggestions, type_filter
from tests.projections.graph_family_support import Feed

TYPES = ("Person", "Project", "Technology")
DIM = HashEmbedder.dim  # the service's vectors are its embedder's size


def unit(rows: npt.NDArray[np.floating[Any]]) -> Matrix:
    normalised = rows / np.linalg.norm(rows, axis=-1, keepdims=True)
    return cast(Matrix, normalised.astype(np.float32))


def clustered(rng: np.random.Generator, count: int) -> Matrix:
    """`count` unit vectors in small clusters (near-duplicates: cosines 0.9-1.0), a few of
    them exact copies (ties, which the name order breaks) or a float32 step apart."""
    centres = rng.standard_normal((max(1, count // 4), DIM))
    noise = rng.uniform(0.0, 0.3, (count, 1)) * rng.standard_normal((count, DIM))
    vectors = unit(centres[rng.integers(0, len(centres), count)] + noise)
    for row in rng.choice(count, count // 10, replace=False).tolist():
        vectors[row] = vectors[(row + 1) % count]
        if row % 2:
            vectors[row, 0] = np.nextafter(vectors[row, 0], np.float32(2))
    return vectors


def exact_top_k(
    index: dict[str, tuple[str, Matrix]],
    query: Matrix,
    k: int,
    accepts: Callable[[str], bool] | None,
    least: float,
) -> list[tuple[str, float]]:
    """The reference: every entity scored alone (its exact dot product, rounded once),
    sorted, cut."""
    found = []
    for name, (entity_type, vector) in index.items():
        if accepts is not None and not accepts(entity_type):
            continue
        score = math.fsum(vector.astype(np.float64) * query.astype(np.float64))
        if score >= least:
            found.append((name, score))
    found.sort(key=lambda pair: (-pair[1], pair[0]))
    return found[:k]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_top_k_many_equals_an_exact_search_per_query_whatever_the_batch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = clustered(rng, 600)
    index = VectorIndex(DIM)
    kept: dict[str, tuple[str, Matrix]] = {}
    items = []
    for i, vector in enumerate(vectors):
        name, entity_type = f"e{i:03d}", TYPES[i % len(TYPES)]
        items.append((name, entity_type, b"", vector))
        kept[name] = (entity_type, vector)
    index.set_many(items)
    gone = [f"e{i:03d}" for i in rng.choice(600, 60, replace=False).tolist()]
    index.remove_many(gone)  # freed rows must never be found
    for name in gone:
        del kept[name]
    picked = vectors[rng.choice(600, 80, replace=False)]
    filters: list[Callable[[str], bool] | None] = [
        None if i % 4 == 0 else type_filter([TYPES[i % len(TYPES)]]) for i in range(len(picked))
    ]
    # (k, least, queries): every row at once when k is above the index's size.
    for k, least, count in ((1, -1.0, 80), (10, 0.85, 80), (21, 0.5, 80), (700, -1.0, 8)):
        queries = picked[:count]
        batched = index.top_k_many(queries, k, types=filters[:count], min_similarity=least)
        one_by_one = [
            index.top_k_many(queries[i : i + 1], k, types=[filters[i]], min_similarity=least)[0]
            for i in range(count)
        ]
        expected = [
            exact_top_k(kept, query, k, filters[i], least) for i, query in enumerate(queries)
        ]
        assert batched == expected
        assert one_by_one == expected


class ExactPerEntity:
    """`Similarities` as one exact search per seed: what the batched one must equal."""

    def __init__(self, service: EmbeddingService, feed: Feed) -> None:
        self.embedder = service.name
        self._graph = feed.graph
        self._vectors = {
            name: (feed.graph.entity_type(name) or "", vector)
            for name in feed.graph.entity_names()
            if (vector := service.vector_of(name)) is not None
        }

    def most_similar_many(
        self, names: Sequence[str], k: int, least: float
    ) -> list[list[tuple[str, float]]]:
        answers = []
        for name in names:
            entity_type, vector = self._vectors[name]
            others = {n: v for n, v in self._vectors.items() if n != name}
            answers.append(exact_top_k(others, vector, k, type_filter([entity_type]), least))
        return answers


def random_graph(seed: int) -> tuple[Feed, EmbeddingService]:
    """Entities of three types with clustered vectors, named from a small vocabulary (so
    names share tokens) and joined by random edges (so neighbourhoods overlap)."""
    rng, pick = np.random.default_rng(seed), random.Random(seed)
    words = ("Ann", "Lee", "Acme", "Data", "Core", "Smith", "Jon", "Postgres", "Graph", "Lab")
    feed = Feed()
    names = []
    for i in range(240):
        name = f"{pick.choice(words)} {pick.choice(words)} {i}"
        feed.entity(name, TYPES[i % len(TYPES)])
        names.append(name)
    for _ in range(600):
        a, b = pick.sample(names, 2)
        feed.edge(a, b, pick.choice(("KNOWS", "USES", "WORKS_ON")))
    service = EmbeddingService.in_data_dir(HashEmbedder(), lambda query: None, None)
    vectors = clustered(rng, len(names))
    service.vectors.set_many(
        [(n, TYPES[i % len(TYPES)], b"", vectors[i]) for i, n in enumerate(names)]
    )
    return feed, service


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_merge_suggestions_batched_equal_one_exact_search_per_seed_on_a_random_graph(
    seed: int,
) -> None:
    feed, service = random_graph(seed)
    some = sorted(feed.graph.entity_names())[7]
    for options in (
        SuggestOptions(min_score=0.0, min_embedding_similarity=0.5, limit=100),
        SuggestOptions(entity_type="project", min_score=0.3, min_embedding_similarity=0.8),
        SuggestOptions(entity_id=some, min_score=0.0, min_embedding_similarity=0.0),
    ):
        batched = merge_suggestions(feed.graph, options, ServiceSimilarities(service, feed.graph))
        reference = merge_suggestions(feed.graph, options, ExactPerEntity(service, feed))
        assert batched == reference
        assert batched["total_pairs_evaluated"] > 0
