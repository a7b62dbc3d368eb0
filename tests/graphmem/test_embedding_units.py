"""The embeddings' parts on their own (contract §7): the embed text rule, the hash embedder,
the vector index's exact top-k and the cache's keys."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np

from graphmem.embedding.cache import VectorCache
from graphmem.embedding.embedders import HASH_DIM, HashEmbedder
from graphmem.embedding.text import embed_text, text_key
from graphmem.embedding.vectors import VectorIndex

REPO = Path(__file__).resolve().parents[2]


def cosine(a: str, b: str) -> float:
    rows = HashEmbedder().embed([a, b])
    return float(rows[0] @ rows[1])


def test_the_embed_text_joins_name_type_and_the_non_empty_descriptive_values_in_order() -> None:
    properties = {
        "specialty": "Rust",
        "what": 3,  # not a string: left out
        "description": "   ",  # blank: left out
        "category": "staff",
        "role": "engineer",
        "colour": "blue",  # not one of the six: left out
    }
    assert embed_text("Alice", "Person", "rule", properties) == (
        "Alice — Person — rule — engineer — staff — Rust"
    )
    assert embed_text("Bob", "Person", None, {}) == "Bob — Person"


def test_the_text_key_is_the_sha256_of_the_utf8_text() -> None:
    assert text_key("Zoë — Person") == hashlib.sha256("Zoë — Person".encode()).digest()
    assert text_key("a") != text_key("A")


def test_hash_vectors_are_unit_length_case_blind_and_zero_for_an_empty_text() -> None:
    rows = HashEmbedder().embed(["Alice Smith — Person", "ALICE SMITH — PERSON", ""])
    assert rows.shape == (3, HASH_DIM)
    assert rows.dtype == np.float32
    assert abs(float(np.linalg.norm(rows[0])) - 1.0) < 1e-5
    assert np.array_equal(rows[0], rows[1])
    assert not rows[2].any()


def test_the_hash_embedder_catches_spelling_variants_and_not_synonyms() -> None:
    assert cosine("Postgres", "PostgreSQL") > 0.6
    assert cosine("Postgres", "banana") < 0.2
    assert abs(cosine("car", "automobile")) < 0.2


def test_hash_vectors_are_the_same_in_another_process() -> None:
    text = "Kubernetes — Technology — container orchestration"
    script = (
        "from graphmem.embedding.embedders import HashEmbedder;"
        f"print(HashEmbedder().embed([{text!r}]).tobytes().hex())"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=REPO,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert other.stdout.strip() == HashEmbedder().embed([text]).tobytes().hex()


def test_top_k_ranks_by_similarity_then_name_filters_types_and_forgets_removed_rows() -> None:
    index = VectorIndex(2)
    east, north = np.array([1, 0], np.float32), np.array([0, 1], np.float32)
    diagonal = np.array([0.6, 0.8], np.float32)
    index.set_many(
        [
            ("b", "Person", b"1", east),
            ("a", "Person", b"2", east),
            ("c", "Project", b"3", diagonal),
            ("d", "person", b"4", north),
        ]
    )
    assert index.top_k(east, 3) == [("a", 1.0), ("b", 1.0), ("c", 0.6000000238418579)]
    assert [n for n, _ in index.top_k(east, 10, min_similarity=0.5)] == ["a", "b", "c"]
    assert [n for n, _ in index.top_k(east, 10, types=lambda t: t == "Project")] == ["c"]
    index.remove_many(["a"])
    assert [n for n, _ in index.top_k(east, 2)] == ["b", "c"]
    assert index.vector("a") is None
    index.set_many([("e", "Person", b"5", north)])  # takes the freed row
    assert [n for n, _ in index.top_k(north, 2)] == ["d", "e"]
    assert len(index) == 4


def test_top_k_grows_past_its_first_rows() -> None:
    index = VectorIndex(HASH_DIM)
    names = [f"entity {i}" for i in range(3000)]
    vectors = HashEmbedder().embed(names)
    index.set_many([(n, "Thing", text_key(n), v) for n, v in zip(names, vectors, strict=True)])
    assert index.top_k(vectors[2999], 1)[0][0] == "entity 2999"
    vector = index.vector("entity 1500")
    assert vector is not None
    assert np.array_equal(vector, vectors[1500])


def test_the_cache_is_keyed_by_embedder_and_text_and_outlives_its_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "embeddings.lmdb"
    vector = np.arange(4, dtype=np.float32)
    first = VectorCache(path, "model-a", 4)
    first.put_many([(text_key("Alice — Person"), vector)])
    first.close()
    again = VectorCache(path, "model-a", 4)
    other_model = VectorCache(path, "model-b", 4)
    try:
        hit, miss = again.get_many([text_key("Alice — Person"), text_key("Bob — Person")])
        assert hit is not None
        assert np.array_equal(hit, vector)
        assert miss is None
        assert other_model.get_many([text_key("Alice — Person")]) == [None]
    finally:
        again.close()
        other_model.close()


def test_a_cache_that_cannot_be_opened_leaves_the_vectors_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = VectorCache(blocker / "embeddings.lmdb", "model-a", 4)
    assert not cache.persistent
    cache.put_many([(text_key("x"), np.zeros(4, np.float32))])
    assert cache.get_many([text_key("x")]) == [None]
