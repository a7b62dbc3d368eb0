"""DecayColumns: the FamilyIndex's decay inputs as arrays, one slot per entity or relation.

A new day's decay run changes every decayed value: computed one element at a time that is
400,000 Python calls on a 100k-entity graph (seconds). Kept here as columns (value as
written, reference time, rate class, exempt, alive, value as shown), a run's values are one
vectorised `decayed_column` call, and what follows from them (counts below a threshold,
changed values, ends held by a strong edge) are array operations. The index keeps the columns
in step with its entries: a slot per key, never reused (a name keeps its slot through deletion
and re-creation, so a relation's end slots stay valid).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventstore.events import DecayApplied
from projections.graph_decay import decayed_column

if TYPE_CHECKING:
    # numpy is imported when columns are first made (an index's build): a server that never
    # builds the graph family's index never loads it (projections.graph_decay says why).
    import numpy as np
    import numpy.typing as npt

__all__ = ["DecayColumns"]

K = TypeVar("K", bound=Hashable)
_FIRST_CAPACITY = 1024


class DecayColumns(Generic[K]):
    """Slots of one kind of element. `entries[slot]` is the index's entry (None: not alive).

    Columns: `base` (as written), `reference` (ms), `rate_class` (index into the rates a run
    gives, see `decayed`), `exempt`, `alive`, `shown` (the entry's decayed value), and for
    relations `ends` (the entity slots of from and to) and `current` (not superseded)."""

    def __init__(self) -> None:
        self._slots: dict[K, int] = {}
        self.keys: list[K] = []
        self.entries: list[Any] = []
        import numpy as np  # noqa: PLC0415 (see the imports)

        n = _FIRST_CAPACITY
        self.base: npt.NDArray[np.float64] = np.zeros(n, dtype=np.float64)
        self.reference: npt.NDArray[np.int64] = np.zeros(n, dtype=np.int64)
        self.rate_class: npt.NDArray[np.intp] = np.zeros(n, dtype=np.intp)
        self.exempt: npt.NDArray[np.bool_] = np.zeros(n, dtype=np.bool_)
        self.alive: npt.NDArray[np.bool_] = np.zeros(n, dtype=np.bool_)
        self.current: npt.NDArray[np.bool_] = np.zeros(n, dtype=np.bool_)
        self.shown: npt.NDArray[np.float64] = np.zeros(n, dtype=np.float64)
        self.ends: npt.NDArray[np.intp] = np.zeros((n, 2), dtype=np.intp)

    def _grow(self) -> None:
        """Twice the capacity (amortised: a slot costs O(1))."""
        self.base = _doubled(self.base)
        self.reference = _doubled(self.reference)
        self.rate_class = _doubled(self.rate_class)
        self.exempt = _doubled(self.exempt)
        self.alive = _doubled(self.alive)
        self.current = _doubled(self.current)
        self.shown = _doubled(self.shown)
        self.ends = _doubled(self.ends)

    @property
    def size(self) -> int:
        """Slots in use (alive or not): every column's meaningful length."""
        return len(self.keys)

    def slot(self, key: K) -> int:
        """The key's slot, allocated (not alive) on first use."""
        found = self._slots.get(key)
        if found is not None:
            return found
        found = self._slots[key] = len(self.keys)
        if found >= len(self.base):
            self._grow()
        self.keys.append(key)
        self.entries.append(None)
        return found

    def slots_of(self, keys: Sequence[K]) -> npt.NDArray[np.intp]:
        """The slots of keys that have one (a KeyError otherwise), as an array."""
        import numpy as np  # noqa: PLC0415 (see the imports)

        return np.fromiter(map(self._slots.__getitem__, keys), dtype=np.intp, count=len(keys))

    def put(
        self,
        key: K,
        entry: Any,
        *,
        base: float,
        reference: int,
        rate_class: int,
        exempt: bool,
        shown: float,
        current: bool = False,
        ends: tuple[int, int] = (0, 0),
    ) -> None:
        """The key's element is alive with these inputs."""
        slot = self.slot(key)
        self.entries[slot] = entry
        self.base[slot] = base
        self.reference[slot] = reference
        self.rate_class[slot] = rate_class
        self.exempt[slot] = exempt
        self.alive[slot] = True
        self.current[slot] = current
        self.shown[slot] = shown
        self.ends[slot] = ends

    def extend(
        self,
        keys: Sequence[K],
        entries: Sequence[Any],
        *,
        base: Sequence[float],
        reference: Sequence[int],
        rate_class: Sequence[int],
        exempt: Sequence[bool],
        shown: Sequence[float],
        current: Sequence[bool] | None = None,
        ends: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        """`put` for many keys never seen before, in one go (an index's build)."""
        start, count = len(self.keys), len(keys)
        while start + count > len(self.base):
            self._grow()
        self._slots.update(zip(keys, range(start, start + count), strict=True))
        self.keys.extend(keys)
        self.entries.extend(entries)
        taken = slice(start, start + count)
        self.base[taken] = base
        self.reference[taken] = reference
        self.rate_class[taken] = rate_class
        self.exempt[taken] = exempt
        self.alive[taken] = True
        self.shown[taken] = shown
        if current is not None:
            self.current[taken] = current
        if ends is not None and count:
            self.ends[taken] = ends

    def remove(self, key: K) -> None:
        slot = self._slots.get(key)
        if slot is not None:
            self.entries[slot] = None
            self.alive[slot] = False

    def decayed(self, run: DecayApplied | None, class_rates: Sequence[float | None]) -> Any:
        """Every slot's value under `run` (not alive slots too: masked by the caller)."""
        n = self.size
        return decayed_column(
            self.base[:n],
            self.reference[:n],
            self.rate_class[:n],
            class_rates,
            run=run,
            exempt=self.exempt[:n],
        )


A = TypeVar("A", bound="np.generic")


def _doubled(column: npt.NDArray[A]) -> npt.NDArray[A]:
    import numpy as np  # noqa: PLC0415 (see the imports)

    grown = np.zeros((2 * len(column), *column.shape[1:]), dtype=column.dtype)
    grown[: len(column)] = column
    return grown
