"""Commands the graph writer decides, their inputs, and the results it answers with.

Commands are imperative and plural, mirroring the official memory tools (`create_entities` is
`CreateEntities`). All are frozen msgspec Structs tagged with their class name, so they can
cross threads and, if ever needed, the wire. Fields may be given by position or keyword.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "AddObservations",
    "Command",
    "CommandResult",
    "CreateEntities",
    "CreateRelations",
    "DeleteEntities",
    "DeleteObservations",
    "DeleteRelations",
    "EntitiesCreated",
    "EntitiesDeleted",
    "EntitiesMergedResult",
    "EntitiesUpdated",
    "EntityInput",
    "EntityMerge",
    "EntityUpdate",
    "EntityUpdateResult",
    "MergeEntities",
    "MergeResult",
    "ObservationDeletion",
    "ObservationInput",
    "ObservationUpdate",
    "ObservationUpdateResult",
    "ObservationsAdded",
    "ObservationsAddedItem",
    "ObservationsDeleted",
    "ObservationsUpdated",
    "RelationInput",
    "RelationUpdate",
    "RelationUpdateResult",
    "RelationsCreated",
    "RelationsDeleted",
    "RelationsUpdated",
    "UpdateEntities",
    "UpdateObservations",
    "UpdateRelations",
]


class _Message(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of commands, their inputs and results; never used on its own."""


# --- inputs ---------------------------------------------------------------------------------


class EntityInput(_Message, frozen=True, tag="EntityInput"):
    """An entity as create_entities takes it."""

    name: str
    entity_type: str
    observations: list[str]


class RelationInput(_Message, frozen=True, tag="RelationInput"):
    """A relation triple as create_relations and delete_relations take it."""

    from_entity: str
    to_entity: str
    relation_type: str


class ObservationInput(_Message, frozen=True, tag="ObservationInput"):
    """Contents to add to one entity (add_observations)."""

    entity_name: str
    contents: list[str]


class ObservationDeletion(_Message, frozen=True, tag="ObservationDeletion"):
    """Contents to delete from one entity (delete_observations)."""

    entity_name: str
    observations: list[str]


class EntityUpdate(_Message, frozen=True, tag="EntityUpdate"):
    """Rename and/or retype one entity (update_entities); None leaves that attribute as is."""

    name: str
    new_name: str | None = None
    new_entity_type: str | None = None


class ObservationUpdate(_Message, frozen=True, tag="ObservationUpdate"):
    """Replace one content on one entity with another (update_observations)."""

    entity_name: str
    old_content: str
    new_content: str


class RelationUpdate(_Message, frozen=True, tag="RelationUpdate"):
    """Change one relation's type and/or endpoints (update_relations); None keeps the value."""

    from_entity: str
    to_entity: str
    relation_type: str
    new_from: str | None = None
    new_to: str | None = None
    new_relation_type: str | None = None


class EntityMerge(_Message, frozen=True, tag="EntityMerge"):
    """Merge `source` into `target` (merge_entities)."""

    source: str
    target: str


# --- commands -------------------------------------------------------------------------------


class CreateEntities(_Message, frozen=True, tag="CreateEntities"):
    entities: list[EntityInput]


class CreateRelations(_Message, frozen=True, tag="CreateRelations"):
    relations: list[RelationInput]


class AddObservations(_Message, frozen=True, tag="AddObservations"):
    observations: list[ObservationInput]


class DeleteEntities(_Message, frozen=True, tag="DeleteEntities"):
    entity_names: list[str]


class DeleteObservations(_Message, frozen=True, tag="DeleteObservations"):
    deletions: list[ObservationDeletion]


class DeleteRelations(_Message, frozen=True, tag="DeleteRelations"):
    relations: list[RelationInput]


class UpdateEntities(_Message, frozen=True, tag="UpdateEntities"):
    updates: list[EntityUpdate]


class UpdateObservations(_Message, frozen=True, tag="UpdateObservations"):
    updates: list[ObservationUpdate]


class UpdateRelations(_Message, frozen=True, tag="UpdateRelations"):
    updates: list[RelationUpdate]


