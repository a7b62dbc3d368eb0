"""The keys of a restored graph's visible relations, listed from the restore's columns.

A restore leaves its relation records unkeyed (projections.graph._records GraphState.keyed):
keying them for a whole-graph answer kept a key tuple and a dict slot per relation for as long
as the process ran (116 bytes a relation: 110 MiB at 1M). A whole-graph answer lists them
from the columns instead, each time, a slice at a time (GraphProjection.relation_keys_read):
projections/_restored_keys.c in one pass (a read_graph at 50k ~4 ms more CPU than from the
keyed dict, of ~65), else the Python twin here (the same list, ~25 ms more at 50k;
tests/property/test_restored_keys.py runs both). GRAPHMEM_PURE_PYTHON=1 when this is first
imported makes the twin run.
"""

from __future__ import annotations

from array import array
from typing import Any, Protocol, cast

from projections.accelerators import accelerator

__all__ = ["COMPILED", "Lister", "listed_keys"]

Key = tuple[str, str, str]


class Lister(Protocol):
    """The compiled module's function (projections/_restored_keys.c)."""

    def listed_keys(self, records: tuple[Any, ...], columns: Any, /) -> list[Key]: ...


COMPILED: Lister | None = cast(Lister | None, accelerator("_restored_keys"))
"""The compiled lister, or None where the Python twin runs by default."""


def listed_keys(
    records: tuple[Any, ...], columns: Any, *, compiled: bool | None = None
) -> list[Key]:
    """(names[from_entities[r.row]], names[to_entities[r.row]], strings[relation_types[r.row]])
    for each record `r` that is visible, in order, where the others are attributes of
    `columns` (a restore's projections.graph._records.RestoredColumns: not imported, as the
    graph package imports this module); compiled or not as `compiled` asks (None: the
    default, True: the compiled one, ImportError if it is not built)."""
    lister: Lister | None = COMPILED if compiled is None else None
    if compiled:
        from projections import _restored_keys  # noqa: PLC0415 (asked for by a comparison)

        lister = _restored_keys
    if lister is not None:
        return lister.listed_keys(records, columns)
    names: tuple[str, ...] = columns.names
    strings: tuple[str, ...] = columns.strings
    from_entities: array[int] = columns.from_entities
    to_entities: array[int] = columns.to_entities
    relation_types: array[int] = columns.relation_types
    rows = [record.row for record in records if record.visible]
    return list(
        zip(
            map(names.__getitem__, map(from_entities.__getitem__, rows)),
            map(names.__getitem__, map(to_entities.__getitem__, rows)),
            map(strings.__getitem__, map(relation_types.__getitem__, rows)),
            strict=True,
        )
    )
