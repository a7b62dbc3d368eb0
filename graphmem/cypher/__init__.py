"""graph_cypher (issue 19): read-only Cypher over a projection of the graph held by a
supervised LadybugDB worker process, an optional extra (`graphmem[cypher]`).

- `gate`: the lexical gate (first read-only layer) and the Neo4j label rewrite (pure);
- `rows`: the projection's rows read from the graph, and what committed events touch (pure);
- `worker`: the worker process, the only importer of the engine (engine and process layers);
- `engine`: the service side of one worker: spawn, frames, deadlines, kill;
- `service`: keeps the worker's projection current and answers queries.

This module stays light: the worker process imports it too.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version

__all__ = ["INSTALL_HINT", "available"]

INSTALL_HINT = "pip install 'graphmem[cypher]'"


def available() -> bool:
    """Whether the extra is installed: LadybugDB 0.22 (PyPI `ladybug`; older or other
    packages install a module of the same name) and pyarrow. Nothing is imported."""
    try:
        found = version("ladybug")
    except PackageNotFoundError:
        return False
    return found.startswith("0.22.") and importlib.util.find_spec("pyarrow") is not None
