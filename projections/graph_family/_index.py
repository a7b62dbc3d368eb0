"""FamilyIndex: the graph family's derived index over one GraphProjection, kept by the fold.

Scanning 100,000 entities and 300,000 edges per call costs far more than the family's latency
targets, so what the reads need is kept here instead: per alive entity its type, tokens,
decayed confidence and last_seen (for keyword search, listings and staleness), per visible
relation its type and decayed weight, and the tallies graph_stats reports (entities and edges
by type, the weight sum, degrees for orphans, CONTRADICTS edges).

It is built on the first read that needs it (`family_index(graph)`, in `_build`), like the
projection's name indexes, and never in snapshots; `_entries` derives what it keeps per entity
and relation. From then on the fold tells it which names and relation keys each event
touches (one set insertion), and the next read re-derives just those entries. A
decay run changes every decayed value, so a new newest run recomputes those (once per
run, never per read) over the DecayColumns the index keeps beside its entries (one vectorised
pass; entries keep the values as written and are updated in place where the shown value
moved). Reads go through `refresh()` first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar, cast

from sortedcontainers import SortedList

from eventstore.events import DecayApplied, ObservationAdded, ObservationDeleted
from eventstore.hlc import ms_of
from projections.graph import GraphProjection
from projections.graph_decay import newest_run
from projections.graph_family._columns import DecayColumns
from projections.graph_family._directories import DirectoryIndex
from projections.graph_family._entries import (
    ENTITY_EVENTS,
    HUB_DEGREE,
    HUB_MIN_WEIGHT,
    MICRO,
    RELATION_EVENTS,
    DerivedEntries,
    EntityEntry,
    RelationEntry,
    RelationKey,
    entity_entry,
    hub_ends,
    is_contradiction,
    relation_entry,
)
from projections.graph_family._tokens import TokenIndex
from projections.graph_family._values import Reading
from projections.naming import slug

# numpy is imported by the methods that read the decay columns (projections.graph_decay says
# why): a server that never builds this index never loads it.

__all__ = ["FamilyIndex", "IndexListener"]

T = TypeVar("T")
L = TypeVar("L", bound="IndexListener")
# What re-deriving an entity found changed (see FamilyIndex._set_entity).
_LIFE = 2
_RULE = 1


class IndexListener(Protocol):
    """A derived index over the FamilyIndex (FamilyIndex.listener)."""

    def touched(self, names: set[str], *, everything: bool) -> None:
        """`names` changed (entry, liveness or relations); `everything`: a new decay run."""


class FamilyIndex:
    """Derived entries and tallies over one projection (see the module docstring).

    Two halves: the entities' (built with the index) and the relations' (built by the first
    read that needs a relation tally, so search and listings never pay for 300,000 edges).
    """

    def __init__(self, graph: GraphProjection, derived: DerivedEntries | None = None) -> None:
        """`derived`: the entries a FamilyIndexBuild derived in steps (what was touched
        meanwhile is added by `adopt_touched` when it is installed); without them, derived
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
        if derived is None:
            self._build_entities(Reading(graph), None)
            return
        self._build_entities(derived.reading, derived.entities)
        self._adopt_relations(derived.relations)

    def adopt_touched(self, names: set[str], keys: set[RelationKey], decay: bool) -> None:
        """What the fold touched while this index's entries were derived and assembled
        (`decay`: a decay run): re-derived by the first refresh, like any change after a
        build."""
        self._dirty_entities |= names
        self._dirty_relations |= keys
        self._decay_dirty = self._decay_dirty or decay

    # --- told by the fold ---------------------------------------------------------------

    def folded(self, event: Any) -> None:
        kind = type(event)
        if kind is ObservationAdded or kind is ObservationDeleted:
            self._dirty_entities.add(event.entity)
        elif kind in ENTITY_EVENTS:
            self._dirty_entities.add(event.name)
        elif kind in RELATION_EVENTS:
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
            else [entity_entry(reading, name) for name in graph.entity_names()]
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
        import numpy as np  # noqa: PLC0415 (only where the columns are read: see the imports)

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
            relation = relation_entry(graph, key, run, rules)
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
            for name in hub_ends(entry):
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
        if hub_ends(entry):
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
        import numpy as np  # noqa: PLC0415 (only where the columns are read: see the imports)

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
        import numpy as np  # noqa: PLC0415 (only where the columns are read: see the imports)

        columns = self._relation_columns
        assert columns is not None
        n = columns.size
        new = columns.decayed(run, [run.edge_rate] if run is not None else [None])
        moved = np.flatnonzero(columns.alive[:n] & (new != columns.shown[:n]))
        old, fresh = columns.shown[moved], new[moved]
        micro = np.rint(fresh * MICRO).astype(np.int64)  # round(weight * MICRO), exactly
        self._weight_micro += int(micro.sum()) - int(np.rint(old * MICRO).astype(np.int64).sum())
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
        new = entity_entry(reading, name) if self._graph.has_entity(name) else None
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
        new = relation_entry(self._graph, key, self.run, rules)
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
        import numpy as np  # noqa: PLC0415 (only where the columns are read: see the imports)

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
        return self._weight_micro / MICRO / len(relations)

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


def _ends(keys: set[RelationKey]) -> set[str]:
    return {name for key in keys for name in key[:2]}
