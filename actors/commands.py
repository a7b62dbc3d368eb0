"""Commands the graph writer decides, their inputs, and the results it answers with.

Commands are imperative and plural, mirroring the official memory tools (`create_entities` is
`CreateEntities`). All are frozen msgspec Structs tagged with their class name, so they can
cross threads and, if ever needed, the wire. Fields may be given by position or keyword.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from actors.command_inputs import (
    EdgeInput,
    EdgeKey,
    EdgeTargets,
    EdgeUpdate,
    EntityInput,
    EntityMerge,
    EntityUpdate,
    MetadataChange,
    NodeInput,
    NodeUpdate,
    ObservationDeletion,
    ObservationInput,
    ObservationUpdate,
    PropertyEntry,
    RelationInput,
    RelationUpdate,
    SchemaDefinition,
)
from actors.results import (
    AddEdgesResult,
    AddMetadataResult,
    AddNodesResult,
    AddObservationsResult,
    AddObservationsResultItem,
    CommandResult,
    CommitTransactionResult,
    CreateEntitiesResult,
    CreateRelationsResult,
    DeleteEdgesResult,
    DeleteEntitiesResult,
    DeleteMetadataResult,
    DeleteNodesResult,
    DeleteObservationsResult,
    DeleteRelationsResult,
    EntityUpdateResult,
    MergeEntitiesResult,
    MergeResult,
    ObservationUpdateResult,
    RegisterSchemasResult,
    RelationUpdateResult,
    SetNodePropertiesResult,
    UpdateEdgesResult,
    UpdateEntitiesResult,
    UpdateNodesResult,
    UpdateObservationsResult,
    UpdateRelationsResult,
)

__all__ = [
    "AddEdges",
    "AddEdgesResult",
    "AddMetadata",
    "AddMetadataResult",
    "AddNodes",
    "AddNodesResult",
    "AddObservations",
    "AddObservationsResult",
    "AddObservationsResultItem",
    "Command",
    "CommandOf",
    "CommandResult",
    "CommitTransaction",
    "CommitTransactionResult",
    "CreateEntities",
    "CreateEntitiesResult",
    "CreateRelations",
    "CreateRelationsResult",
    "DeleteEdges",
    "DeleteEdgesResult",
    "DeleteEntities",
    "DeleteEntitiesResult",
    "DeleteMetadata",
    "DeleteMetadataResult",
    "DeleteNodes",
    "DeleteNodesResult",
    "DeleteObservations",
    "DeleteObservationsResult",
    "DeleteRelations",
    "DeleteRelationsResult",
    "EdgeInput",
    "EdgeKey",
    "EdgeTargets",
    "EdgeUpdate",
    "EntityInput",
    "EntityMerge",
    "EntityUpdate",
    "EntityUpdateResult",
    "MergeEntities",
    "MergeEntitiesResult",
    "MergeResult",
    "MetadataChange",
    "NodeInput",
    "NodeUpdate",
    "ObservationDeletion",
    "ObservationInput",
    "ObservationUpdate",
    "ObservationUpdateResult",
    "PropertyEntry",
    "RegisterSchemas",
    "RegisterSchemasResult",
    "RelationInput",
    "RelationUpdate",
    "RelationUpdateResult",
    "SchemaDefinition",
    "SetNodeProperties",
    "SetNodePropertiesResult",
    "UpdateEdges",
    "UpdateEdgesResult",
    "UpdateEntities",
    "UpdateEntitiesResult",
    "UpdateNodes",
    "UpdateNodesResult",
    "UpdateObservations",
    "UpdateObservationsResult",
    "UpdateRelations",
    "UpdateRelationsResult",
]


R_co = TypeVar("R_co", covariant=True)


class CommandOf(msgspec.Struct, Generic[R_co], frozen=True, tag_field="type"):
    """A command the writer answers with an `R_co`: `GraphGateway.execute(CreateEntities(...))`
    is typed `CreateEntitiesResult`."""


# --- commands -------------------------------------------------------------------------------


class CreateEntities(CommandOf[CreateEntitiesResult], frozen=True, tag="CreateEntities"):
    entities: list[EntityInput]


class CreateRelations(CommandOf[CreateRelationsResult], frozen=True, tag="CreateRelations"):
    relations: list[RelationInput]


class AddObservations(CommandOf[AddObservationsResult], frozen=True, tag="AddObservations"):
    observations: list[ObservationInput]


class DeleteEntities(CommandOf[DeleteEntitiesResult], frozen=True, tag="DeleteEntities"):
    entity_names: list[str]


class DeleteObservations(
    CommandOf[DeleteObservationsResult], frozen=True, tag="DeleteObservations"
):
    deletions: list[ObservationDeletion]


class DeleteRelations(CommandOf[DeleteRelationsResult], frozen=True, tag="DeleteRelations"):
    relations: list[RelationInput]


class UpdateEntities(CommandOf[UpdateEntitiesResult], frozen=True, tag="UpdateEntities"):
    updates: list[EntityUpdate]


class UpdateObservations(
    CommandOf[UpdateObservationsResult], frozen=True, tag="UpdateObservations"
):
    updates: list[ObservationUpdate]


class UpdateRelations(CommandOf[UpdateRelationsResult], frozen=True, tag="UpdateRelations"):
    updates: list[RelationUpdate]


class MergeEntities(CommandOf[MergeEntitiesResult], frozen=True, tag="MergeEntities"):
    merges: list[EntityMerge]


# --- schema-driven family (MemoryMesh) ---


class AddNodes(CommandOf[AddNodesResult], frozen=True, tag="AddNodes"):
    nodes: list[NodeInput]


class UpdateNodes(CommandOf[UpdateNodesResult], frozen=True, tag="UpdateNodes"):
    updates: list[NodeUpdate]


class DeleteNodes(CommandOf[DeleteNodesResult], frozen=True, tag="DeleteNodes"):
    """Delete nodes and every edge touching them. With `node_type` set (delete_<type>), each
    named node must exist with that type; without it, missing names are ignored."""

    names: list[str]
    node_type: str | None = None


class AddEdges(CommandOf[AddEdgesResult], frozen=True, tag="AddEdges"):
    edges: list[EdgeInput]


class UpdateEdges(CommandOf[UpdateEdgesResult], frozen=True, tag="UpdateEdges"):
    updates: list[EdgeUpdate]


class DeleteEdges(CommandOf[DeleteEdgesResult], frozen=True, tag="DeleteEdges"):
    edges: list[EdgeKey]


class AddMetadata(CommandOf[AddMetadataResult], frozen=True, tag="AddMetadata"):
    changes: list[MetadataChange]


class DeleteMetadata(CommandOf[DeleteMetadataResult], frozen=True, tag="DeleteMetadata"):
    changes: list[MetadataChange]


class SetNodeProperties(CommandOf[SetNodePropertiesResult], frozen=True, tag="SetNodeProperties"):
    """update_<type>: the node `name` must exist with type `node_type`; each entry replaces
    the metadata of its key, each EdgeTargets replaces the node's outgoing edges of its type
    (targets must exist; an edge kept keeps its weight)."""

    name: str
    node_type: str
    entries: list[PropertyEntry]
    edges: list[EdgeTargets] = []


class RegisterSchemas(CommandOf[RegisterSchemasResult], frozen=True, tag="RegisterSchemas"):
    """Bring schemas into force (SchemaRegistered) and retire others (SchemaRetired). A
    definition whose digest equals the one in force, or a retirement of a type not in force,
    writes nothing."""

    registered: list[SchemaDefinition]
    retired: list[str] = []


class CommitTransaction(CommandOf[CommitTransactionResult], frozen=True, tag="CommitTransaction"):
    """Several commands decided in order, each seeing the ones before, and appended all or
    nothing: if any step is rejected, the whole transaction is, and nothing is written."""

    steps: list[Command]


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
    | AddNodes
    | UpdateNodes
    | DeleteNodes
    | AddEdges
    | UpdateEdges
    | DeleteEdges
    | AddMetadata
    | DeleteMetadata
    | SetNodeProperties
    | RegisterSchemas
    | CommitTransaction
)
