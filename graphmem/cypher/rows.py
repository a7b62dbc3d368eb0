"""What the Cypher projection holds, read from the graph (pure): entity and relation rows as
columns for the worker, and which names and keys committed events touch.

Values are the graph family's as shown (`Reading`: confidence and weight after the newest
decay run), times in wall milliseconds. Properties become a string map: a string value as it
is (so `map_extract(e.properties, 'role')` compares with plain text), any other JSON value as
its JSON text.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from eventstore.events import (
    DecayApplied,
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntitySplit,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from eventstore.hlc import ms_of
from projections.graph import GraphProjection, RelationDetails, RelationView
from projections.graph_decay import EXEMPT_SUBTYPE, decayed, entity_rate, newest_run
from projections.graph_family import Reading
from projections.naming import slug

__all__ = ["Changes", "Columns", "changes_of", "entity_columns", "relation_columns", "snapshot"]

Columns = dict[str, list[Any]]
RelationKey = tuple[str, str, str]

_json = msgspec.json.Encoder()
ENTITY_COLUMNS = (
    "name", "id", "type", "subtype", "confidence", "times_mentioned", "first_seen",
    "last_seen", "source_file", "aliases", "properties", "observations",
)  # fmt: skip
RELATION_COLUMNS = (
    "from", "to", "type", "weight", "valid_at", "invalid_at", "ingested_at", "last_confirmed",
    "source_session", "source_transcript", "source_type", "evidence", "properties",
)  # fmt: skip


@dataclass
class Changes:
    """What to bring up to date: `reset` names lose their row and edges and are re-created
    with their current edges; `entities` get their row rewritten; `relations` their edge."""

    reset: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    relations: set[RelationKey] = field(default_factory=set)
    everything: bool = False  # a decay run: every shown value may move

    def __bool__(self) -> bool:
        return bool(self.everything or self.reset or self.entities or self.relations)

    def merge(self, other: Changes) -> None:
        self.reset |= other.reset
        self.entities |= other.entities
        self.relations |= other.relations
        self.everything = self.everything or other.everything


def changes_of(envelopes: Iterable[Envelope]) -> Changes:
    """The names and keys these committed events touch. A creation or deletion resets the
    entity (an entity's deletion hides its edges, a re-creation starts it over); an update
    or observation rewrites its row; a relation event rewrites that edge."""
    found = Changes()
    for envelope in envelopes:
        event = envelope.event
        match event:
            case EntityCreated() | EntityDeleted():
                found.reset.add(event.name)
            case EntityUpdated():
                found.entities.add(event.name)
            case ObservationAdded() | ObservationDeleted():
                found.entities.add(event.entity)
            case RelationCreated() | RelationUpdated() | RelationDeleted():
                found.relations.add((event.from_entity, event.to_entity, event.relation_type))
            case EntityRenamed():
                found.reset |= {event.old_name, event.new_name}
            case EntitiesMerged():
                found.reset |= {*event.sources, event.target}
            case EntitySplit():
                found.reset |= {event.source, *event.targets}
            case DecayApplied():
                found.everything = True
            case _:
                pass
    return found


_NO_PROPERTIES: tuple[list[str], list[str]] = ([], [])


def _properties(values: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    if not values:
        return _NO_PROPERTIES  # most elements have none; encoded, never mutated
    keys = list(values)
    return keys, [v if isinstance(v, str) else _json.encode(v).decode() for v in values.values()]


def entity_columns(reading: Reading, names: Iterable[str]) -> Columns:
    """Rows of the alive entities among `names` (others are skipped)."""
    graph = reading.graph
    columns: Columns = {key: [] for key in ENTITY_COLUMNS}
    for name in names:
        if graph.creation_key(name) is None or graph.entity_type(name) is None:
            continue
        attrs = reading.attrs(name)
        columns["name"].append(name)
        columns["id"].append(reading.entity_id(name))
        columns["type"].append(reading.entity_type(name))
        columns["subtype"].append(attrs.subtype)
        columns["confidence"].append(reading.confidence(name))
        columns["times_mentioned"].append(attrs.times_mentioned)
        columns["first_seen"].append(reading.first_seen(name))
        columns["last_seen"].append(attrs.last_seen)
        columns["source_file"].append(attrs.source_file)
        columns["aliases"].append(list(attrs.aliases))
        columns["properties"].append(_properties(attrs.properties))
        columns["observations"].append(list(graph.observations(name)))
    return columns


def relation_columns(
    reading: Reading, keys: Iterable[RelationKey], alive: set[str] | None = None
) -> Columns:
    """Rows of the visible relations among `keys` (whose ends are in `alive`, if given)."""
    columns: Columns = {key: [] for key in RELATION_COLUMNS}
    for key in keys:
        if alive is not None and (key[0] not in alive or key[1] not in alive):
            continue
        facts = reading.edge(key)
        if facts is None:
            continue
        _append_relation(columns, facts.view, facts.details, facts.weight)
    return columns


def _append_relation(
    columns: Columns, view: RelationView, details: RelationDetails, weight: float
) -> None:
    """One relation's row, `weight` as shown (decayed), in RELATION_COLUMNS' columns."""
    columns["from"].append(view.from_entity)
    columns["to"].append(view.to_entity)
    columns["type"].append(view.relation_type)
    columns["weight"].append(weight)
    columns["valid_at"].append(view.valid_at)
    columns["invalid_at"].append(view.invalid_at)
    columns["ingested_at"].append(details.ingested_at)
    columns["last_confirmed"].append(details.last_confirmed)
    columns["source_session"].append(view.source_session)
    columns["source_transcript"].append(view.source_transcript)
    columns["source_type"].append(view.source_type)
    columns["evidence"].append(details.evidence)
    columns["properties"].append(_properties(view.properties))


def snapshot(
    graph: GraphProjection, on_entities: Callable[[Columns], None] | None = None
) -> tuple[Columns, Columns]:
    """The whole projection of `graph`: every alive entity and visible relation. The same
    values as `entity_columns` and `relation_columns` give, read in one pass each without
    `Reading`'s per-element caches and name index (a model built for this read has none)."""
    run = newest_run(graph.decay_runs())
    # A few million small objects that live until the load: collections would only scan them
    # (and the whole graph's heap with them), several times over.
    collecting = gc.isenabled()
    gc.disable()
    try:
        entities, rules = _all_entities(graph, run)
        if on_entities is not None:  # the worker loads them while the relations are read
            on_entities(entities)
        return entities, _all_relations(graph, run, set(entities["name"]), rules)
    finally:
        if collecting:
            gc.enable()


def _all_entities(graph: GraphProjection, run: DecayApplied | None) -> tuple[Columns, set[str]]:
    names = graph.entity_names()
    slugs = [slug(name) for name in names]
    sharing = Counter(slugs)
    entities: Columns = {key: [] for key in ENTITY_COLUMNS}
    rules: set[str] = set()
    for name, key in zip(names, slugs, strict=True):
        attrs = graph.entity_attributes(name)
        created = graph.creation_key(name)
        entity_type = graph.entity_type(name)
        if attrs is None or created is None or entity_type is None:
            continue
        rule = attrs.subtype == EXEMPT_SUBTYPE
        if rule:
            rules.add(name)
        confidence = attrs.confidence
        if run is not None and not rule:
            confidence = decayed(confidence, attrs.last_seen, run, entity_rate(run, entity_type))
        entities["name"].append(name)
        entities["id"].append(key if sharing[key] <= 1 else name)
        entities["type"].append(entity_type)
        entities["subtype"].append(attrs.subtype)
        entities["confidence"].append(confidence)
        entities["times_mentioned"].append(attrs.times_mentioned)
        entities["first_seen"].append(ms_of(created[0]))
        entities["last_seen"].append(attrs.last_seen)
        entities["source_file"].append(attrs.source_file)
        entities["aliases"].append(list(attrs.aliases))
        entities["properties"].append(_properties(attrs.properties))
        entities["observations"].append(graph.observations(name))
    return entities, rules


def _all_relations(
    graph: GraphProjection, run: DecayApplied | None, alive: set[str], rules: set[str]
) -> Columns:
    edge_rate = None if run is None else run.edge_rate
    relations: Columns = {key: [] for key in RELATION_COLUMNS}
    for view in graph.relations():
        source, target = view.from_entity, view.to_entity
        details = graph.relation_details(source, target, view.relation_type)
        if details is None or source not in alive or target not in alive:
            continue
        weight = view.weight
        if run is not None and edge_rate is not None and not (source in rules or target in rules):
            weight = decayed(weight, details.last_confirmed, run, edge_rate)
        _append_relation(relations, view, details, weight)
    return relations


def apply_request(graph: GraphProjection, changes: Changes) -> dict[str, Any]:
    """The worker's `apply` request that brings these names and keys to `graph`'s state.
    Ids derive from the slugs of all live names, so the names sharing a slug with a reset
    name are rewritten too."""
    reading = Reading(graph)
    lookup = reading.lookup
    rewrite = set(changes.entities)
    for name in changes.reset:
        rewrite.update(lookup.names_with_slug(slug(name)))
    rewrite -= changes.reset
    relations = set(changes.relations)
    for name in changes.reset:
        relations.update(graph.incident_keys(name))
    return {
        "op": "apply",
        "reset": sorted(changes.reset),
        "entities": entity_columns(reading, sorted(changes.reset | rewrite)),
        # A reset removed the edges of its names already; the rest are deleted and re-made.
        "delete_relations": [
            list(key)
            for key in sorted(changes.relations)
            if key[0] not in changes.reset and key[1] not in changes.reset
        ],
        "relations": relation_columns(reading, sorted(relations)),
    }
