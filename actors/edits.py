"""Deciding the edit and merge commands (update_entities, update_observations, update_relations,
merge_entities): pure, like the rest of decide.

Each command is decided item by item against a WorkingGraph, so a later item sees what the
earlier ones did (rename a to b, then b to c); any rejected item rejects the whole command and
nothing is written. Edits are written as element-level tombstones and creations
(docs/architecture.md §3), never as "rename" or "move" operations the fold would have to
interpret: a rename deletes the old entity (which hides its observations and, with explicit
tombstones, its relations) and creates the new one with the same observations and repointed
relations, so re-creating the old name starts it fresh, and a concurrent rename elsewhere
settles per element by last-writer-wins.
"""

from __future__ import annotations

from actors.commands import (
    EntityMerge,
    EntityUpdate,
    EntityUpdateResult,
    MergeEntities,
    MergeEntitiesResult,
    MergeResult,
    ObservationUpdate,
    ObservationUpdateResult,
    RelationInput,
    RelationUpdate,
    RelationUpdateResult,
    UpdateEntities,
    UpdateEntitiesResult,
    UpdateObservations,
    UpdateObservationsResult,
    UpdateRelations,
    UpdateRelationsResult,
)
from actors.errors import (
    EntityExistsError,
    EntityNotFoundError,
    MergeIntoItselfError,
    NothingToUpdateError,
    ObservationNotFoundError,
    RelationExistsError,
    RelationNotFoundError,
)
from actors.graph_reader import GraphReader
from actors.working_graph import WorkingGraph, relation_key
from eventstore.events import AnyEvent, EntitiesMerged, EntityRenamed
from projections.graph import EntityView, RelationKey

__all__ = ["merge_entities", "update_entities", "update_observations", "update_relations"]


def _triple(key: RelationKey) -> RelationInput:
    return RelationInput(*key)


def _alive(work: WorkingGraph, name: str) -> EntityView:
    view = work.entity(name)
    if view is None:
        raise EntityNotFoundError(name)
    return view


# --- update_entities --------------------------------------------------------------------------


def update_entities(
    graph: GraphReader, command: UpdateEntities, now_ms: int = 0
) -> tuple[list[AnyEvent], UpdateEntitiesResult]:
    """Per item: the entity must be alive and the item must ask for something. A retype alone
    is one EntityUpdated. A rename (new_name differs) refuses an alive new name; otherwise it is
    EntityDeleted(old) and RelationDeleted for each incident relation, EntityCreated(new) with
    the (new) type, ObservationAdded for each observation in order (duplicates kept),
    RelationCreated for each relation with the old name replaced by the new one (attributes
    kept), then an EntityRenamed marker. Asking for the current values changes nothing."""
    work = WorkingGraph(graph, now_ms)
    results = [_update_entity(work, item) for item in command.updates]
    return work.events, UpdateEntitiesResult(results)


def _update_entity(work: WorkingGraph, item: EntityUpdate) -> EntityUpdateResult:
    if item.new_name is None and item.new_entity_type is None:
        raise NothingToUpdateError(item.name, "newName and/or newEntityType")
    view = _alive(work, item.name)
    new_name = item.name if item.new_name is None else item.new_name
    new_type = view.entity_type if item.new_entity_type is None else item.new_entity_type
    retyped = new_type != view.entity_type
    if new_name == item.name:
        if retyped:
            work.retype_entity(view, new_type)
        return EntityUpdateResult(item.name, item.name, new_type, False, retyped, 0, [])
    if work.has_entity(new_name):
        raise EntityExistsError(new_name, item.name)
    # The graph attributes (confidence, mentions, aliases ...) and each relation's evidence
    # and times move with the entity: read before the deletion hides them.
    attributes = work.entity_attributes(item.name)
    details = work.details_of(work.relations_of(item.name))
    incident = work.delete_entity(item.name)
    work.create_entity(new_name, new_type, attributes)
    for content in view.observations:
        work.add_observation(new_name, content)
    moved: list[RelationInput] = []
    for relation in incident:
        old_key = relation_key(relation)
        key = (
            new_name if old_key[0] == item.name else old_key[0],
            new_name if old_key[1] == item.name else old_key[1],
            old_key[2],
        )
        work.create_relation(relation, key, details.get(old_key))
        moved.append(_triple(key))
    work.note(EntityRenamed(old_name=item.name, new_name=new_name))
    return EntityUpdateResult(
        item.name, new_name, new_type, True, retyped, len(view.observations), moved
    )


# --- update_observations ----------------------------------------------------------------------


def update_observations(
    graph: GraphReader, command: UpdateObservations
) -> tuple[list[AnyEvent], UpdateObservationsResult]:
    """Per item: the entity must be alive and carry the old content. ObservationDeleted(old)
    removes every occurrence; ObservationAdded(new) adds it once, at the end, unless the entity
    already has it (an observation is never duplicated by an edit). Old equal to new changes
    nothing."""
    work = WorkingGraph(graph)
    results = [_update_observation(work, item) for item in command.updates]
    return work.events, UpdateObservationsResult(results)


