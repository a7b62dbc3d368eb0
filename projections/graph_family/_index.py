"""FamilyIndex: the graph family's derived index over one GraphProjection, kept by the fold.

Scanning 100,000 entities and 300,000 edges per call costs far more than the family's latency
targets, so what the reads need is kept here instead: per alive entity its type, tokens,
decayed confidence and last_seen (for keyword search, listings and staleness), per visible
relation its type and decayed weight, and the tallies graph_stats reports (entities and edges
by type, the weight sum, degrees for orphans, CONTRADICTS edges).

It is built on the first read that needs it (`family_index(graph)`), like the projection's name
indexes, and never in snapshots. From then on the fold tells it which names and relation keys
each event touches (one set insertion), and the next read re-derives just those entries. A
decay run changes every decayed value, so a new newest run recomputes those (once per
run, never per read) over the DecayColumns the index keeps beside its entries (one vectorised
pass; entries keep the values as written and are updated in place where the shown value
moved). Reads go through `refresh()` first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import numpy as np
from sortedcontainers import SortedList

from eventstore.events import (
    DecayApplied,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    Stamp,
)
from eventstore.hlc import ms_of
from projections.graph import GraphProjection
from projections.graph_decay import EXEMPT_SUBTYPE, newest_run
from projections.graph_family._columns import DecayColumns
from projections.graph_family._directories import DirectoryIndex
from projections.graph_family._tokens import TokenIndex, entity_tokens
from projections.graph_family._values import Reading, decayed_confidence, decayed_weight
from projections.naming import fold_name, slug

__all__ = [
    "CONTRADICTS",
    "EntityEntry",
    "FamilyIndex",
    "FamilyIndexBuild",
    "FamilyIndexBuildingError",
    "IndexListener",
    "family_index",
    "family_index_built",
    "is_contradiction",
]

RelationKey = tuple[str, str, str]
T = TypeVar("T")
L = TypeVar("L", bound="IndexListener")
CONTRADICTS = "CONTRADICTS"
# What re-deriving an entity found changed (see FamilyIndex._set_entity).
_LIFE = 2
_RULE = 1
PROJECT_TYPE = "project"
_MICRO = 1_000_000
# graph_build_context's top hubs (contract §8.21): at least 3 current edges above 0.3.
HUB_DEGREE = 3
HUB_MIN_WEIGHT = 0.3
_ENTITY_EVENTS = (EntityCreated, EntityUpdated, EntityDeleted)
_OBSERVATION_EVENTS = (ObservationAdded, ObservationDeleted)
_RELATION_EVENTS = (RelationCreated, RelationUpdated, RelationDeleted)


def is_contradiction(relation_type: str) -> bool:
    """CONTRADICTS as graph_relate writes it, or as another family spelt it."""
    return relation_type.upper() == CONTRADICTS


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
        elif kind in _ENTITY_EVENTS:
            self.touched_names.add(event.name)
        elif kind in _RELATION_EVENTS:
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
                relation = _relation_entry(graph, key, run, rules)
                if relation is not None:
                    self.relations[key] = relation
        self.done += end - self._at
        self._at = end
        return end == len(keys)

    def assemble(self) -> FamilyIndex:
        """The index from the derived entries. It reads neither the graph nor anything the
        fold changes (the entries are done; the fold only adds to the touched sets, which
        `install` reads), so it may run on another thread while the writer goes on."""
        return FamilyIndex(self.graph, self)

    def install(self, index: FamilyIndex) -> FamilyIndex | None:
        """On the writer: `index` (from `assemble`) becomes the graph's follower, with what
        the fold touched since the build began left dirty for its first refresh; None if
        this build was displaced meanwhile (the index is then for nothing)."""
        if self.displaced:
            return None
        index.adopt_touched(self)
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
                entry = _entity_entry(reading, name)
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


class IndexListener(Protocol):
    """A derived index over the FamilyIndex (FamilyIndex.listener)."""

    def touched(self, names: set[str], *, everything: bool) -> None:
        """`names` changed (entry, liveness or relations); `everything`: a new decay run."""


# Entries are not frozen: a new decay run sets the shown value of every entry it moves in
# place (a new object per entry costs seconds on a large graph). Nothing else changes one.
@dataclass(slots=True, eq=False)
class EntityEntry:
    """What the index keeps of an alive entity."""

    name: str
    entity_type: str
    tokens: frozenset[str]
    folded: frozenset[str]  # its name and aliases, folded (the "equals the query" rank)
    base_confidence: float  # as written
    confidence: float  # as shown: decayed by the index's run
    last_seen: int
    rule: bool
    directory: str | None  # a Project's `directory` property
    created: Stamp  # its latest creation: a newer one hides the relations made before it
    session: str | None = None  # its `source_session` property (graph_validate's scope)


@dataclass(slots=True, eq=False)
class RelationEntry:
    """What the index keeps of a visible relation."""

    key: RelationKey
    weight: float  # as written
    last_confirmed: int
    exempt: bool  # touches a rule entity
    shown: float  # as shown: decayed by the index's run
    current: bool  # not superseded (invalid_at unset)
    unresolved: bool | None  # a CONTRADICTS edge: whether it is unresolved; else None
    ingested_at: int = 0
    session: str | None = None  # its source_session (graph_validate's scope)

    @property
    def weight_micro(self) -> int:
        """`shown` in millionths: sums stay exact (derived: a run sets only `shown`)."""
        return round(self.shown * _MICRO)


class FamilyIndex:
    """Derived entries and tallies over one projection (see the module docstring).

    Two halves: the entities' (built with the index) and the relations' (built by the first
    read that needs a relation tally, so search and listings never pay for 300,000 edges).
    """

    def __init__(self, graph: GraphProjection, built: FamilyIndexBuild | None = None) -> None:
        """`built`: the entries a FamilyIndexBuild derived in steps (what was touched
        meanwhile is added by `adopt_touched` when it is installed); without it, derived
        here at once."""
        self._graph = graph
        self._dirty_entities: set[str] = set()
        self._dirty_relations: set[RelationKey] = set()
        self._decay_dirty = False
        self._relations: dict[RelationKey, RelationEntry] | None = None
        # Bumped whenever a read re-derives something: answers derived from the whole index
        # (graph_validate, graph_communities, build context's rankings) are kept until it moves.
        self.generation = 0
        self._derived: dict[Any, tuple[int, Any]] = {}
        self._listeners: dict[str, IndexListener] = {}
        if built is None:
            self._build_entities(Reading(graph), None)
            return
        self._build_entities(built.reading, built.entries)
        self._adopt_relations(built.relations)

    def adopt_touched(self, built: FamilyIndexBuild) -> None:
        """What the fold touched while `built` derived and assembled this index: re-derived
        by the first refresh, like any change after a build."""
        self._dirty_entities |= built.touched_names
        self._dirty_relations |= built.touched_keys
        self._decay_dirty = self._decay_dirty or built.decay_touched

    # --- told by the fold ---------------------------------------------------------------

    def folded(self, event: Any) -> None:
        kind = type(event)
        if kind is ObservationAdded or kind is ObservationDeleted:
            self._dirty_entities.add(event.entity)
        elif kind in _ENTITY_EVENTS:
            self._dirty_entities.add(event.name)
        elif kind in _RELATION_EVENTS:
            if self._relations is not None:
                key = (event.from_entity, event.to_entity, event.relation_type)
                self._dirty_relations.add(key)
        elif kind is DecayApplied:
            self._decay_dirty = True

    # --- building and catching up -------------------------------------------------------

    def _build_entities(self, reading: Reading, built: list[EntityEntry] | None) -> None:
        graph = self._graph
        self.run = reading.run
        self._entities: dict[str, EntityEntry] = {}
        self.entities_by_type: Counter[str] = Counter()
        self._names_by_type: dict[str, set[str]] = {}
        self._projects: dict[str, str] = {}
        self._directories: DirectoryIndex | None = None
        self.forget_contradictions()
        self._stale_threshold: float | None = None
        self._stale: SortedList[tuple[int, str]] = SortedList()
        self._entity_columns: DecayColumns[str] = DecayColumns()
        self._type_classes: dict[str, int] = {}  # entity type -> its rate class
        self._relation_columns: DecayColumns[RelationKey] | None = None
        entries = (
            built
            if built is not None
            else [_entity_entry(reading, name) for name in graph.entity_names()]
        )
        for entry in entries:
            self._entities[entry.name] = entry
            self._count_entity(entry, 1)
        classes = self._type_classes
        self._entity_columns.extend(
            [e.name for e in entries],
            entries,
            base=[e.base_confidence for e in entries],
            reference=[e.last_seen for e in entries],
            rate_class=[classes.setdefault(e.entity_type, len(classes)) for e in entries],
            exempt=[e.rule for e in entries],
            shown=[e.confidence for e in entries],
        )
        self._tokens = TokenIndex.of((e.name, e.tokens) for e in entries)
        # By confidence (listings), built on first use: a new day's run moves every entry.
        self._by_confidence: SortedList[tuple[float, str]] | None = None
        self._type_confidences: dict[str, SortedList[float]] = {}
        self._by_last_seen: SortedList[tuple[int, str]] = SortedList(
            (-e.last_seen, e.name) for e in entries
        )
        self._by_name: SortedList[str] = SortedList(e.name for e in entries)
        # graph_build_context's recent additions: (first_seen, name), oldest first.
        self._by_first_seen: SortedList[tuple[int, str]] = SortedList(
            (ms_of(e.created[0]), e.name) for e in entries
        )

    def _column_entity(self, entry: EntityEntry) -> None:
        rate_class = self._type_classes.setdefault(entry.entity_type, len(self._type_classes))
        self._entity_columns.put(
            entry.name,
            entry,
            base=entry.base_confidence,
            reference=entry.last_seen,
            rate_class=rate_class,
            exempt=entry.rule,
            shown=entry.confidence,
        )

    def _column_relation(self, entry: RelationEntry) -> None:
        assert self._relation_columns is not None
        slot = self._entity_columns.slot
        source, target, _ = entry.key
        self._relation_columns.put(
            entry.key,
            entry,
            base=entry.weight,
            reference=entry.last_confirmed,
            rate_class=0,
            exempt=entry.exempt,
            shown=entry.shown,
            current=entry.current,
            ends=(slot(source), slot(target)),
        )

    def _confidence_order(self) -> SortedList[tuple[float, str]]:
        """Alive names by confidence descending, then name (and, per type, the confidences),
        built on first use after a run moved most entries: names in order, then a stable
        sort of their confidences (one C sort instead of 100,000 tuple comparisons)."""
        if self._by_confidence is not None:
            return self._by_confidence
        columns = self._entity_columns
        names = list(self._by_name)
        slots = columns.slots_of(names)
        negated = -columns.shown[slots]
        order = np.argsort(negated, kind="stable")
        values = negated[order].tolist()
        self._by_confidence = SortedList(
            zip(values, map(names.__getitem__, order.tolist()), strict=True)
        )
        classes = columns.rate_class[slots]
        self._type_confidences = {}
        for entity_type, rate_class in self._type_classes.items():
            of_type = np.sort(negated[classes == rate_class])
            if of_type.size:
                self._type_confidences[entity_type] = SortedList(of_type.tolist())
        return self._by_confidence

    def _relation_half(self) -> dict[RelationKey, RelationEntry]:
        if self._relations is not None:
            return self._relations
        graph = self._graph
        rules = {name for name, entry in self._entities.items() if entry.rule}
        run = self.run
        relations: dict[RelationKey, RelationEntry] = {}
        for key in graph.relation_keys():
            relation = _relation_entry(graph, key, run, rules)
            if relation is not None:
                relations[key] = relation
        return self._adopt_relations(relations)

    def _adopt_relations(
        self, relations: dict[RelationKey, RelationEntry]
    ) -> dict[RelationKey, RelationEntry]:
        """The relations' half from its entries: tallies, sorted structures, hubs."""
        self._relations = relations
        self.edges_by_type: Counter[str] = Counter()
        self._weight_micro = 0
        self._degree: Counter[str] = Counter()
        self._contradictions: dict[RelationKey, bool] = {}
        self._unresolved = 0
        self._relation_columns = DecayColumns()
        for relation in relations.values():
            self._count_relation(relation, 1)
        entries = list(relations.values())
        slot = self._entity_columns.slot
        self._relation_columns.extend(
            list(relations),
            entries,
            base=[r.weight for r in entries],
            reference=[r.last_confirmed for r in entries],
            rate_class=[0] * len(entries),
            exempt=[r.exempt for r in entries],
            shown=[r.shown for r in entries],
            current=[r.current for r in entries],
            ends=[(slot(r.key[0]), slot(r.key[1])) for r in entries],
        )
        self._ingested: SortedList[tuple[int, RelationKey]] = SortedList(
            (entry.ingested_at, key) for key, entry in self._relations.items()
        )
        self._count_hubs()
        return self._relations

    def _count_hubs(self) -> None:
        """Hub degrees (current edges shown above HUB_MIN_WEIGHT) from scratch, in bulk."""
        assert self._relations is not None
        self._hub_degree: Counter[str] = Counter()
        for entry in self._relations.values():
            for name in _hub_ends(entry):
                self._hub_degree[name] += 1
        self._hubs: SortedList[tuple[int, str]] = SortedList(
            (-degree, name) for name, degree in self._hub_degree.items() if degree >= HUB_DEGREE
        )

    def _track_relation(self, entry: RelationEntry, sign: int) -> None:
        """The sorted structures a relation is in (kept one by one after the bulk build)."""
        if sign > 0:
            self._ingested.add((entry.ingested_at, entry.key))
        else:
            self._ingested.discard((entry.ingested_at, entry.key))
        if _hub_ends(entry):
            self._hub_step(entry.key, sign)

    def _hub_step(self, key: RelationKey, sign: int) -> None:
        """A current relation's ends gain (lose) one hub edge."""
        source, target, _ = key
        for name in (source,) if source == target else (source, target):
            old = self._hub_degree[name]
            new = old + sign
            if old >= HUB_DEGREE:
                self._hubs.discard((-old, name))
            if new >= HUB_DEGREE:
                self._hubs.add((-new, name))
            if new:
                self._hub_degree[name] = new
            else:
                del self._hub_degree[name]

    def refresh(self) -> None:
        """Re-derive what the events folded since the last read touched."""
        if self._decay_dirty:
            self._decay_dirty = False
            run = newest_run(self._graph.decay_runs())
            if run is not self.run:
                self.generation += 1
                self._decay(run)
                for listener in self._listeners.values():
                    listener.touched(set(), everything=True)
        if not self._dirty_entities and not self._dirty_relations:
            return
        self.generation += 1
        reading = Reading(self._graph)
        names, self._dirty_entities = self._dirty_entities, set()
        keys, self._dirty_relations = self._dirty_relations, set()
        for name in names:
            change = self._set_entity(reading, name)
            if change and self._relations is not None:
                # Alive, created anew or rule-ness changed: its relations' visibility or
                # decay did too.
                keys.update(self._graph.incident_keys(name, hidden=True))
            if self._contradiction_items:
                self._forget_contradictions_of(name, life=change is _LIFE)
        if self._relations is not None:
            rules = {name for name in _ends(keys) if (e := self._entities.get(name)) and e.rule}
            for key in keys:
                self._set_relation(key, rules)
            if self._contradiction_items or self.contradiction_answers:
                for key in keys:
                    if is_contradiction(key[2]):
                        self._forget_contradiction(key)
        if self._listeners:
            touched = names | _ends(keys)
            for listener in self._listeners.values():
                listener.touched(touched, everything=False)

    def listener(self, key: str, build: Callable[[], L]) -> L:
        """The index's listener under `key`, built on first use: an index of its own that is
        told, at each refresh, the entities whose entry or relations changed."""
        found = self._listeners.get(key)
        if found is None:
            found = self._listeners[key] = build()
        return cast(L, found)

    def _decay(self, run: DecayApplied | None) -> None:
        """Every decayed figure again, for a new newest run (what else is kept, stays): the
        values in one vectorised pass, then only the entries whose shown value moved."""
        self.run = run
        self._redecay_entities(run)
        if self._relations is not None:
            self._redecay_relations(run)

    def entity_rates(self, run: DecayApplied) -> list[float | None]:
        """The daily rate of each entity rate class (DecayColumns.rate_class) under `run`."""
        return [run.rates.get(t.casefold(), run.rate) for t in self._type_classes]

    def _redecay_entities(self, run: DecayApplied | None) -> None:
        columns = self._entity_columns
        n = columns.size
        new = columns.decayed(run, self.entity_rates(run) if run is not None else [])
        moved = np.flatnonzero(columns.alive[:n] & (new != columns.shown[:n]))
        # A few moved (a run later the same day): keep the sorted structures, move those.
        few = moved.size * 8 <= len(self._entities)
        entries = columns.entries
        for slot, value in zip(moved.tolist(), new[moved].tolist(), strict=True):
            entry = entries[slot]
            if few:
                self._reorder_entity(entry, value)
            entry.confidence = value
        columns.shown[:n] = new
        if not few:
            self._by_confidence = None
            self._type_confidences = {}
            self._stale_threshold = None  # rebuilt by the next stale() for its threshold
            self._stale = SortedList()

    def _reorder_entity(self, entry: EntityEntry, value: float) -> None:
        """Move an entry to its new confidence `value` in the structures ordered by it."""
        if self._by_confidence is not None:
            self._by_confidence.remove((-entry.confidence, entry.name))
            self._by_confidence.add((-value, entry.name))
            confidences = self._type_confidences[entry.entity_type]
            confidences.remove(-entry.confidence)
            confidences.add(-value)
        threshold = self._stale_threshold
        if threshold is not None:
            if entry.confidence < threshold:
                self._stale.discard((entry.last_seen, entry.name))
            if value < threshold:
                self._stale.add((entry.last_seen, entry.name))

    def _redecay_relations(self, run: DecayApplied | None) -> None:
        columns = self._relation_columns
        assert columns is not None
        n = columns.size
        new = columns.decayed(run, [run.edge_rate] if run is not None else [None])
        moved = np.flatnonzero(columns.alive[:n] & (new != columns.shown[:n]))
        old, fresh = columns.shown[moved], new[moved]
        micro = np.rint(fresh * _MICRO).astype(np.int64)  # round(weight * _MICRO), exactly
        self._weight_micro += int(micro.sum()) - int(np.rint(old * _MICRO).astype(np.int64).sum())
        crossed = columns.current[moved] & ((old > HUB_MIN_WEIGHT) != (fresh > HUB_MIN_WEIGHT))
        entries = columns.entries
        for slot, value in zip(moved.tolist(), fresh.tolist(), strict=True):
            entries[slot].shown = value
        for slot in moved[crossed].tolist():
            entry = entries[slot]
            self._hub_step(entry.key, 1 if entry.shown > HUB_MIN_WEIGHT else -1)
        columns.shown[:n] = new

    def _set_entity(self, reading: Reading, name: str) -> int:
        """Re-derive an entity's entry: _LIFE if it came, went or was created anew, _RULE if
        only its rule-ness changed, else 0."""
        old = self._entities.pop(name, None)
        if old is not None:
            self._forget_entity(old)
            self._entity_columns.remove(name)
        new = _entity_entry(reading, name) if self._graph.has_entity(name) else None
        if new is not None:
            self._entities[name] = new
            self._remember_entity(new)
            self._column_entity(new)
        if old is None or new is None:
            return 0 if old is new else _LIFE
        if old.created != new.created:
            return _LIFE
        return _RULE if old.rule is not new.rule else 0

    def _remember_entity(self, entry: EntityEntry) -> None:
        self._count_entity(entry, 1)
        self._tokens.add(entry.name, entry.tokens)
        if self._by_confidence is not None:
            self._by_confidence.add((-entry.confidence, entry.name))
            confidences = self._type_confidences.setdefault(entry.entity_type, SortedList())
            confidences.add(-entry.confidence)
        self._by_last_seen.add((-entry.last_seen, entry.name))
        self._by_name.add(entry.name)
        self._by_first_seen.add((ms_of(entry.created[0]), entry.name))

    def _forget_entity(self, entry: EntityEntry) -> None:
        self._count_entity(entry, -1)
        self._tokens.remove(entry.name, entry.tokens)
        if self._by_confidence is not None:
            self._by_confidence.remove((-entry.confidence, entry.name))
            confidences = self._type_confidences[entry.entity_type]
            confidences.remove(-entry.confidence)
            if not confidences:
                del self._type_confidences[entry.entity_type]
        self._by_last_seen.remove((-entry.last_seen, entry.name))
        self._by_name.remove(entry.name)
        self._by_first_seen.remove((ms_of(entry.created[0]), entry.name))

    def _count_entity(self, entry: EntityEntry, sign: int) -> None:
        self.entities_by_type[entry.entity_type] += sign
        names = self._names_by_type.setdefault(entry.entity_type, set())
        if sign > 0:
            names.add(entry.name)
        else:
            names.discard(entry.name)
            if not names:
                del self._names_by_type[entry.entity_type]
                del self.entities_by_type[entry.entity_type]
        if entry.directory is not None:
            if sign > 0:
                self._projects[entry.name] = entry.directory
            else:
                self._projects.pop(entry.name, None)
            self._directories = None
        threshold = self._stale_threshold
        if threshold is not None and entry.confidence < threshold:
            if sign > 0:
                self._stale.add((entry.last_seen, entry.name))
            else:
                self._stale.discard((entry.last_seen, entry.name))

    def _set_relation(self, key: RelationKey, rules: set[str]) -> None:
        relations = self._relation_half()
        old = relations.pop(key, None)
        columns = self._relation_columns
        assert columns is not None
        if old is not None:
            self._count_relation(old, -1)
            self._track_relation(old, -1)
            columns.remove(key)
        new = _relation_entry(self._graph, key, self.run, rules)
        if new is not None:
            relations[key] = new
            self._count_relation(new, 1)
            self._track_relation(new, 1)
            self._column_relation(new)

    def _count_relation(self, entry: RelationEntry, sign: int) -> None:
        from_entity, to_entity, relation_type = entry.key
        self.edges_by_type[relation_type] += sign
        if not self.edges_by_type[relation_type]:
            del self.edges_by_type[relation_type]
        self._weight_micro += sign * entry.weight_micro
        degree = self._degree
        degree[from_entity] += sign
        if not degree[from_entity]:
            del degree[from_entity]
        if to_entity != from_entity:
            degree[to_entity] += sign
            if not degree[to_entity]:
                del degree[to_entity]
        if entry.unresolved is not None:
            if sign > 0:
                self._contradictions[entry.key] = entry.unresolved
            else:
                self._contradictions.pop(entry.key, None)
            if entry.unresolved:
                self._unresolved += sign

    def derived(self, key: Any, compute: Callable[[], T]) -> T:
        """`compute()`, kept under `key` until the index next changes (its generation)."""
        kept = self._derived.get(key)
        if kept is not None and kept[0] == self.generation:
            return cast(T, kept[1])
        if len(self._derived) > 64:
            self._derived.clear()  # arguments vary: keep a bounded few
        value = compute()
        self._derived[key] = (self.generation, value)
        return value

    # --- reads: entities ----------------------------------------------------------------

    @property
    def entity_count(self) -> int:
        return len(self._entities)

    def entry(self, name: str) -> EntityEntry | None:
        return self._entities.get(name)

    def entries(self) -> Iterable[EntityEntry]:
        """Every alive entity's entry (read only)."""
        return self._entities.values()

    def stale(self, threshold: float, seen_before: int) -> int:
        """Entities whose confidence is below `threshold` and last_seen before `seen_before`."""
        if self._stale_threshold != threshold:
            self._stale_threshold = threshold
            columns = self._entity_columns
            n = columns.size
            found = np.flatnonzero(columns.alive[:n] & (columns.shown[:n] < threshold))
            keys = columns.keys
            self._stale = SortedList(
                zip(
                    columns.reference[found].tolist(),
                    [keys[i] for i in found.tolist()],
                    strict=True,
                )
            )
        return self._stale.bisect_left((seen_before, ""))

    def project_in(self, context: str) -> str | None:
        """The Project whose `directory` equals or contains `context`, else is the nearest
        parent folder of it (see DirectoryIndex)."""
        if self._directories is None:
            self._directories = DirectoryIndex(self._projects)
        return self._directories.find(context)

    def names_of_types(self, types: set[str]) -> set[str]:
        found: set[str] = set()
        for entity_type in types:
            found.update(self._names_by_type.get(entity_type, ()))
        return found

    def types_matching(self, matches: Any) -> set[str]:
        """The entity types present for which `matches(type)` holds."""
        return {t for t in self._names_by_type if matches(t)}

    def ordered(self, sort_by: str) -> Iterator[str]:
        """Alive names by confidence or last_seen (descending) or name; ties by name."""
        if sort_by == "confidence":
            return (name for _, name in self._confidence_order())
        if sort_by == "last_seen":
            return (name for _, name in self._by_last_seen)
        return iter(self._by_name)

    def count_confident(self, min_confidence: float, types: set[str] | None = None) -> int:
        """How many alive entities (of `types`, if given) have a confidence of at least
        `min_confidence`."""
        bound = math.nextafter(-min_confidence, math.inf)
        by_confidence = self._confidence_order()
        if types is None:
            return by_confidence.bisect_left((bound, ""))
        return sum(
            self._type_confidences[t].bisect_left(bound)
            for t in types
            if t in self._type_confidences
        )

    def confident(self, min_confidence: float) -> Iterator[str]:
        """Names with a confidence of at least `min_confidence`, most confident first."""
        bound = math.nextafter(-min_confidence, math.inf)
        for negated, name in self._confidence_order():
            if negated >= bound:
                return
            yield name

    def names_with_prefix(self, prefix: str) -> set[str]:
        return self._tokens.names_with_prefix(prefix)

    def names_with_token(self, token: str) -> frozenset[str] | set[str]:
        return self._tokens.names_with_token(token)

    def prefix_size(self, prefix: str, most_tokens: int) -> int | None:
        return self._tokens.prefix_size(prefix, most_tokens)

    def tokens_near(self, token: str, most_edits: int) -> dict[str, int]:
        return self._tokens.tokens_near(token, most_edits)

    def names_of_type(self, entity_type: str) -> frozenset[str] | set[str]:
        """The alive names of exactly `entity_type` (the index's own set: do not change it)."""
        return self._names_by_type.get(entity_type, frozenset())

    # --- reads: relations ---------------------------------------------------------------

    def entity_columns(self) -> DecayColumns[str]:
        """The alive entities' decay inputs and shown confidences, as arrays (read only)."""
        return self._entity_columns

    def relation_columns(self) -> DecayColumns[RelationKey]:
        """The visible relations' decay inputs, shown weights and end slots (read only)."""
        self._relation_half()
        assert self._relation_columns is not None
        return self._relation_columns

    def relation_entries(self) -> dict[RelationKey, RelationEntry]:
        """Every visible relation's entry, by key (read only)."""
        return self._relation_half()

    def forget_contradictions(self) -> None:
        """Drop every kept contradiction item and answer."""
        self.contradiction_answers: dict[bool, dict[str, Any]] = {}
        # graph_contradictions' items, by edge key, each kept until the edge, one of its ends,
        # or an entity sharing an end's slug (whose coming or going changes ids) changes: a
        # new contradiction among a thousand rebuilds one item, not a thousand.
        self._contradiction_items: dict[RelationKey, Any] = {}
        self._contradiction_keys_by_end: dict[str, set[RelationKey]] = {}
        self._contradiction_keys_by_slug: dict[str, set[RelationKey]] = {}

    def contradiction_item(self, key: RelationKey) -> Any:
        """The item kept for a contradiction edge (None: not kept)."""
        return self._contradiction_items.get(key)

    def remember_contradiction_item(self, key: RelationKey, item: Any) -> None:
        self._contradiction_items[key] = item
        for end in key[:2]:
            self._contradiction_keys_by_end.setdefault(end, set()).add(key)
            self._contradiction_keys_by_slug.setdefault(slug(end), set()).add(key)

    def remember_contradictions(self, include_resolved: bool, answer: dict[str, Any]) -> None:
        """Keep graph_contradictions' answer until any kept item is dropped."""
        self.contradiction_answers[include_resolved] = answer

    def _forget_contradiction(self, key: RelationKey) -> None:
        self.contradiction_answers.clear()
        if self._contradiction_items.pop(key, None) is not None:
            for end in key[:2]:
                self._contradiction_keys_by_end.get(end, set()).discard(key)
                self._contradiction_keys_by_slug.get(slug(end), set()).discard(key)

    def _forget_contradictions_of(self, name: str, *, life: bool) -> None:
        """Drop the items naming `name`; when it came or went, those of every entity sharing
        its slug too (their ids may change)."""
        keys = set(self._contradiction_keys_by_end.get(name, ()))
        if life:
            keys |= self._contradiction_keys_by_slug.get(slug(name), set())
        for key in keys:
            self._forget_contradiction(key)

    def degree(self, name: str) -> int:
        """How many visible relations touch `name` (current or superseded, either way; a
        self-loop once)."""
        self._relation_half()
        return self._degree.get(name, 0)

    @property
    def relation_count(self) -> int:
        return len(self._relation_half())

    def average_weight(self) -> float:
        relations = self._relation_half()
        if not relations:
            return 0.0
        return self._weight_micro / _MICRO / len(relations)

    def first_seen_between(self, since: int, until: int) -> tuple[int, Iterator[tuple[int, str]]]:
        """How many alive entities were first seen in [since, until], and their
        (first_seen, name), newest first (ties: name descending)."""
        found = self._by_first_seen
        low = found.bisect_left((since, ""))
        high = found.bisect_left((until + 1, ""))
        return high - low, found.islice(low, high, reverse=True)

    def ingested_between(self, since: int, until: int) -> int:
        """How many visible relations were ingested in [since, until]."""
        self._relation_half()
        ingested = self._ingested
        low = ("", "", "")  # at or below any key
        return ingested.bisect_left((until + 1, low)) - ingested.bisect_left((since, low))

    def hubs(self) -> Iterator[tuple[int, str]]:
        """(degree, name) of the entities with at least HUB_DEGREE current edges shown above
        HUB_MIN_WEIGHT (graph_build_context's hubs), by degree descending, then name."""
        self._relation_half()
        return ((-negated, name) for negated, name in self._hubs)

    def has_edges(self, name: str) -> bool:
        """Whether the alive entity has a visible relation."""
        self._relation_half()
        return name in self._degree

    def orphans(self) -> int:
        """Alive entities without a visible relation (a visible one has both ends alive)."""
        self._relation_half()
        return len(self._entities) - len(self._degree)

    def edge_types(self) -> dict[str, int]:
        self._relation_half()
        return dict(self.edges_by_type)

    def unresolved_contradictions(self) -> int:
        self._relation_half()
        return self._unresolved

    def contradiction_keys(self) -> list[RelationKey]:
        self._relation_half()
        return list(self._contradictions)


