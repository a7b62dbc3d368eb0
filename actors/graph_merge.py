"""Deciding graph_merge (contract §8.13): fold a source entity into a target, pure.

Every edge of the source is either dropped (it links source and target: merged, it would be a
self-loop nobody asked for), consolidated with the edge the target already has under the
repointed key (for a symmetric type, in either direction), or moved with every attribute. A
consolidation keeps the target's edge: its weight becomes the larger of the two as they read
now (decayed), `last_confirmed` now, `ingested_at` the earlier of the two. The target adopts
the source's property keys it lacks, its name and aliases, its observations (the memory
family's, which a deletion would otherwise lose); confidence is the larger, mentions the sum,
last seen now. The source is then gone, and an EntitiesMerged marker (the memory family's,
so read_history shows the merge) plus an AuditRecorded with the reason record it.

A dry run decides all of it on the working graph and returns no events, so its counts are
exactly what the merge would do at that point.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from actors.errors import GraphWriteRefusedError
from actors.graph_merge_commands import GraphMerge, GraphMergeResult
from actors.graph_reader import GraphReader
from actors.graph_touch import current_confidence, current_weight, joined_aliases, resolved
from actors.graph_weights import rounded
from actors.working_graph import WorkingGraph, relation_key
from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    EntitiesMerged,
    EntityUpdated,
    RelationUpdated,
)
from projections.graph import EntityAttributes, RelationDetails, RelationKey, RelationView
from projections.naming import SYMMETRIC_RELATION_TYPES, entity_id

__all__ = [
    "adopted_properties",
    "links_both",
    "merge",
    "repointed",
    "stored_under",
]

TOOL = "graph_merge"


# --- the pure rules ---------------------------------------------------------------------------


def links_both(key: RelationKey, source: str, target: str) -> bool:
    """Whether the edge runs directly between source and target (either way)."""
    return {key[0], key[1]} == {source, target} and source != target


def repointed(key: RelationKey, source: str, target: str) -> RelationKey:
    """The key with every end that is the source replaced by the target (a self-loop on the
    source becomes one on the target)."""
    return (
        target if key[0] == source else key[0],
        target if key[1] == source else key[1],
        key[2],
    )


def stored_under(work: WorkingGraph, key: RelationKey) -> RelationKey | None:
    """The key an equal edge already has: the key itself, or for a symmetric type its reverse
    (direction carries no meaning for those, §3.4); None when there is none."""
    if work.has_relation(*key):
        return key
    reverse = (key[1], key[0], key[2])
    if key[2].upper() in SYMMETRIC_RELATION_TYPES and work.has_relation(*reverse):
        return reverse
    return None


def adopted_properties(
    target: Mapping[str, Any], source: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The target's properties with the source's keys it lacks added; the keys adopted,
    sorted. The target wins on every shared key."""
    keys = sorted(key for key in source if key not in target)
    return {**target, **{key: source[key] for key in keys}}, keys


# --- the decision -----------------------------------------------------------------------------


@dataclass
class _Counts:
    added: int = 0
    consolidated: int = 0
    self_loops: int = 0
    moved: list[RelationKey] = field(default_factory=list)
    dropped: list[RelationKey] = field(default_factory=list)

    def detail(self, adopted: list[str]) -> dict[str, int]:
        return {
            "edges_added": self.added,
            "edges_consolidated": self.consolidated,
            "self_loops_dropped": self.self_loops,
            "properties_adopted": len(adopted),
        }


def _ends(work: WorkingGraph, command: GraphMerge) -> tuple[str, str]:
    """Both references resolved; every problem (unknown, ambiguous, the same entity) listed."""
    problems: list[str] = []
    names: list[str] = []
    for argument, reference in (("source_id", command.source_id), ("target_id", command.target_id)):
        lookup = resolved(work, reference)
        if lookup.ambiguous:
            problems.append(f"{argument}: {lookup.problem()}")
        elif lookup.name is None:
            problems.append(
                f"{argument}: no entity is named {reference!r} (look it up with graph_entities)"
            )
        else:
            names.append(lookup.name)
    if not problems and names[0] == names[1]:
        problems.append(
            f"source_id {command.source_id!r} and target_id {command.target_id!r} both name "
            f"{names[0]!r}: an entity cannot be merged with itself; name two different entities"
        )
    if problems:
        raise GraphWriteRefusedError(TOOL, problems)
    return names[0], names[1]


def _consolidate(
    work: WorkingGraph,
    key: RelationKey,
    weight: float,
    details: RelationDetails | None,
    now_ms: int,
) -> None:
    """Fold a source edge (its weight as read now, its details) into the target's edge `key`."""
    kept = work.relation(*key)
    kept_details = work.relation_details(*key)
    assert kept is not None and kept_details is not None, "consolidating into a visible edge"
    best = rounded(max(current_weight(work, kept), weight))
    ingested = kept_details.ingested_at
    if details is not None and details.ingested_at < ingested:
        # ingested_at is set only by a creation: re-create the target's edge as it is, with
        # the earlier ingestion (every other attribute the target's own).
        work.create_relation(
            msgspec.structs.replace(kept, weight=best),
            key,
            msgspec.structs.replace(
                kept_details, ingested_at=details.ingested_at, last_confirmed=now_ms
            ),
        )
        return
    work.record(
        RelationUpdated(
            from_entity=key[0],
            to_entity=key[1],
            relation_type=key[2],
            weight=best,
            last_confirmed=now_ms,
        )
    )


