"""Which writers of a plain prefix's checkpoints run: the compiled ones, or their Python twins.

projections/_prefix_write.c writes the graph's packed occurrences and the conflicts model's
whole snapshot straight from a PrefixGraph's columns, and finds each relation key's rows, the
same bytes and rows as the Python code in projections.graph._prefix and
projections.prefix_conflicts (tests/property/test_prefix_write.py runs both against the
fold). The package's build compiles it when it can (hatch_build.py); without it, or with
GRAPHMEM_PURE_PYTHON=1 in the environment when this is first imported (so that one install
can measure and test both), the Python twins run.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from projections.accelerators import accelerator

__all__ = ["COMPILED", "Writers", "writers"]


class Writers(Protocol):
    """The compiled module's functions (projections/_prefix_write.c)."""

    # A projections.graph.PrefixGraph (not imported: the graph package imports this module).
    def conflicts_snapshot(self, graph: Any, /) -> bytes: ...

    def pack_occurrences(
        self, contents: list[str], order: Any, ends: Any, stamps: tuple[Any, Any, Any], /
    ) -> tuple[bytes, list[bytes]]: ...

    def key_rows(self, sources: Any, targets: Any, types: list[str], /) -> tuple[bytes, bytes]: ...


COMPILED: Writers | None = cast(Writers | None, accelerator("_prefix_write"))
"""The compiled writers, or None where the Python ones run by default."""


def writers(compiled: bool | None) -> Writers | None:
    """The compiled writers to use (None: the Python ones), as `compiled` asks: None the
    default, False the Python ones, True the compiled ones even under GRAPHMEM_PURE_PYTHON=1
    (ImportError if they are not built)."""
    if compiled is None:
        return COMPILED
    if not compiled:
        return None
    from projections import _prefix_write  # noqa: PLC0415 (asked for by a comparison)

    return _prefix_write
