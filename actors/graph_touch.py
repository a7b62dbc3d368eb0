"""What the graph family's write decisions share: resolving references for a write, decayed
values as a touch reads them, touching and creating entities, and writing one edge with the
confidence-max rule and supersession (contract §3-5). Pure, over a WorkingGraph.

A touch reads the current value decayed to "now" through the newest decay run and writes the
result as the new base with a new reference time (§6.1), so decay always counts from the
last real touch and nothing decayed is lost when the reference moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.errors import ambiguity_text
from actors.graph_properties import EntityProperties, edge_properties, merge_properties
from actors.graph_results import EdgeState, SupersededEdge
from actors.graph_weights import raised_confidence, reasserted, rounded
from actors.supersession import Sibling, supersede
from actors.working_graph import WorkingGraph
from eventstore.events import EntityCreated, EntityUpdated, RelationCreated, RelationUpdated
from projections.graph import EntityAttributes, RelationKey, RelationView
from projections.graph_decay import EXEMPT_SUBTYPE, decayed, entity_rate
from projections.naming import (
    NEVER_SUPERSEDE_RELATION_TYPES,
    SYMMETRIC_RELATION_TYPES,
    entity_id,
    fold_name,
)

__all__ = [
    "EdgeWrite",
    "Lookup",
    "Touch",
    "create_entity",
    "current_confidence",
    "current_weight",
    "edge_state",
    "joined_aliases",
    "resolved",
    "superseded_edges",
    "touch_entity",
    "type_warning",
    "write_edge",
]


@dataclass(frozen=True)
class Lookup:
    """A reference resolved for a write: the one name it names (None: no entity), or the
    candidates when it names several (a write refuses to guess)."""

    reference: str
    name: str | None = None
    ambiguous: tuple[str, ...] = ()

    def problem(self) -> str:
        return ambiguity_text(self.reference, self.ambiguous)


def resolved(work: WorkingGraph, reference: str) -> Lookup:
    resolution = work.resolve_name(reference)
    if resolution.ambiguous:
        return Lookup(reference, ambiguous=resolution.names)
    return Lookup(reference, resolution.names[0] if resolution.names else None)


# --- decayed values ---------------------------------------------------------------------------


def _exempt(attributes: EntityAttributes | None) -> bool:
    return attributes is not None and attributes.subtype == EXEMPT_SUBTYPE


def current_confidence(work: WorkingGraph, name: str, attributes: EntityAttributes) -> float:
    """The entity's confidence as read now: its base decayed through the newest run."""
    if _exempt(attributes):
        return attributes.confidence
    run = work.newest_decay_run()
    if run is None:
        return attributes.confidence
    entity_type = work.entity_type(name) or ""
    rate = entity_rate(run, entity_type)
    return decayed(attributes.confidence, attributes.last_seen, run, rate)


def current_weight(work: WorkingGraph, relation: RelationView) -> float:
    """The edge's weight as read now: decayed from its last confirmation through the newest
    run's edge rate (edges touching an exempt entity do not decay)."""
    run = work.newest_decay_run()
    if run is None or run.edge_rate is None:
        return relation.weight
    ends = (relation.from_entity, relation.to_entity)
    if any(_exempt(work.entity_attributes(end)) for end in ends):
        return relation.weight
    details = work.relation_details(*ends, relation.relation_type)
    if details is None:
        return relation.weight
    return decayed(relation.weight, details.last_confirmed, run, run.edge_rate)


# --- entities ---------------------------------------------------------------------------------


@dataclass
class Touch:
    """How a write mentions an entity: a confidence input, and properties to apply."""

    evidence: float | None = None
    mention: bool = True
    properties: EntityProperties | None = None


def joined_aliases(
    work: WorkingGraph, name: str, current: list[str], added: tuple[str, ...], warnings: list[str]
) -> list[str] | None:
    """The alias list with `added` joined (distinct under the name folding), or None when it
    does not change. An alias naming another live entity is refused with a warning."""
    kept = list(current)
    seen = {fold_name(alias) for alias in kept} | {fold_name(name)}
    lookup = work.name_lookup()
    for alias in added:
        folded = fold_name(alias)
        if folded in seen:
            continue
        others = [n for n in lookup.names_folded(folded) if n != name]
        if others:
            warnings.append(f"alias {alias!r} of {name!r} is the name of another entity; dropped")
            continue
        seen.add(folded)
        kept.append(alias)
    return None if kept == current else kept


def create_entity(
    work: WorkingGraph,
    name: str,
    *,
    entity_type: str,
    now_ms: int,
    confidence: float,
    properties: EntityProperties | None,
    warnings: list[str],
) -> None:
    """A new entity mentioned once, seen now, at `confidence`, with its properties."""
    given = properties or EntityProperties({})
    aliases = joined_aliases(work, name, [], given.aliases, warnings) or []
    work.record(
        EntityCreated(
            name=name,
            entity_type=entity_type,
            confidence=rounded(confidence),
            times_mentioned=1,
            last_seen=now_ms,
            subtype=given.set_attributes.get("subtype"),
            source_file=given.set_attributes.get("source_file"),
            aliases=aliases,
            properties=merge_properties({}, given.properties),
        )
    )
    warnings.extend(given.warnings)


