"""Building the FamilyIndex: at once for a one-shot read (`family_index`), or a step at a
time on a served writer (FamilyIndexBuild), whose last part, the assembly, may run on a
thread of its own."""

from __future__ import annotations

from typing import Any

from eventstore.events import DecayApplied, ObservationAdded, ObservationDeleted
from projections.graph import GraphProjection
from projections.graph_family._entries import (
    ENTITY_EVENTS,
    RELATION_EVENTS,
    DerivedEntries,
    EntityEntry,
    RelationEntry,
    RelationKey,
    entity_entry,
    relation_entry,
)
from projections.graph_family._index import FamilyIndex
from projections.graph_family._values import Reading

__all__ = [
    "FamilyIndexBuild",
    "FamilyIndexBuildingError",
    "family_index",
    "family_index_built",
]


def family_index(graph: GraphProjection) -> FamilyIndex:
    """The graph's FamilyIndex, built on first use and brought up to date. While a
    FamilyIndexBuild is under way (a server builds it a step at a time), raises
    FamilyIndexBuildingError rather than building it all in this call: at 1,000,000 entities
    that took ~210 s, past any request's bound."""
    found = graph.followed_by()
    if isinstance(found, FamilyIndexBuild):
        raise FamilyIndexBuildingError(found.done, found.total)
    index = graph.follower(FamilyIndex, lambda _: FamilyIndex(graph))
    index.refresh()
    return index


def family_index_built(graph: GraphProjection) -> bool:
    """Whether the graph's FamilyIndex is built (a family read answers without building it)."""
    return isinstance(graph.followed_by(), FamilyIndex)


class FamilyIndexBuildingError(Exception):
    """A family read arrived while the FamilyIndex is being built in steps: retry shortly."""

    def __init__(self, done: int, total: int) -> None:
        self.done = done
        self.total = total
        share = f", {done * 100 // total}%" if total else ""
        super().__init__(
            f"the graph family's index is being built ({done:,} of {total:,} entities and "
            f"relations{share}) after the server started; graph reads answer once it is "
            "done: retry in a few seconds"
        )


class FamilyIndexBuild:
    """A FamilyIndex built `step` by `step` (a bounded number of entities or relations each),
    so that the writer answers other requests in between instead of stopping for minutes.
    Once every entry is derived, `assemble` makes the index from them (tallies, columns,
    sorted orders: pure work over the entries, ~a minute at 1,000,000 entities, so a server
    runs it off the writer's thread) and `install` hands it to the graph on the writer.

    It holds the graph's follower slot meanwhile: the fold tells it what each event touches,
    and what was touched is left out here and re-derived by the index's first refresh, like
    any change after a build. A read that builds the index at once (one-shot commands,
    which never start a stepped build) takes the slot: the next step then finds itself
    displaced and gives up.
    """

    def __init__(self, graph: GraphProjection) -> None:
        self.graph = graph
        self.reading = Reading(graph)
        self._names = graph.entity_names()
        self._keys: list[RelationKey] | None = None
        self._at = 0  # the next name, then the next key
        self.entries: list[EntityEntry] = []
        self.relations: dict[RelationKey, RelationEntry] = {}
        self._rules: set[str] = set()
        self.touched_names: set[str] = set()
        self.touched_keys: set[RelationKey] = set()
        self.decay_touched = False
        self.done = 0
        self.total = len(self._names) + graph.relation_count()

    def folded(self, event: Any) -> None:
        kind = type(event)
        if kind is ObservationAdded or kind is ObservationDeleted:
            self.touched_names.add(event.entity)
        elif kind in ENTITY_EVENTS:
            self.touched_names.add(event.name)
        elif kind in RELATION_EVENTS:
            self.touched_keys.add((event.from_entity, event.to_entity, event.relation_type))
        elif kind is DecayApplied:
            self.decay_touched = True

    @property
    def displaced(self) -> bool:
        return self.graph.followed_by() is not self

    def step(self, budget: int) -> bool:
        """Derive up to `budget` more entries; whether every entry is derived (False once
        displaced: there is nothing left to do for this build)."""
        if self.displaced:
            return False
        if self._keys is None:
            budget = self._entity_step(budget)
            if self._keys is None:
                return False
        keys = self._keys
        graph, run, rules = self.graph, self.reading.run, self._rules
        end = min(len(keys), self._at + budget)
        for key in keys[self._at : end]:
            if key not in self.touched_keys:  # re-derived by the first refresh
                relation = relation_entry(graph, key, run, rules)
                if relation is not None:
                    self.relations[key] = relation
        self.done += end - self._at
        self._at = end
        return end == len(keys)

    def assemble(self) -> FamilyIndex:
        """The index from the derived entries. It reads neither the graph nor anything the
        fold changes (the entries are done; the fold only adds to the touched sets, which
        `install` reads), so it may run on another thread while the writer goes on."""
        return FamilyIndex(self.graph, DerivedEntries(self.reading, self.entries, self.relations))

    def install(self, index: FamilyIndex) -> FamilyIndex | None:
        """On the writer: `index` (from `assemble`) becomes the graph's follower, with what
        the fold touched since the build began left dirty for its first refresh; None if
        this build was displaced meanwhile (the index is then for nothing)."""
        if self.displaced:
            return None
        index.adopt_touched(self.touched_names, self.touched_keys, self.decay_touched)
        return self.graph.follower(FamilyIndex, lambda _: index)  # takes this build's slot

    def finish(self) -> FamilyIndex | None:
        """Assemble and install here and now (no writer to spare: tests, one thread)."""
        return self.install(self.assemble())

    def _entity_step(self, budget: int) -> int:
        """Entries for up to `budget` names; what is left of the budget."""
        names = self._names
        end = min(len(names), self._at + budget)
        reading = self.reading
        for name in names[self._at : end]:
            if name not in self.touched_names:  # deleted or changed since: re-derived later
                entry = entity_entry(reading, name)
                self.entries.append(entry)
                if entry.rule:
                    self._rules.add(name)
        self.done += end - self._at
        left = budget - (end - self._at)
        self._at = end
        if end == len(names):
            self._keys = self.graph.relation_keys()
            self._at = 0
            self.total = self.done + len(self._keys)
        return left
