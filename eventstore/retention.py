"""Retention: which checkpoints of a projection a save keeps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Retention"]


@dataclass(frozen=True)
class Retention:
    """Which checkpoints of a projection to keep: the newest, plus at most one per `spacing`
    positions (the first in each interval), thinned to `keep` in all so that the kept ones
    stay spread evenly over the log: every position then has one at most about
    last_position / (keep - 1) events before it."""

    spacing: int = 100_000
    keep: int = 8

    def __post_init__(self) -> None:
        if self.spacing < 1 or self.keep < 1:
            raise ValueError("spacing and keep must be at least 1")

    def kept(self, positions: Iterable[int]) -> list[int]:
        """The positions to keep, ascending."""
        ordered = sorted(set(positions))
        if not ordered:
            return []
        newest = ordered[-1]
        kept: dict[int, int] = {}
        for position in ordered[:-1]:
            kept.setdefault(position // self.spacing, position)
        chosen = [*kept.values(), newest]
        while len(chosen) > self.keep:
            # Drop the one whose two neighbours are closest together (position 0, the log's
            # start, counts as a neighbour): the largest gap left grows the least.
            gaps = [chosen[i + 1] - (chosen[i - 1] if i else 0) for i in range(len(chosen) - 1)]
            del chosen[gaps.index(min(gaps))]
        return chosen
