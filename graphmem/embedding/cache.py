"""Vectors persisted in the data dir, keyed by (embedder id, sha256 of the embed text).

A separate LMDB file (`embeddings.lmdb`) next to the log, never the log itself: embeddings are
derived data, not events. An unchanged entity is never embedded twice, across restarts and
rebuilds, and switching embedders back and forth keeps both sets. It is a cache: writes are
not synced (a crash costs re-embedding the last few entities, never the log's integrity), and
a cache that cannot be opened or grown leaves the service running from memory, with a
warning, rather than refusing to serve.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import lmdb
import numpy as np
import structlog

from graphmem.embedding.embedders import Matrix

__all__ = ["CACHE_FILE", "VectorCache"]

log = structlog.get_logger(__name__)

CACHE_FILE = "embeddings.lmdb"
_START_MAP = 64 << 20
_MAX_MAP = 1 << 40


class VectorCache:
    """get/put of float32 vectors of one dimension; thread-safe (one lock)."""

    def __init__(self, path: Path | None, embedder_id: str, dim: int) -> None:
        self.path = path
        self._prefix = embedder_id.encode() + b"\0"
        self._dim = dim
        self._lock = threading.Lock()
        self._env: lmdb.Environment | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._env = lmdb.open(
                    str(path),
                    subdir=False,
                    map_size=_START_MAP,
                    sync=False,
                    metasync=False,
                    max_dbs=0,
                )
            except (lmdb.Error, OSError) as problem:
                log.warning("embedding_cache_unavailable", path=str(path), error=str(problem))

    @property
    def persistent(self) -> bool:
        return self._env is not None

    def get_many(self, keys: Sequence[bytes]) -> list[Matrix | None]:
        """The cached vector of each text key, or None."""
        env = self._env
        if env is None:
            return [None] * len(keys)
        found: list[Matrix | None] = []
        with self._lock, env.begin(buffers=False) as txn:
            for key in keys:
                raw = txn.get(self._prefix + key)
                if raw is None or len(raw) != self._dim * 4:
                    found.append(None)
                else:
                    found.append(np.frombuffer(raw, dtype=np.float32).copy())
        return found

    def put_many(self, items: Iterable[tuple[bytes, Matrix]]) -> None:
        env = self._env
        if env is None:
            return
        rows = [
            (self._prefix + key, np.ascontiguousarray(v, np.float32).tobytes()) for key, v in items
        ]
        if not rows:
            return
        with self._lock:
            while True:
                try:
                    with env.begin(write=True) as txn:
                        for key, value in rows:
                            txn.put(key, value)
                    return
                except lmdb.MapFullError:
                    size = env.info()["map_size"] * 2
                    if size > _MAX_MAP:
                        log.warning("embedding_cache_full", path=str(self.path))
                        return
                    env.set_mapsize(size)
                except lmdb.Error as problem:
                    log.warning("embedding_cache_write_failed", error=str(problem))
                    return

    def close(self) -> None:
        with self._lock:
            if self._env is not None:
                self._env.close()
                self._env = None
