"""What the FamilyIndex keeps per alive entity and per visible relation, and how each entry
is derived from the graph (the index's build and its refreshes both derive entries here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

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
from projections.graph import GraphProjection
from projections.graph_decay import EXEMPT_SUBTYPE
from projections.graph_family._tokens import entity_tokens
from projections.graph_family._values import Reading, decayed_confidence, decayed_weight
from projections.naming import fold_name

__all__ = [
    "CONTRADICTS",
    "ENTITY_EVENTS",
    "HUB_DEGREE",
    "HUB_MIN_WEIGHT",
    "MICRO",
    "OBSERVATION_EVENTS",
    "RELATION_EVENTS",
    "DerivedEntries",
    "EntityEntry",
    "RelationEntry",
    "RelationKey",
    "entity_entry",
    "hub_ends",
    "is_contradiction",
    "relation_entry",
]

RelationKey = tuple[str, str, str]
CONTRADICTS = "CONTRADICTS"
PROJECT_TYPE = "project"
MICRO = 1_000_000
# graph_build_context's top hubs (contract §8.21): at least 3 current edges above 0.3.
HUB_DEGREE = 3
HUB_MIN_WEIGHT = 0.3
ENTITY_EVENTS = (EntityCreated, EntityUpdated, EntityDeleted)
OBSERVATION_EVENTS = (ObservationAdded, ObservationDeleted)
RELATION_EVENTS = (RelationCreated, RelationUpdated, RelationDeleted)


class DerivedEntries(NamedTuple):
    """A FamilyIndexBuild's derived entries, from which the FamilyIndex is assembled."""

    reading: Reading
    entities: list[EntityEntry]
    relations: dict[RelationKey, RelationEntry]


def is_contradiction(relation_type: str) -> bool:
    """CONTRADICTS as graph_relate writes it, or as another family spelt it."""
    return relation_type.upper() == CONTRADICTS


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
        return round(self.shown * MICRO)


def hub_ends(entry: RelationEntry) -> tuple[str, ...]:
    """The ends whose hub degree the relation counts in (a self-loop counts once)."""
    if not entry.current or entry.shown <= HUB_MIN_WEIGHT:
        return ()
    source, target, _ = entry.key
    return (source,) if source == target else (source, target)


def entity_entry(reading: Reading, name: str) -> EntityEntry:
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


def relation_entry(
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
