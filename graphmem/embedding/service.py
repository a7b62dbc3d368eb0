"""The embedding service: keeps every alive entity's vector current, off the writer's thread.

The writer hands committed envelopes to its subscribers on its own thread; this service's
subscriber only notes which entities they touched (a set insertion) and wakes a worker
thread, which reads those entities' embed texts (a short read on the writer), takes vectors
from the cache where the (embedder id, text hash) is known and embeds the rest in small
batches. A slow embedder therefore never delays a write: the write is answered, and searches
report the entities still waiting (`pending`). At start the worker lists every entity into
the same dirty set, so the start-up scan goes in the same small reads (with a warm cache, a
cache read, never a re-embedding): no read of the whole graph's texts holds the writer. A read
that fails (the writer busy past the request bound: a due decay run at 1,000,000 entities
takes minutes) puts its names back and is retried after a pause, so nothing is dropped and
`pending` never reads 0 before every entity has a vector.

The API other code uses (graph_search, graph_reembed, merge suggestions): `embed_query`,
`vector_of`, `similar`, `similar_many`, `pending`, `reembed`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import structlog

from actors.subscribers import Published
from graphmem.embedding.cache import CACHE_FILE, VectorCache
from graphmem.embedding.embedders import Embedder, Matrix
from graphmem.embedding.text import EntityText, entity_texts, text_key, touched
from graphmem.embedding.vectors import VectorIndex
from projections.graph import GraphProjection
from projections.graph_family import type_filter

__all__ = ["EmbeddingService", "GraphRead", "Reembedded"]

log = structlog.get_logger(__name__)

T = TypeVar("T")
# Runs a read of the graph (on the writer, as the gateway's blocking reads do) and returns it.
GraphRead = Callable[[Callable[[GraphProjection], T]], T]

# Entities embedded per batch: small enough that a change waits behind few others and the
# vectors land (and `pending` falls) as the work goes.
EMBED_BATCH = 64
# Names taken from the dirty set per read of the graph.
READ_BATCH = 2048
WAKE_SECONDS = 1.0
STOP_SECONDS = 10.0
# Pauses after a failed read or store, doubling up to the last: the writer may be busy for
# minutes, and a read that keeps failing must not spin.
RETRY_SECONDS = (1.0, 2.0, 5.0, 15.0, 60.0)


@dataclass(frozen=True)
class Reembedded:
    embedded: int
    skipped: int
    errors: int


class EmbeddingService:
    def __init__(self, embedder: Embedder, read: GraphRead[object], cache: VectorCache) -> None:
        self.embedder = embedder
        self.cache = cache
        self.vectors = VectorIndex(embedder.dim)
        self._read = read
        self._cond = threading.Condition()
        self._dirty: set[str] = set()
        self._working = 0  # entities taken from the dirty set, not yet done
        self._listed = False  # the start-up list of every entity is in the dirty set
        self._failures = 0  # failed reads in a row: how long the next pause is
        self._stopping = False
        self._work = threading.Lock()  # one pass at a time: the worker's or graph_reembed's
        self._thread = threading.Thread(target=self._run, name="graphmem-embedder", daemon=True)

    @classmethod
    def in_data_dir(
        cls, embedder: Embedder, read: GraphRead[object], data_dir: Path | None
    ) -> EmbeddingService:
        path = None if data_dir is None else data_dir / CACHE_FILE
        return cls(embedder, read, VectorCache(path, embedder.id, embedder.dim))

    @property
    def name(self) -> str:
        return self.embedder.name

    # --- life -------------------------------------------------------------------------------

    def start(self, subscribe: Callable[[Callable[[Published], None]], None]) -> None:
        """Subscribe to committed envelopes, then scan every entity on the worker thread.
        Subscribing first: a write between the two is seen by one or the other, never lost.
        Nothing here waits on the writer: start-up never fails because it is busy."""
        subscribe(self.on_published)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(STOP_SECONDS)
        if self._thread.is_alive():
            log.warning("embedding_worker_still_running")  # a daemon: it cannot hold the exit
            return
        self.cache.close()

    def on_published(self, published: Published) -> None:
        """The writer's thread: note the touched entities and wake the worker, nothing more."""
        names = touched(published.envelopes)
        if names:
            with self._cond:
                self._dirty |= names
                self._cond.notify()

    # --- the API ----------------------------------------------------------------------------

    def pending(self) -> int:
        """Entities whose vector may not be current yet (new, changed, or not scanned); at
        least 1 until the start-up scan has listed the entities. (A search reads the graph
        first, and the worker's listing was asked of the writer before any search could be,
        so a search sees the full count unless the listing had to be retried.)"""
        with self._cond:
            return len(self._dirty) + self._working + (0 if self._listed else 1)

    def wait_idle(self, timeout: float) -> bool:
        """Tests and benches: wait (bounded) until nothing is pending; whether it got there."""
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            with self._cond:
                while self._dirty or self._working or not self._listed:
                    if deadline.is_set():
                        return False
                    self._cond.wait(min(WAKE_SECONDS, timeout))
                return True
        finally:
            timer.cancel()

    def embed_query(self, text: str) -> Matrix:
        vector: Matrix = self.embedder.embed([text])[0]
        return vector

    def vector_of(self, name: str) -> Matrix | None:
        """The vector of entity `name` if it has been embedded (its current one or, while it
        is pending, its previous one), else None."""
        return self.vectors.vector(name)

    def similar(
        self,
        vector: Matrix,
        k: int,
        *,
        entity_types: Iterable[str] | None = None,
        min_similarity: float = -1.0,
    ) -> list[tuple[str, float]]:
        """The `k` embedded entities most similar to `vector` (cosine), of `entity_types` if
        given (canonical types case-insensitively, as the read tools filter), with at least
        `min_similarity`; by similarity descending, then name. The caller checks that they
        are still alive if it reads the graph at a later point."""
        types = None if entity_types is None else type_filter(entity_types)
        return self.vectors.top_k(vector, k, types=types, min_similarity=min_similarity)

    def similar_many(
        self,
        vectors: Matrix,
        k: int,
        *,
        entity_types: Sequence[str | None],
        min_similarity: float = -1.0,
    ) -> list[list[tuple[str, float]]]:
        """`similar` for each row of `vectors` at once (row i of the type `entity_types[i]`,
        None: any), with exact similarities: one matrix product per block of rows
        (merge suggestions' 200 seeds), not a product each."""
        filters = [None if t is None else type_filter([t]) for t in entity_types]
        return self.vectors.top_k_many(vectors, k, types=filters, min_similarity=min_similarity)

    def reembed(self, *, force: bool) -> Reembedded:
        """graph_reembed: every alive entity whose vector is missing or stale (all: `force`),
        now, on the caller's thread; the worker waits meanwhile."""
        with self._work:
            alive, gone = self._read_texts(None)
            self.vectors.remove_many(gone)
            return self._update(alive, force=force)

    # --- the worker -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._list_all():
            if not self._pause():
                return
        while True:
            with self._cond:
                while not self._dirty and not self._stopping:
                    self._cond.wait(WAKE_SECONDS)
                if self._stopping:
                    return
                names = [self._dirty.pop() for _ in range(min(READ_BATCH, len(self._dirty)))]
                self._working = len(names)
            failed = False
            try:
                self._pass(names)
                self._failures = 0
            except Exception:  # a failed read or store: the names wait for the next try
                log.exception("embedding_pass_failed", entities=len(names))
                failed = True
            finally:
                with self._cond:
                    if failed:
                        self._dirty.update(names)
                    self._working = 0
                    self._cond.notify_all()
            if failed and not self._pause():
                return

    def _list_all(self) -> bool:
        """The start-up scan: every entity into the dirty set. Whether it was read."""
        try:
            names = self._read_any(lambda graph: list(graph.entity_names()))
        except Exception:
            log.exception("embedding_scan_deferred")
            return False
        with self._cond:
            self._dirty.update(names)
            self._listed = True
            self._cond.notify_all()
        self._failures = 0
        return True

    def _pause(self) -> bool:
        """Wait before retrying a failed read; False when stopping meanwhile."""
        seconds = RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS) - 1)]
        self._failures += 1
        with self._cond:
            self._cond.wait_for(lambda: self._stopping, seconds)
            return not self._stopping

    def _pass(self, names: Sequence[str]) -> None:
        # The lock is taken per batch (in _update), not for the pass, so graph_reembed never
        # waits for a whole pass of the semantic model.
        alive, gone = self._read_texts(names)
        self.vectors.remove_many(gone)
        with self._cond:
            self._working = len(alive)
        self._update(alive, force=False, counting=True)

    def _read_texts(self, names: Sequence[str] | None) -> tuple[list[EntityText], list[str]]:
        return self._read_any(lambda graph: entity_texts(graph, names))

    def _read_any(self, query: Callable[[GraphProjection], T]) -> T:
        return self._read(query)  # type: ignore[return-value]

    def _update(
        self, alive: list[EntityText], *, force: bool, counting: bool = False
    ) -> Reembedded:
        """Bring `alive`'s vectors up to date: current ones are skipped, cached ones loaded
        (also skipped: their embedding exists), the rest embedded (all of them: `force`).
        `counting`: the worker's pass, which `pending` follows as it goes."""
        keys = [text_key(text) for _, _, text in alive]
        vectors = self.vectors
        todo = [
            i for i, entry in enumerate(alive) if force or vectors.text_key(entry[0]) != keys[i]
        ]
        skipped = len(alive) - len(todo)
        if not force and todo:
            cached = self.cache.get_many([keys[i] for i in todo])
            hits = [(i, v) for i, v in zip(todo, cached, strict=True) if v is not None]
            vectors.set_many([(alive[i][0], alive[i][1], keys[i], v) for i, v in hits])
            skipped += len(hits)
            todo = [i for i, v in zip(todo, cached, strict=True) if v is None]
        if counting:
            with self._cond:
                self._working = len(todo)
                self._cond.notify_all()
        embedded = errors = 0
        for start in range(0, len(todo), EMBED_BATCH):
            chunk = todo[start : start + EMBED_BATCH]
            if counting:  # the worker: one batch at a time under the lock (see _pass)
                with self._work:
                    # graph_reembed may have embedded some of them meanwhile.
                    fresh = [i for i in chunk if vectors.text_key(alive[i][0]) != keys[i]]
                    done, failed = self._embed_batch(alive, keys, fresh)
            else:  # graph_reembed, which holds the lock for its whole run
                done, failed = self._embed_batch(alive, keys, chunk)
            embedded += done
            errors += failed
            self._done(len(chunk), counting)
        return Reembedded(embedded, skipped, errors)

    def _embed_batch(
        self, alive: list[EntityText], keys: list[bytes], chunk: list[int]
    ) -> tuple[int, int]:
        """Embed, cache and index `chunk`; how many were embedded and how many failed."""
        if not chunk:
            return 0, 0
        made, failed = self._embed([alive[i][2] for i in chunk])
        stored = [
            (alive[i][0], alive[i][1], keys[i], made[j])
            for j, i in enumerate(chunk)
            if j not in failed
        ]
        self.cache.put_many((key, vector) for _, _, key, vector in stored)
        self.vectors.set_many(stored)
        if failed:
            log.warning("entities_not_embedded", count=len(failed))
        return len(stored), len(failed)

    def _done(self, count: int, counting: bool) -> None:
        if counting and count:
            with self._cond:
                self._working = max(0, self._working - count)
                self._cond.notify_all()

    def _embed(self, texts: list[str]) -> tuple[Matrix, set[int]]:
        """Vectors for `texts` and the indexes that failed (an error, or not a finite vector):
        a failing batch is retried text by text so one bad text fails alone."""
        try:
            vectors = self.embedder.embed(texts)
        except Exception:
            log.exception("embedding_batch_failed", texts=len(texts))
            vectors = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
            failed: set[int] = set()
            for i, text in enumerate(texts):
                try:
                    vectors[i] = self.embedder.embed([text])[0]
                except Exception:
                    failed.add(i)
            return vectors, failed | self._not_finite(vectors)
        return vectors, self._not_finite(vectors)

    def _not_finite(self, vectors: Matrix) -> set[int]:
        bad = ~np.isfinite(vectors).all(axis=1)
        return set(np.flatnonzero(bad).tolist())
