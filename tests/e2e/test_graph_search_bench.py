"""The graph_search benchmarks at a tiny size: they run end to end against a real server and
report their figures. No figure is judged (the machine is shared and noisy)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench import graph_retrieval, graph_search
from graphmem.embedding.embedders import HashEmbedder


def test_the_retrieval_bench_scores_every_labelled_query() -> None:
    row = graph_retrieval.evaluate(HashEmbedder())
    overall: dict[str, Any] = row["all"]  # type: ignore[assignment]
    assert overall["queries"] == len(graph_retrieval.QUERIES)
    assert 0 < overall["mrr"] <= 1
    assert overall["recall@1"] <= overall["recall@10"] <= 1
    # Every query means an entity of the set.
    names = {name for name, _, _ in graph_retrieval.ENTITIES}
    assert {wanted for _, wanted, _ in graph_retrieval.QUERIES} <= names


def test_the_search_bench_embeds_a_served_graph_times_searches_and_restarts_from_the_cache(
    tmp_path: Path,
) -> None:
    args = argparse.Namespace(
        entities=200,
        edges=600,
        seed=7,
        embedder="hash",
        calls=3,
        embed_timeout=120.0,
        cache_dir=tmp_path / "cache",
    )
    results: dict[str, Any] = {}
    texts = graph_search.server_part(args, results)
    assert len(texts) == 200
    assert results["first_start"]["embed_all_s"] >= 0
    assert set(results["graph_search"]) == set(
        graph_search.search_calls({"names": ["a b"], "types": ["T"]}, 1)
    )
    for row in results["graph_search"].values():
        assert row["calls"] == 3
    assert results["restart"]["vectors_from_cache_s"] >= 0
    matrix = graph_search.matrix_part(HashEmbedder(), 3000, 0.1)
    assert matrix["rows"] == 3000