def touch_entity(
    work: WorkingGraph, name: str, now_ms: int, touch: Touch, warnings: list[str]
) -> None:
    """An existing entity mentioned by a write: confidence max(decayed current, evidence)
    (never lowered by a write), one more mention if `touch.mention`, last seen now, and the
    properties' attributes and keys merged."""
    attributes = work.entity_attributes(name)
    assert attributes is not None, "only alive entities are touched"
    confidence = current_confidence(work, name, attributes)
    if touch.evidence is not None:
        confidence = raised_confidence(confidence, touch.evidence)
    update: dict[str, Any] = {
        "confidence": rounded(confidence),
        "last_seen": now_ms,
    }
    if touch.mention:
        update["times_mentioned"] = attributes.times_mentioned + 1
    given = touch.properties
    if given is not None:
        warnings.extend(given.warnings)
        update.update(given.set_attributes)
        aliases = joined_aliases(work, name, attributes.aliases, given.aliases, warnings)
        if aliases is not None:
            update["aliases"] = aliases
        if given.properties:
            update["properties"] = merge_properties(attributes.properties, given.properties)
        cleared = [key for key in given.cleared if getattr(attributes, key) is not None]
        if cleared:
            update["cleared"] = cleared
    work.record(EntityUpdated(name=name, **update))


def type_warning(work: WorkingGraph, name: str, given_type: str) -> str | None:
    """A warning when a write names an existing entity with another type (it keeps its own)."""
    current = work.entity_type(name)
    if current is None or current.casefold() == given_type.casefold():
        return None
    return f"entity {name!r} keeps its type {current!r} (given: {given_type!r})"


# --- edges ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EdgeWrite:
    """One edge to write (single mode or a batch relation), its parts already checked."""

    from_name: str
    to_name: str
    relation_type: str
    weight: float
    properties: dict[str, Any] = field(default_factory=dict)
    evidence: str | None = None
    valid_at: int | None = None
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None


@dataclass(frozen=True)
class EdgeWritten:
    key: RelationKey
    created: bool
    superseded: tuple[tuple[RelationKey, int], ...]


def stored_key(work: WorkingGraph, write: EdgeWrite) -> RelationKey:
    """The key the edge lives under: for a symmetric type an existing reverse edge is the edge."""
    key = (write.from_name, write.to_name, write.relation_type)
    if work.has_relation(*key) or write.relation_type not in SYMMETRIC_RELATION_TYPES:
        return key
    reverse = (write.to_name, write.from_name, write.relation_type)
    return reverse if work.has_relation(*reverse) else key


def _siblings(work: WorkingGraph, key: RelationKey) -> list[Sibling]:
    source, target, relation_type = key
    return [
        Sibling(r.to_entity, r.valid_at)
        for r in work.relations_of(source)
        if r.from_entity == source
        and r.relation_type == relation_type
        and r.to_entity != target
        and r.invalid_at is None
    ]


def _ends(key: RelationKey) -> dict[str, Any]:
    return {"from_entity": key[0], "to_entity": key[1], "relation_type": key[2]}


def write_edge(
    work: WorkingGraph, write: EdgeWrite, now_ms: int, mention_boost: float, warnings: list[str]
) -> EdgeWritten:
    """Create the edge or re-assert it (§4.1), closing siblings per §5 when dated."""
    key = stored_key(work, write)
    # Siblings are read only when a dated write can close them (a hub's edges are many).
    can_close = write.valid_at is not None and key[2] not in NEVER_SUPERSEDE_RELATION_TYPES
    plan = supersede(key[2], write.valid_at, _siblings(work, key) if can_close else ())
    closed: list[tuple[RelationKey, int]] = []
    if plan.closed_at is not None:
        for target in plan.closed:
            sibling = (key[0], target, key[2])
            work.record(RelationUpdated(**_ends(sibling), invalid_at=plan.closed_at))
            closed.append((sibling, plan.closed_at))
    given = edge_properties(write.properties)
    warnings.extend(given.warnings)
    provenance: dict[str, Any] = {
        "source_session": write.source_session,
        "source_transcript": write.source_transcript,
        "source_type": write.source_type,
    }
    evidence = write.evidence if write.evidence and write.evidence.strip() else None
    existing = work.relation(*key)
    if existing is None:
        work.record(
            RelationCreated(
                **_ends(key),
                weight=rounded(write.weight),
                properties=merge_properties({}, given.properties),
                valid_at=write.valid_at,
                invalid_at=plan.invalid_at,
                evidence=evidence,
                ingested_at=now_ms,
                last_confirmed=now_ms,
                **provenance,
            )
        )
        return EdgeWritten(key, True, tuple(closed))
    weight = reasserted(current_weight(work, existing), write.weight, mention_boost)
    update: dict[str, Any] = {
        "weight": weight,
        "last_confirmed": now_ms,
        "evidence": evidence,
        **provenance,
    }
    if given.properties:
        update["properties"] = merge_properties(existing.properties, given.properties)
    if plan.dated:
        update["valid_at"] = write.valid_at
        if plan.invalid_at is not None:
            update["invalid_at"] = plan.invalid_at
        elif existing.invalid_at is not None:
            update["cleared"] = ["invalid_at"]  # §5.3: a dated re-assert re-opens it
    work.record(RelationUpdated(**_ends(key), **update))
    return EdgeWritten(key, False, tuple(closed))


def edge_state(work: WorkingGraph, key: RelationKey) -> EdgeState:
    """The edge as written, its ends as ids of the graph after the write."""
    relation = work.relation(*key)
    assert relation is not None, "the edge was just written"
    lookup = work.name_lookup()
    return EdgeState(
        from_id=entity_id(key[0], lookup),
        to_id=entity_id(key[1], lookup),
        relation_type=key[2],
        weight=relation.weight,
        valid_at=relation.valid_at,
        invalid_at=relation.invalid_at,
    )


def superseded_edges(
    work: WorkingGraph, closed: list[tuple[RelationKey, int]]
) -> list[SupersededEdge]:
    lookup = work.name_lookup()
    return [
        SupersededEdge(
            from_id=entity_id(key[0], lookup),
            to_id=entity_id(key[1], lookup),
            relation_type=key[2],
            invalid_at=at,
        )
        for key, at in closed
    ]
