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
    "EntityInput",
    "ObservationDeletion",
    "ObservationInput",
    "ObservationsAdded",
    "ObservationsAddedItem",
    "ObservationsDeleted",
    "RelationInput",
    "RelationsCreated",
    "RelationsDeleted",
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


Command = (
    CreateEntities
    | CreateRelations
    | AddObservations
    | DeleteEntities
    | DeleteObservations
    | DeleteRelations
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


CommandResult = (
    EntitiesCreated
    | RelationsCreated
    | ObservationsAdded
    | EntitiesDeleted
    | ObservationsDeleted
    | RelationsDeleted
)
