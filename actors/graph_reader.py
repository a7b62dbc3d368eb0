"""GraphReader: what deciding a command reads of the graph.

The graph projection satisfies it, and so does a WorkingGraph (the projection plus the events a
command or transaction has decided so far), so one decide function serves a single command
and each step of a transaction alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from eventstore.events import DecayApplied
from projections.graph import EntityAttributes, EntityView, RelationDetails, RelationView
from projections.naming import NameLookup, Resolution

__all__ = ["GraphReader"]


class GraphReader(Protocol):
    def has_entity(self, name: str) -> bool: ...

    def entity(self, name: str) -> EntityView | None: ...

    def entity_type(self, name: str) -> str | None: ...

    def observations(self, name: str) -> list[str]: ...

    def has_relation(self, from_entity: str, to_entity: str, relation_type: str) -> bool: ...

    def relation(
        self, from_entity: str, to_entity: str, relation_type: str
    ) -> RelationView | None: ...

    def relations_of(self, name: str) -> list[RelationView]:
        """Visible relations with `name` at either end, in creation order."""
        ...

    def relations_of_any(self, names: Iterable[str]) -> list[RelationView]:
        """Visible relations touching any of `names`, each once, in creation order."""
        ...

    # --- the graph family's attributes and naming (contract graph-memory §3-4) ---

    def entity_attributes(self, name: str) -> EntityAttributes | None: ...

    def relation_details(
        self, from_entity: str, to_entity: str, relation_type: str
    ) -> RelationDetails | None: ...

    def name_lookup(self) -> NameLookup: ...

    def resolve_name(self, reference: str) -> Resolution: ...

    def decay_runs(self) -> list[DecayApplied]: ...