def _update_observation(work: WorkingGraph, item: ObservationUpdate) -> ObservationUpdateResult:
    name, old, new = item.entity_name, item.old_content, item.new_content
    view = _alive(work, name)
    if old not in view.observations:
        raise ObservationNotFoundError(name, old)
    if old == new:
        return ObservationUpdateResult(name, old, new, 0, False)
    removed = work.delete_observation(name, old)
    added = new not in view.observations
    if added:
        work.add_observation(name, new)
    return ObservationUpdateResult(name, old, new, removed, added)


# --- update_relations -------------------------------------------------------------------------


def update_relations(
    graph: GraphReader, command: UpdateRelations, now_ms: int = 0
) -> tuple[list[AnyEvent], UpdateRelationsResult]:
    """Per item: the relation must be visible; omitted fields keep their value; the new
    endpoints must be alive (`from` checked before `to`); the new key must not be another
    visible relation. Then RelationDeleted(old) and RelationCreated(new) with the old
    relation's attributes. An item whose new key equals the old changes nothing."""
    work = WorkingGraph(graph, now_ms)
    results = [_update_relation(work, item) for item in command.updates]
    return work.events, UpdateRelationsResult(results)


def _update_relation(work: WorkingGraph, item: RelationUpdate) -> RelationUpdateResult:
    old_key = (item.from_entity, item.to_entity, item.relation_type)
    if item.new_from is None and item.new_to is None and item.new_relation_type is None:
        raise NothingToUpdateError(
            f"{old_key[0]} -[{old_key[2]}]-> {old_key[1]}", "newFrom, newTo and/or newRelationType"
        )
    relation = work.relation(*old_key)
    if relation is None:
        raise RelationNotFoundError(old_key)
    key = (
        old_key[0] if item.new_from is None else item.new_from,
        old_key[1] if item.new_to is None else item.new_to,
        old_key[2] if item.new_relation_type is None else item.new_relation_type,
    )
    for endpoint in (key[0], key[1]):
        _alive(work, endpoint)
    if key == old_key:
        return RelationUpdateResult(_triple(old_key), _triple(key), False)
    if work.relation(*key) is not None:
        raise RelationExistsError(key, old_key)
    details = work.relation_details(*old_key)
    work.delete_relation(relation)
    work.create_relation(relation, key, details)
    return RelationUpdateResult(_triple(old_key), _triple(key), True)


# --- merge_entities ---------------------------------------------------------------------------


def merge_entities(
    graph: GraphReader, command: MergeEntities, now_ms: int = 0
) -> tuple[list[AnyEvent], MergeEntitiesResult]:
    """Per item: source and target must differ and both be alive. The source is deleted with
    its relations (EntityDeleted, RelationDeleted each). The target gets ObservationAdded for
    each distinct source content it lacks, in the source's order. Each source relation is
    re-created with the source replaced by the target (attributes kept), except when that
    relation is already visible, or when it linked source and target (it would become a
    self-loop nobody asked for): those are dropped. A self-loop on the source stays a self-loop
    on the target. An EntitiesMerged marker records what moved and what was dropped."""
    work = WorkingGraph(graph, now_ms)
    results = [_merge(work, item) for item in command.merges]
    return work.events, MergeEntitiesResult(results)


def _merge(work: WorkingGraph, item: EntityMerge) -> MergeResult:
    source, target = item.source, item.target
    if source == target:
        raise MergeIntoItselfError(source)
    source_view = _alive(work, source)
    target_view = _alive(work, target)
    details = work.details_of(work.relations_of(source))
    incident = work.delete_entity(source)
    present = set(target_view.observations)
    moved_observations: list[str] = []
    for content in source_view.observations:
        if content not in present:
            present.add(content)
            moved_observations.append(content)
            work.add_observation(target, content)
    moved: list[RelationKey] = []
    new_keys: list[RelationKey] = []
    dropped: list[RelationKey] = []
    for relation in incident:
        old_key = relation_key(relation)
        from_entity, to_entity, relation_type = old_key
        links_both = {from_entity, to_entity} == {source, target}
        key = (
            target if from_entity == source else from_entity,
            target if to_entity == source else to_entity,
            relation_type,
        )
        if links_both or work.relation(*key) is not None:
            dropped.append(old_key)
            continue
        work.create_relation(relation, key, details.get(old_key))
        moved.append(old_key)
        new_keys.append(key)
    work.note(
        EntitiesMerged(
            sources=[source],
            target=target,
            moved_observations=moved_observations,
            moved_relations=moved,
            dropped_relations=dropped,
        )
    )
    return MergeResult(
        source,
        target,
        moved_observations,
        [_triple(k) for k in new_keys],
        [_triple(k) for k in dropped],
    )
