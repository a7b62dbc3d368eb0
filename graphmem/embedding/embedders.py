"""The embedders GRAPHMEM_EMBEDDER may name: `hash` (built in) and `semantic` (the extra).

An embedder turns texts into L2-normalised float32 rows; the cosine of two texts is then the
dot product of their rows. `id` changes whenever the vectors would (another model, another
dimension, another algorithm), so cached vectors of an older embedder are never reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "Embedder",
    "EmbedderUnavailableError",
    "HashEmbedder",
    "Matrix",
]

Matrix = npt.NDArray[np.float32]

HASH_DIM = 256
# The 64-bit multiplier of Fibonacci hashing: spreads n-gram codes over the high bits.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_FOUR_GRAM_TAG = np.uint64(1 << 40)  # keeps a 4-gram's code apart from any 3-gram's


class Embedder(Protocol):
    """What the embedding service needs of an embedder."""

    @property
    def name(self) -> str:
        """What results call it (`embedder: "hash"`)."""
        ...

    @property
    def id(self) -> str:
        """The cache key's embedder part: changes whenever the vectors would."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix:
        """One L2-normalised row per text (a zero row for a text with nothing to embed)."""
        ...


class EmbedderUnavailableError(Exception):
    """The embedder named cannot be loaded here: says what to install."""


class HashEmbedder:
    """Lexical: lower-cased text padded with a space, its UTF-8 byte 3- and 4-grams hashed
    into signed buckets, square-root damped, L2-normalised. Deterministic across processes
    (no Python `hash`), so cached vectors stay valid. Catches spelling variants (Postgres ~
    PostgreSQL), never synonyms (car ~ automobile ~ 0)."""

    name = "hash"
    id = f"hash-ngram-3-4-v1-{HASH_DIM}"
    dim = HASH_DIM

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), HASH_DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._one(text)
        return out

    @staticmethod
    def _one(text: str) -> Matrix:
        data = f" {text.lower()} ".encode("utf-8", "surrogatepass")
        if len(data) < 3:
            return np.zeros(HASH_DIM, dtype=np.float32)
        b = np.frombuffer(data, dtype=np.uint8).astype(np.uint64)
        three = (b[:-2] << np.uint64(16)) | (b[1:-1] << np.uint64(8)) | b[2:]
        four = (
            (b[:-3] << np.uint64(24))
            | (b[1:-2] << np.uint64(16))
            | (b[2:-1] << np.uint64(8))
            | b[3:]
            | _FOUR_GRAM_TAG
        )
        codes = np.concatenate((three, four)) * _GOLDEN  # wraps modulo 2**64, on purpose
        buckets = (codes >> np.uint64(56)).astype(np.intp)  # the top 8 bits: 256 buckets
        signs = np.where((codes >> np.uint64(31)) & np.uint64(1), 1.0, -1.0)
        summed = np.bincount(buckets, weights=signs, minlength=HASH_DIM)
        damped = np.sign(summed) * np.sqrt(np.abs(summed))
        norm = float(np.linalg.norm(damped))
        if norm == 0.0:
            return np.zeros(HASH_DIM, dtype=np.float32)
        return (damped / norm).astype(np.float32)
