"""The optional C accelerators (hatch_build.EXTENSIONS): loaded if built, else None.

Each has a pure-Python twin that gives the same results; the package's build compiles them
where it can. GRAPHMEM_PURE_PYTHON=1 in the environment when a module asks makes it None too,
so one install can measure and test both paths.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["accelerator"]


def accelerator(name: str) -> ModuleType | None:
    """The compiled module `projections.<name>`, or None where its Python twin is to run (not
    built: no compiler at install; or GRAPHMEM_PURE_PYTHON=1)."""
    if os.environ.get("GRAPHMEM_PURE_PYTHON") == "1":
        return None
    try:
        return importlib.import_module(f"projections.{name}")
    except ImportError:
        return None