class MergeEntities(_Message, frozen=True, tag="MergeEntities"):
    merges: list[EntityMerge]


Command = (
    CreateEntities
    | CreateRelations
    | AddObservations
    | DeleteEntities
    | DeleteObservations
    | DeleteRelations
    | UpdateEntities
    | UpdateObservations
    | UpdateRelations
    | MergeEntities
)


# --- results --------------------------------------------------------------------------------


class EntitiesCreated(_Message, frozen=True, tag="EntitiesCreated"):
    """`created` in input order; `skipped`: the name of each input that was not created."""

    created: list[EntityInput]
    skipped: list[str]


class RelationsCreated(_Message, frozen=True, tag="RelationsCreated"):
    """`created` and `skipped` (already there, or earlier in the batch), in input order."""

    created: list[RelationInput]
    skipped: list[RelationInput]


class ObservationsAddedItem(_Message, frozen=True, tag="ObservationsAddedItem"):
    entity_name: str
    added_observations: list[str]


class ObservationsAdded(_Message, frozen=True, tag="ObservationsAdded"):
    """One item per input item, in input order."""

    results: list[ObservationsAddedItem]


class EntitiesDeleted(_Message, frozen=True, tag="EntitiesDeleted"):
    """Counts as defined in `actors.decide` (delete_entities)."""

    requested: int
    deleted: int
    not_found: list[str]


class ObservationsDeleted(_Message, frozen=True, tag="ObservationsDeleted"):
    """Counts as defined in `actors.decide` (delete_observations)."""

    requested: int
    deleted: int
    entities_not_found: list[str]


class RelationsDeleted(_Message, frozen=True, tag="RelationsDeleted"):
    """Counts as defined in `actors.decide` (delete_relations)."""

    requested: int
    deleted: int


class EntityUpdateResult(_Message, frozen=True, tag="EntityUpdateResult"):
    """One entity after its update: `name` as asked, `new_name` and `entity_type` as it is now;
    `moved_observations` and `moved_relations` (their new keys) say what followed a rename."""

    name: str
    new_name: str
    entity_type: str
    renamed: bool
    retyped: bool
    moved_observations: int
    moved_relations: list[RelationInput]


class EntitiesUpdated(_Message, frozen=True, tag="EntitiesUpdated"):
    """One item per input item, in input order."""

    results: list[EntityUpdateResult]


class ObservationUpdateResult(_Message, frozen=True, tag="ObservationUpdateResult"):
    """`removed`: occurrences of the old content deleted; `added`: False when the new content
    was already there (it is never duplicated) or equals the old."""

    entity_name: str
    old_content: str
    new_content: str
    removed: int
    added: bool


class ObservationsUpdated(_Message, frozen=True, tag="ObservationsUpdated"):
    """One item per input item, in input order."""

    results: list[ObservationUpdateResult]


class RelationUpdateResult(_Message, frozen=True, tag="RelationUpdateResult"):
    """The relation before and after; `changed` is False when the edit asked for its own key."""

    before: RelationInput
    after: RelationInput
    changed: bool


class RelationsUpdated(_Message, frozen=True, tag="RelationsUpdated"):
    """One item per input item, in input order."""

    results: list[RelationUpdateResult]


class MergeResult(_Message, frozen=True, tag="MergeResult"):
    """What one merge moved: contents added to the target, relations repointed (new keys), and
    the source's relations dropped (old keys) because the target had them already or they
    linked source and target (which would have become a self-loop)."""

    source: str
    target: str
    moved_observations: list[str]
    moved_relations: list[RelationInput]
    dropped_relations: list[RelationInput]


class EntitiesMergedResult(_Message, frozen=True, tag="EntitiesMergedResult"):
    """One item per input item, in input order."""

    results: list[MergeResult]


CommandResult = (
    EntitiesCreated
    | RelationsCreated
    | ObservationsAdded
    | EntitiesDeleted
    | ObservationsDeleted
    | RelationsDeleted
    | EntitiesUpdated
    | ObservationsUpdated
    | RelationsUpdated
    | EntitiesMergedResult
)
