"""Decayed values (contract §6): what confidence and weight read as after the decay runs.

Decay is never materialised element by element. Each run is one DecayApplied event `{at,
rates, rate, edge_rate, floor}`; an element with stored value `base` and reference time `L`
(an entity's last_seen, an edge's last_confirmed) reads as

    days  = floor((D - L) / 24 h)          D: the newest run's `at`, if at or after L
    value = max(floor, base * rate ** days)  (base itself when days < 1 or no run applies)

with the rates of that newest run. Only the newest run matters, so the result is the same
however often decay ran (upstream re-applied the whole elapsed time at every run), and it is
order-independent: the runs are a set, the newest is a max. A touch (a write that confirms the
element) computes the decayed value at its origin and writes the new base and reference as
absolute values, so decay always counts from the last real touch.

Entities whose subtype is `rule` (permanent preferences) never decay, nor do edges touching
one. Values are rounded to 6 places after each computation, like every stored weight.

`decayed_column` is the same formula over arrays (every element of a graph at once, for a new
run's report and the FamilyIndex), equal to `decayed` bit for bit: the powers are math.pow's,
one per (rate, day count); the product, floor and cap are IEEE operations numpy does alike; and
rounding to 6 places is done as Python's `round` does it (the nearest double to the decimal
rounded half to even), by `rint` except where the product is within reach of a half, which
goes through `round` itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from eventstore.events import DecayApplied
from projections.graph_time import DAY_MS

if TYPE_CHECKING:
    # numpy (~15 MiB, 0.2-0.4 s to import) is imported by the column functions that use it:
    # the scalar functions here are loaded by every server, the graph family served or not.
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]

__all__ = [
    "EXEMPT_SUBTYPE",
    "decayed",
    "decayed_column",
    "entity_rate",
    "newest_run",
    "round6_column",
]

EXEMPT_SUBTYPE = "rule"
_DECIMALS = 6
# Runs written before rates were recorded carry only `rate`; their floor and edge rate:
_DEFAULT_FLOOR = 0.01
_SCALE = 1e6  # 10 ** _DECIMALS
# A power table per (rate class, day count) when it is this small; else one per pair present.
_DENSE_POWERS = 1 << 17
# Past 2**52 a double has no fraction: rint's input must stay below it to round the product.
_EXACT_INTEGERS = float(1 << 52)


def newest_run(runs: Iterable[DecayApplied]) -> DecayApplied | None:
    """The run with the latest `at` (ties: any; equal `at` with other rates is not produced
    by one node, and across nodes the fold's stamp order is kept by the caller's list)."""
    newest: DecayApplied | None = None
    for run in runs:
        if newest is None or run.at >= newest.at:
            newest = run
    return newest


def entity_rate(run: DecayApplied, entity_type: str) -> float:
    """The run's daily rate for an entity type (case-insensitive), else its default."""
    return run.rates.get(entity_type.casefold(), run.rate)


def decayed(base: float, reference_ms: int, run: DecayApplied | None, rate: float) -> float:
    """`base` after `run` (the newest decay run) at daily `rate`, counting from
    `reference_ms`; `base` itself when no run is at least a whole day after the reference."""
    if run is None or run.at < reference_ms:
        return base
    days = (run.at - reference_ms) // DAY_MS
    if days < 1:
        return base
    floor = _DEFAULT_FLOOR if run.floor is None else run.floor
    value = round(max(floor, base * math.pow(rate, days)), _DECIMALS)
    return min(base, value)  # decay never raises a value (one already below the floor stays)


def decayed_column(
    base: Floats,
    reference_ms: Ints,
    rate_class: npt.NDArray[np.intp],
    class_rates: Sequence[float | None],
    *,
    run: DecayApplied | None,
    exempt: npt.NDArray[np.bool_],
) -> Floats:
    """`decayed` over arrays: element i is `decayed(base[i], reference_ms[i], run, r)` with
    r = class_rates[rate_class[i]] (None: no decay), or base[i] where `exempt[i]`."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    out = base.copy()
    if run is None or len(base) == 0:
        return out
    days = (run.at - reference_ms) // DAY_MS  # negative when the run is before the reference
    has_rate = np.array([r is not None for r in class_rates], dtype=np.bool_)
    chosen = np.flatnonzero((days >= 1) & ~exempt & has_rate[rate_class])
    if chosen.size == 0:
        return out
    floor = _DEFAULT_FLOOR if run.floor is None else run.floor
    bases = base[chosen]
    powers = _powers(rate_class[chosen], days[chosen], class_rates)
    value = round6_column(np.maximum(bases * powers, floor))
    out[chosen] = np.minimum(bases, value)  # decay never raises a value
    return out


def _powers(
    classes: npt.NDArray[np.intp], days: Ints, class_rates: Sequence[float | None]
) -> Floats:
    """math.pow(rate of the class, days) per element, computed once per distinct pair."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    low, high = int(days.min()), int(days.max())
    span = high - low + 1
    if len(class_rates) * span <= _DENSE_POWERS:
        table = np.array(
            [
                [math.pow(rate, d) if rate is not None else 1.0 for d in range(low, high + 1)]
                for rate in class_rates
            ],
            dtype=np.float64,
        ).reshape(len(class_rates), span)
        return table[classes, days - low]
    pairs = classes.astype(np.int64) * span + (days - low)
    distinct, where = np.unique(pairs, return_inverse=True)
    found = np.array(
        [math.pow(class_rates[int(p // span)] or 1.0, int(p % span) + low) for p in distinct],
        dtype=np.float64,
    )
    powers: Floats = found[where.reshape(-1)]
    return powers


def round6_column(values: Floats) -> Floats:
    """`round(v, 6)` for every v, exactly: rint(v * 1e6) / 1e6 is the nearest double to the
    rounded decimal unless v * 1e6 (itself rounded) lies too near a half to say which way the
    exact product goes; those few go through `round`."""
    import numpy as np  # noqa: PLC0415 (see the imports)

    scaled = values * _SCALE
    out: Floats = np.rint(scaled) / _SCALE
    magnitude = np.abs(scaled)
    near_half = np.abs(scaled - np.floor(scaled) - 0.5) <= 1e-9 * np.maximum(1.0, magnitude)
    for i in np.flatnonzero(near_half | (magnitude >= _EXACT_INTEGERS) | ~np.isfinite(scaled)):
        out[i] = round(float(values[i]), _DECIMALS)
    return out