def _move_edges(
    work: WorkingGraph, source: str, target: str, now_ms: int
) -> tuple[list[RelationView], _Counts]:
    """Delete the source with its edges and re-home each edge per the rules above."""
    incident = work.relations_of(source)
    details = work.details_of(incident)
    # Read before the deletion hides them (decay needs the source's ends).
    weights = {relation_key(r): current_weight(work, r) for r in incident}
    work.delete_entity(source)
    counts = _Counts()
    for relation in incident:
        old = relation_key(relation)
        if links_both(old, source, target):
            counts.self_loops += 1
            counts.dropped.append(old)
            continue
        key = repointed(old, source, target)
        existing = stored_under(work, key)
        if existing is None:
            work.create_relation(relation, key, details.get(old))
            counts.added += 1
            counts.moved.append(old)
        else:
            _consolidate(work, existing, weights[old], details.get(old), now_ms)
            counts.consolidated += 1
            counts.dropped.append(old)
    return incident, counts


def _fold_target(
    work: WorkingGraph,
    target: str,
    *,
    source_attributes: EntityAttributes,
    source_confidence: float,
    now_ms: int,
    warnings: list[str],
) -> list[str]:
    """The target's attributes after the merge (§8.13 steps 4-5); returns the keys adopted."""
    attributes = work.entity_attributes(target)
    assert attributes is not None, "the target is alive"
    properties, adopted = adopted_properties(attributes.properties, source_attributes.properties)
    added = (source_attributes.name, *source_attributes.aliases)
    aliases = joined_aliases(work, target, attributes.aliases, added, warnings)
    update: dict[str, Any] = {
        "confidence": rounded(max(current_confidence(work, target, attributes), source_confidence)),
        "times_mentioned": attributes.times_mentioned + source_attributes.times_mentioned,
        "last_seen": now_ms,
    }
    if aliases is not None:
        update["aliases"] = aliases
    if adopted:
        update["properties"] = properties
    work.record(EntityUpdated(name=target, **update))
    return adopted


def _oversized(work: WorkingGraph, target: str, limit: int | None) -> None:
    if limit is None:
        return
    attributes = work.entity_attributes(target)
    assert attributes is not None
    size = len(msgspec.json.encode(attributes.properties).decode())
    if size > limit:
        raise GraphWriteRefusedError(
            TOOL,
            [
                f"the properties of {target!r} with the source's adopted would be {size:,} "
                f"characters; the limit is {limit:,} (remove keys from either entity with "
                "graph_relate properties set to null, then merge)"
            ],
        )


def merge(
    graph: GraphReader, command: GraphMerge, now_ms: int
) -> tuple[list[AnyEvent], GraphMergeResult]:
    """Fold the source into the target as one command (§8.13); a dry run appends nothing."""
    work = WorkingGraph(graph, now_ms)
    source, target = _ends(work, command)
    source_id = entity_id(source, work.name_lookup())
    source_attributes = work.entity_attributes(source)
    source_view = work.entity(source)
    assert source_attributes is not None and source_view is not None
    source_confidence = current_confidence(work, source, source_attributes)
    _, counts = _move_edges(work, source, target, now_ms)
    present = set(work.observations(target))
    moved_observations: list[str] = []
    for content in source_view.observations:
        if content not in present:
            present.add(content)
            moved_observations.append(content)
            work.add_observation(target, content)
    warnings: list[str] = []
    adopted = _fold_target(
        work,
        target,
        source_attributes=source_attributes,
        source_confidence=source_confidence,
        now_ms=now_ms,
        warnings=warnings,
    )
    if adopted:
        _oversized(work, target, command.max_properties_chars)
    work.note(
        EntitiesMerged(
            sources=[source],
            target=target,
            moved_observations=moved_observations,
            moved_relations=counts.moved,
            dropped_relations=counts.dropped,
        )
    )
    work.record(
        AuditRecorded(
            action=TOOL,
            detail={
                "entities": [source, target],
                "reason": command.reason,
                **counts.detail(adopted),
            },
        )
    )
    result = GraphMergeResult(
        source_id=source_id,
        source_name=source,
        target_id=entity_id(target, work.name_lookup()),
        target_name=target,
        edges_added=counts.added,
        edges_consolidated=counts.consolidated,
        self_loops_dropped=counts.self_loops,
        properties_adopted=adopted,
        dry_run=command.dry_run,
        at_ms=now_ms,
        warnings=warnings,
    )
    return ([] if command.dry_run else work.events), result
