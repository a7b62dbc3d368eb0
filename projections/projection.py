"""Projection: what every checkpointed read model is, and the one list of them.

A projection folds envelopes in log order into a read model (pure, no I/O), knows the
position of the last one folded, and captures itself as a snapshot whose format is its
`version`. The actors keep every registered projection current, checkpoint it, restore it,
rebuild it and read it as of a past position (actors.read_models); adding a read model that
should be checkpointed means adding it to REGISTERED, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol, Self

from eventstore.events import Envelope
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection

__all__ = ["REGISTERED", "Projection", "Registered", "registered"]


class Projection(Protocol):
    """A read model folded from the log and checkpointed beside it.

    `name` keys its checkpoints; `version` is its snapshot format (bump it on any change to
    what a log folds to or to the snapshot layout: a checkpoint of another version is never
    taken for a current one); `readable_versions` are earlier versions whose snapshots
    `from_snapshot` still reads (the fold changed, the layout did not), served only until a
    rebuild replaces them. Folding is idempotent per position: envelopes at or before
    `position` are never handed to it again.
    """

    name: ClassVar[str]
    version: ClassVar[int]
    readable_versions: ClassVar[frozenset[int]]

    @property
    def position(self) -> int:
        """The position of the last envelope folded (0: none)."""
        ...

    def apply_all(self, envelopes: Iterable[Envelope]) -> None: ...

    def to_snapshot(self) -> bytes:
        """The complete fold state: restored by `from_snapshot`, it folds on exactly as this."""
        ...

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> Self:
        """The projection `to_snapshot` captured; raises ValueError if `data` is not one."""
        ...


@dataclass(frozen=True)
class Registered:
    """A checkpointed projection and how the writer keeps it: `lazy` ones are restored and
    folded on their first use after a change (neither start-up nor a query that does not
    read them pays for them); the others with every commit."""

    projection: type[Projection]
    lazy: bool = False

    @property
    def name(self) -> str:
        # Read when used, not when defined: a test may stand in for another version.
        return self.projection.name


REGISTERED: tuple[Registered, ...] = (
    Registered(GraphProjection),
    Registered(SchemaProjection),
    # Folding it costs as much as the graph's: only once a query reads it.
    Registered(ConflictsProjection, lazy=True),
)
"""Every checkpointed read model, in the order they are saved and rebuilt. The first is the
anchor: the others are restored at or before its checkpoint and brought level with it."""


def registered(name: str) -> Registered:
    """The registered projection called `name`; ValueError naming those there are."""
    for entry in REGISTERED:
        if entry.name == name:
            return entry
    known = ", ".join(entry.name for entry in REGISTERED)
    raise ValueError(f"no projection named {name}: there are {known}")