def _hub_ends(entry: RelationEntry) -> tuple[str, ...]:
    """The ends whose hub degree the relation counts in (a self-loop counts once)."""
    if not entry.current or entry.shown <= HUB_MIN_WEIGHT:
        return ()
    source, target, _ = entry.key
    return (source,) if source == target else (source, target)


def _ends(keys: set[RelationKey]) -> set[str]:
    return {name for key in keys for name in key[:2]}


def _entity_entry(reading: Reading, name: str) -> EntityEntry:
    attrs = reading.attrs(name)
    entity_type = reading.entity_type(name)
    rule = attrs.subtype == EXEMPT_SUBTYPE
    is_project = entity_type.casefold() == PROJECT_TYPE  # another family may write `project`
    directory = attrs.properties.get("directory") if is_project else None
    return EntityEntry(
        name,
        entity_type,
        entity_tokens(name, attrs.aliases),
        frozenset([fold_name(name), *(fold_name(a) for a in attrs.aliases)]),
        attrs.confidence,
        decayed_confidence(attrs.confidence, attrs.last_seen, entity_type, reading.run, rule=rule),
        attrs.last_seen,
        rule,
        directory if isinstance(directory, str) and directory else None,
        reading.graph.creation_key(name) or (0, "", 0),
        session if isinstance(session := attrs.properties.get("source_session"), str) else None,
    )


def _relation_entry(
    graph: GraphProjection, key: RelationKey, run: DecayApplied | None, rules: set[str]
) -> RelationEntry | None:
    view = graph.relation(*key)
    details = graph.relation_details(*key)
    if view is None or details is None:
        return None
    exempt = key[0] in rules or key[1] in rules
    weight = decayed_weight(view.weight, details.last_confirmed, run, exempt=exempt)
    unresolved = None
    if is_contradiction(key[2]):
        unresolved = view.properties.get("resolved") is not True
    return RelationEntry(
        key,
        view.weight,
        details.last_confirmed,
        exempt,
        weight,
        view.invalid_at is None,
        unresolved,
        details.ingested_at,
        view.source_session,
    )
