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
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from eventstore.events import DecayApplied
from projections.graph_time import DAY_MS

__all__ = [
    "EXEMPT_SUBTYPE",
    "decayed",
    "entity_rate",
    "newest_run",
]

EXEMPT_SUBTYPE = "rule"
_DECIMALS = 6
# Runs written before rates were recorded carry only `rate`; their floor and edge rate:
_DEFAULT_FLOOR = 0.01


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
