"""What the Cypher projection holds, read from the graph (pure): entity and relation rows as
columns for the worker, and which names and keys committed events touch.

Values are the graph family's as shown (`Reading`: confidence and weight after the newest
decay run), times in wall milliseconds. Properties become a string map: a string value as it
is (so `map_extract(e.properties, 'role')` compares with plain text), any other JSON value as
its JSON text.
"""

from __future__ import annotations

from collections.abc import Iterable
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
from projections.graph import GraphProjection
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


def _properties(values: dict[str, Any]) -> tuple[list[str], list[str]]:
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
        columns["properties"].append(_properties(dict(attrs.properties)))
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
        view, details = facts.view, facts.details
        columns["from"].append(view.from_entity)
        columns["to"].append(view.to_entity)
        columns["type"].append(view.relation_type)
        columns["weight"].append(facts.weight)
        columns["valid_at"].append(view.valid_at)
        columns["invalid_at"].append(view.invalid_at)
        columns["ingested_at"].append(details.ingested_at)
        columns["last_confirmed"].append(details.last_confirmed)
        columns["source_session"].append(view.source_session)
        columns["source_transcript"].append(view.source_transcript)
        columns["source_type"].append(view.source_type)
        columns["evidence"].append(details.evidence)
        columns["properties"].append(_properties(dict(view.properties)))
    return columns


def snapshot(graph: GraphProjection) -> tuple[Columns, Columns]:
    """The whole projection of `graph`: every alive entity and visible relation."""
    reading = Reading(graph)
    names = graph.entity_names()
    entities = entity_columns(reading, names)
    relations = relation_columns(reading, graph.relation_keys(), set(entities["name"]))
    return entities, relations


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
