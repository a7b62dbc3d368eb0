"""Entity similarity for graph_merge_suggestions (contract §7, §8.12): the `hash` embedder's
vectors of the entities' embed texts, kept per entity type for an exact top-k.

The vectors are derived data, never events: a FamilyIndex listener (`EntityVectors`) is told
which entities changed and re-embeds only those whose embed text changed; a type's matrix is
kept row by row (new entities take a free row, gone ones are masked), so after a write a
query pays for the changed entities, not for the type. Built on first use, never in
snapshots.

The `hash` embedder (search-stack.md §4): lower-cased text padded with a space, UTF-8 byte 3-
and 4-grams, each hashed (64-bit multiplicative) into one of 256 buckets with a sign,
square-root damped, L2-normalised. Lexical: it catches spelling variants (Postgres ~
PostgreSQL), not synonyms.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from projections.graph import GraphProjection
from projections.graph_family._index import FamilyIndex, family_index
from projections.graph_family._values import Reading

__all__ = [
    "DIMENSIONS",
    "EMBEDDER",
    "EntityVectors",
    "Similarities",
    "embed_text",
    "entity_vectors",
    "hash_embed",
]

EMBEDDER = "hash"
DIMENSIONS = 256
Vector = npt.NDArray[np.float32]

# The properties whose non-empty string values follow the name and type (§7), in this order.
_EMBED_PROPERTIES = ("description", "role", "category", "what", "specialty")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: mixes every input bit up
_SIGN_BIT = np.uint64(63)
_BUCKET_SHIFT = np.uint64(32)


class Similarities(Protocol):
    """What merge suggestions ask of an embeddings read model."""

    embedder: str

    def most_similar(self, name: str, k: int, least: float) -> list[tuple[str, float]]:
        """The `k` entities of `name`'s type most similar to it (itself excluded), with a
        cosine of at least `least`, most similar first (ties by name)."""


def embed_text(reading: Reading, name: str) -> str:
    """The name, the type, then the non-empty subtype, description, role, category, what
    and specialty, joined with an em dash (§7: all of them, not the first)."""
    attrs = reading.attrs(name)
    parts = [name, reading.entity_type(name)]
    values = [attrs.subtype, *(attrs.properties.get(key) for key in _EMBED_PROPERTIES)]
    parts += [v for v in values if isinstance(v, str) and v]
    return " — ".join(parts)


def hash_embed(text: str) -> Vector:
    """The `hash` embedder's unit vector of `text` (zero for a text without 3 bytes)."""
    raw = np.frombuffer(f" {text.lower()} ".encode(), dtype=np.uint8).astype(np.uint64)
    counts = np.zeros(DIMENSIONS, dtype=np.float64)
    for n in (3, 4):
        if raw.size < n:
            continue
        span = raw.size - n + 1
        code = np.zeros(span, dtype=np.uint64)
        for offset in range(n):
            code |= raw[offset : offset + span] << np.uint64(8 * offset)
        code += np.uint64(n << 40)  # a 3-gram and a 4-gram never share a code
        hashed = code * _MULTIPLIER  # wraps modulo 2^64, as meant
        buckets = (hashed >> _BUCKET_SHIFT) % np.uint64(DIMENSIONS)
        signs = 1.0 - 2.0 * (hashed >> _SIGN_BIT).astype(np.float64)
        counts += np.bincount(buckets.astype(np.intp), weights=signs, minlength=DIMENSIONS)
    damped = np.sign(counts) * np.sqrt(np.abs(counts))
    norm = float(np.linalg.norm(damped))
    return (damped / norm if norm else damped).astype(np.float32)


class _TypeRows:
    """One type's vectors: a row per entity, free rows masked out."""

    def __init__(self) -> None:
        self.matrix: Vector = np.zeros((16, DIMENSIONS), dtype=np.float32)
        self.alive = np.zeros(16, dtype=bool)
        self.names: list[str | None] = [None] * 16
        self.row: dict[str, int] = {}
        self.free: list[int] = list(range(15, -1, -1))

    def put(self, name: str, vector: Vector) -> None:
        row = self.row.get(name)
        if row is None:
            if not self.free:
                self._grow()
            row = self.free.pop()
            self.row[name] = row
            self.names[row] = name
        self.matrix[row] = vector
        self.alive[row] = True

    def drop(self, name: str) -> None:
        row = self.row.pop(name, None)
        if row is not None:
            self.alive[row] = False
            self.names[row] = None
            self.free.append(row)

    def _grow(self) -> None:
        size = len(self.names)
        self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
        self.alive = np.concatenate([self.alive, np.zeros(size, dtype=bool)])
        self.names += [None] * size
        self.free = list(range(2 * size - 1, size - 1, -1))


class EntityVectors:
    """The `hash` vectors of every alive entity, by type (a FamilyIndex listener)."""

    embedder = EMBEDDER

    def __init__(self, graph: GraphProjection, index: FamilyIndex) -> None:
        self._graph = graph
        self._index = index
        self._texts: dict[str, tuple[str, str]] = {}  # name -> (type, embed text)
        self._types: dict[str, _TypeRows] = {}
        self._dirty: set[str] = set()
        reading = Reading(graph)
        for entry in index.entries():
            self._set(reading, entry.name)

    def touched(self, names: set[str], *, everything: bool) -> None:
        # A decay run changes no embed text; anything else is re-read at the next query.
        if not everything:
            self._dirty |= names

    def _catch_up(self) -> None:
        if not self._dirty:
            return
        reading = Reading(self._graph)
        names, self._dirty = self._dirty, set()
        for name in names:
            self._set(reading, name)

    def _set(self, reading: Reading, name: str) -> None:
        entry = self._index.entry(name)
        old = self._texts.get(name)
        if entry is None:
            if old is not None:
                del self._texts[name]
                self._types[old[0]].drop(name)
            return
        text = embed_text(reading, name)
        new = (entry.entity_type, text)
        if old == new:
            return
        if old is not None and old[0] != new[0]:
            self._types[old[0]].drop(name)
        self._texts[name] = new
        self._types.setdefault(new[0], _TypeRows()).put(name, hash_embed(text))

    def vector(self, name: str) -> Vector | None:
        """The entity's vector, if it is alive."""
        self._catch_up()
        found = self._texts.get(name)
        if found is None:
            return None
        rows = self._types[found[0]]
        vector: Vector = rows.matrix[rows.row[name]]
        return vector

    def most_similar(self, name: str, k: int, least: float) -> list[tuple[str, float]]:
        self._catch_up()
        found = self._texts.get(name)
        if found is None:
            return []
        rows = self._types[found[0]]
        scores = rows.matrix @ rows.matrix[rows.row[name]]
        scores[~rows.alive] = -np.inf
        scores[rows.row[name]] = -np.inf
        eligible = np.flatnonzero(scores >= np.float32(least))
        if eligible.size > k:
            # The k best, with every row tied with the k-th kept so ties break by name.
            kth = np.partition(scores[eligible], eligible.size - k)[eligible.size - k]
            eligible = eligible[scores[eligible] >= kth]
        ranked = sorted(
            ((str(rows.names[row]), float(scores[row])) for row in eligible),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked[:k]


def entity_vectors(graph: GraphProjection) -> EntityVectors:
    """The graph's EntityVectors, built on first use and told of every change after."""
    index = family_index(graph)
    return index.listener("entity_vectors", lambda: EntityVectors(graph, index))
