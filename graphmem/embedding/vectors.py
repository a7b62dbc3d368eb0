"""The vectors of the alive entities as one float32 matrix, with exact top-k (contract §7).

Brute force on numpy: one matrix-vector product, 2.5 ms at 100,000 x 256 and ~21-40 ms at
1,000,000 (search-stack.md §5), perfect recall, in-place updates. Rows of deleted entities are
recycled. A row's entity type is kept as a small code so a type filter is one vector compare.
Thread-safe: the worker writes, searches read, under one lock (numpy releases the GIL for the
product, not the lock; the product is the whole search).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from graphmem.embedding.embedders import Matrix

__all__ = ["VectorIndex"]

Rows = npt.NDArray[np.intp]

_START_ROWS = 1024
# top_k_many: scores per product block (64 MB of float32), and how far below a row's cut a
# float32 score may be and still be scored exactly (a product's rounding is ~1e-6 at 256-384
# dimensions; batched and single products round differently, the exact scores do not).
_BLOCK_CELLS = 1 << 24
_MARGIN = 1e-4


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._matrix: Matrix = np.zeros((_START_ROWS, dim), dtype=np.float32)
        self._alive = np.zeros(_START_ROWS, dtype=bool)
        self._type_codes = np.zeros(_START_ROWS, dtype=np.int32)
        self._rows: dict[str, int] = {}
        self._names: list[str | None] = []
        self._keys: list[bytes | None] = []  # the text key each row's vector was made from
        self._free: list[int] = []
        self._codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def text_key(self, name: str) -> bytes | None:
        """The text key of `name`'s current vector, or None if it has none."""
        with self._lock:
            row = self._rows.get(name)
            return None if row is None else self._keys[row]

    def vector(self, name: str) -> Matrix | None:
        with self._lock:
            row = self._rows.get(name)
            return None if row is None else self._matrix[row].copy()

    def set_many(self, items: Sequence[tuple[str, str, bytes, Matrix]]) -> None:
        """(name, type, text key, vector) for each entity: its row replaced or added."""
        with self._lock:
            for name, entity_type, key, vector in items:
                row = self._rows.get(name)
                if row is None:
                    row = self._new_row()
                    self._rows[name] = row
                    self._names[row] = name
                self._matrix[row] = vector
                self._keys[row] = key
                self._alive[row] = True
                code = self._codes.get(entity_type)
                if code is None:
                    code = self._codes[entity_type] = len(self._codes)
                self._type_codes[row] = code

    def remove_many(self, names: Sequence[str]) -> None:
        with self._lock:
            for name in names:
                row = self._rows.pop(name, None)
                if row is not None:
                    self._alive[row] = False
                    self._names[row] = None
                    self._keys[row] = None
                    self._free.append(row)

    def top_k(
        self,
        query: Matrix,
        k: int,
        *,
        types: Callable[[str], bool] | None = None,
        min_similarity: float = -1.0,
    ) -> list[tuple[str, float]]:
        """The `k` rows most similar to `query` (cosine, as rows are normalised) with at least
        `min_similarity`, among entities whose type `types` accepts; by similarity
        descending, then name."""
        with self._lock:
            used = len(self._names)
            if used == 0 or k <= 0:
                return []
            scores = self._matrix[:used] @ np.asarray(query, dtype=np.float32)
            # Rows left out get -inf rather than being gathered out: at 1,000,000 rows the
            # product is the cost, and every extra pass over a gathered copy adds to it.
            if self._free:
                scores[~self._alive[:used]] = -np.inf
            if types is not None:
                codes = [code for t, code in self._codes.items() if types(t)]
                scores[~np.isin(self._type_codes[:used], np.array(codes, dtype=np.int32))] = -np.inf
            if used > k:
                kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
                # Ties at the k-th score are kept whole so the name order below decides.
                least = max(float(kth), min_similarity)
            else:
                least = min_similarity
            candidates = np.flatnonzero(scores >= np.float32(least))
            found = [(self._names[row], float(scores[row])) for row in candidates.tolist()]
        ranked = [(name, score) for name, score in found if name is not None]
        ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        return ranked[:k]

    def top_k_many(
        self,
        queries: Matrix,
        k: int,
        *,
        types: Sequence[Callable[[str], bool] | None],
        min_similarity: float = -1.0,
    ) -> list[list[tuple[str, float]]]:
        """For each query row, the `k` rows most similar to it with at least
        `min_similarity`, among entities whose type its `types` entry accepts (None: any);
        by similarity descending, then name. The similarities are exact (the stored rows'
        dot products, rounded once), so an answer does not depend on which queries share a
        batch: queries that accept the same types share float32 products over those types'
        rows only (a block of queries each), which pick the candidates (argpartition per
        query, with a margin below the cut); only those are scored exactly."""
        answers: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
        with self._lock:
            used = len(self._names)
            if used == 0 or k <= 0 or not answers:
                return answers
            exact_queries = np.asarray(queries, dtype=np.float64)
            for rows, members in self._groups(types, used):
                # Every row may be found: the matrix itself, no gathered copy.
                among = self._matrix[:used] if rows is None else self._matrix[rows]
                if len(among) == 0:
                    continue
                block = max(1, _BLOCK_CELLS // len(among))
                for first in range(0, len(members), block):
                    part = members[first : first + block]
                    scores = np.asarray(queries[part], dtype=np.float32) @ among.T
                    for at, row_scores in zip(part, scores, strict=True):
                        local = self._candidates(row_scores, k, min_similarity)
                        # Products of float32 values are exact in float64, and fsum rounds
                        # their sum once: the same score whichever rows were scored alongside.
                        products = among[local].astype(np.float64) * exact_queries[at]
                        found = rows[local] if rows is not None else local
                        answers[at] = self._ranked(
                            found, map(math.fsum, products), k, min_similarity
                        )
        return answers

    def _groups(
        self, types: Sequence[Callable[[str], bool] | None], used: int
    ) -> list[tuple[Rows | None, list[int]]]:
        """The queries grouped by the rows they may find (alive, of an accepted type; None:
        every row), each group with those rows."""
        by_key: dict[tuple[int, ...] | None, list[int]] = {}
        for at, accepts in enumerate(types):
            key = (
                None
                if accepts is None
                else tuple(code for name, code in self._codes.items() if accepts(name))
            )
            by_key.setdefault(key, []).append(at)
        alive = self._alive[:used] if self._free else None
        groups = []
        for key, members in by_key.items():
            if key is None:
                mask = alive
            else:
                mask = np.isin(self._type_codes[:used], np.array(key, dtype=np.int32))
                mask = mask if alive is None else mask & alive
            groups.append((None if mask is None else np.flatnonzero(mask), members))
        return groups

    def _ranked(
        self, rows: Rows, scores: Iterable[float], k: int, min_similarity: float
    ) -> list[tuple[str, float]]:
        found = [
            (name, score)
            for row, score in zip(rows.tolist(), scores, strict=True)
            if score >= min_similarity and (name := self._names[row]) is not None
        ]
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:k]

    @staticmethod
    def _candidates(scores: Matrix, k: int, min_similarity: float) -> Rows:
        """The indexes whose float32 score may put them among the exact top `k`."""
        floor = np.float32(min_similarity - _MARGIN)
        above = np.flatnonzero(scores >= floor)
        if len(above) <= k:
            return above
        kept = scores[above]
        kth = kept[np.argpartition(-kept, k - 1)[k - 1]]
        return above[kept >= max(floor, np.float32(kth - _MARGIN))]

    def _new_row(self) -> int:
        if self._free:
            return self._free.pop()
        row = len(self._names)
        if row == self._matrix.shape[0]:
            grown = row * 2
            self._matrix = np.resize(self._matrix, (grown, self.dim))
            self._matrix[row:] = 0.0
            self._alive = np.concatenate((self._alive, np.zeros(row, dtype=bool)))
            self._type_codes = np.concatenate((self._type_codes, np.zeros(row, dtype=np.int32)))
        self._names.append(None)
        self._keys.append(None)
        return row
