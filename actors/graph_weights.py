"""The graph family's weight arithmetic (contract §2, §4): clamping, rounding, re-assert, boost,
weaken and the prune comparison. Pure; the graph tools' decide functions call these.

Every stored weight and confidence is rounded to 6 places after each computation, and
comparisons use the rounded values, so `0.35 - 0.3` is stored and compared as `0.05`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "DECIMALS",
    "Clamped",
    "below_prune_threshold",
    "boosted",
    "clamp_unit",
    "raised_confidence",
    "reasserted",
    "rounded",
    "weakened",
]

DECIMALS = 6


def rounded(value: float) -> float:
    """A weight or confidence as stored: 6 decimal places."""
    return round(value, DECIMALS)


@dataclass(frozen=True)
class Clamped:
    """An input weight brought into [0, 1], and the warning to show when it had to be."""

    value: float
    warning: str | None = None


def clamp_unit(value: float, what: str = "weight") -> Clamped:
    """`value` clamped to [0, 1] and rounded, with `"<what> 1.4 clamped to 1.0"` when moved.
    A value that is not a finite number is the caller's error to report, never clamped."""
    if not math.isfinite(value):
        raise ValueError(f"{what} {value!r} is not a number in [0, 1]")
    inside = rounded(min(max(value, 0.0), 1.0))
    if min(max(value, 0.0), 1.0) == value:
        return Clamped(inside)
    return Clamped(inside, f"{what} {value!r} clamped to {inside!r}")


def reasserted(current: float, given: float, mention_boost: float) -> float:
    """An existing edge written again (the confidence-max rule): a higher given weight replaces
    it ("explicit evidence"); otherwise, equal weights included, it gains the mention boost,
    never past 1.0 (upstream let an edge at 1.0 become 1.05)."""
    current, given = rounded(current), rounded(given)
    if given > current:
        return given
    return rounded(min(1.0, current + mention_boost))


def boosted(current: float, amount: float) -> float:
    """graph_boost: up by `amount`, at most 1.0."""
    return rounded(min(1.0, current + amount))


def weakened(current: float, amount: float) -> float:
    """graph_weaken: down by `amount`, at least 0.0."""
    return rounded(max(0.0, current - amount))


def below_prune_threshold(weight: float, threshold: float) -> bool:
    """Whether prune removes an edge of this weight: strictly below the threshold. weaken's
    `pruned` flag must use this very comparison (upstream flagged <= and pruned <, so an edge
    at exactly the threshold was reported pruned and never removed)."""
    return rounded(weight) < rounded(threshold)


def raised_confidence(current: float, evidence: float) -> float:
    """An entity's confidence after a write names it: never lowered by a write (only decay
    lowers it)."""
    return rounded(max(current, evidence))
