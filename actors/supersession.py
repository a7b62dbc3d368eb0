"""Supersession (contract §5): which current sibling edges a dated write closes, and whether
the written edge itself is already over. Pure; the graph tools' decide functions call it.

A write of `S -[T]-> O` with `valid_at` V looks at the other current edges `S -[T]-> X`
(X != O). Those valid from before V, or with no date, close at V. Those valid from after V
stay current: the write recorded a past fact, which was over when the earliest of them began,
so the written edge is closed then (upstream closed every sibling whatever the dates, so an
old fact recorded late killed the newer one). Without V, or for a type in the never-supersede
set (one source holds many targets at once), nothing closes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from projections.naming import NEVER_SUPERSEDE_RELATION_TYPES

__all__ = ["Sibling", "Supersession", "supersede"]


@dataclass(frozen=True)
class Sibling:
    """A current edge from the same source with the same type to another target."""

    to_entity: str
    valid_at: int | None


@dataclass(frozen=True)
class Supersession:
    """What a write does to validity: siblings to close (each at `closed_at`) and, when the
    write was `dated` (gave valid_at), the written edge's own `invalid_at` (None: current, so a
    dated write re-opens a superseded edge). An undated write leaves the edge's window as it
    is (§5.3: re-asserting a superseded edge without valid_at keeps it closed)."""

    dated: bool = False
    closed: tuple[str, ...] = ()
    closed_at: int | None = None
    invalid_at: int | None = None


def supersede(
    relation_type: str, valid_at: int | None, siblings: Iterable[Sibling]
) -> Supersession:
    """The supersession a write of `relation_type` valid from `valid_at` causes among the
    current `siblings` (the written target itself must not be among them)."""
    if valid_at is None:
        return Supersession()
    if relation_type in NEVER_SUPERSEDE_RELATION_TYPES:
        return Supersession(dated=True)
    closed: list[str] = []
    later: list[int] = []
    for sibling in siblings:
        if sibling.valid_at is not None and sibling.valid_at > valid_at:
            later.append(sibling.valid_at)
        else:
            closed.append(sibling.to_entity)
    return Supersession(
        dated=True,
        closed=tuple(closed),
        closed_at=valid_at if closed else None,
        invalid_at=min(later) if later else None,
    )
