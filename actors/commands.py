"""Commands the graph writer decides, their inputs, and the results it answers with.

Commands are imperative and plural, mirroring the official memory tools (`create_entities` is
`CreateEntities`). All are frozen msgspec Structs whose encoded names are the tools' wire
names (camelCase). Fields may be given by position or keyword. Inputs live in
actors.command_inputs, results in actors.results; both are re-exported here.
"""

from __future__ import annotations

import msgspec

from actors.command_base import CommandOf
from actors.command_inputs import (
    EdgeInput,
    EdgeKey,
    EdgeTargets,
    EdgeUpdate,
    EntityInput,
    EntityMerge,
    EntityUpdate,
    MetadataChange,
    Name,
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
from actors.graph_commands import (
    GraphAdjust,
    GraphAudit,
    GraphDelete,
    GraphRelate,
    GraphRelateBatch,
)
from actors.graph_maintenance import (
    GraphDecay,
    GraphPrune,
)
from actors.graph_merge_commands import GraphMerge, GraphUnmerge
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
    "GraphAdjust",
    "GraphAudit",
    "GraphDelete",
    "GraphMerge",
    "GraphRelate",
    "GraphRelateBatch",
    "GraphUnmerge",
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


# --- commands -------------------------------------------------------------------------------


class CreateEntities(CommandOf[CreateEntitiesResult], frozen=True):
    entities: list[EntityInput]


class CreateRelations(CommandOf[CreateRelationsResult], frozen=True):
    relations: list[RelationInput]


class AddObservations(CommandOf[AddObservationsResult], frozen=True):
    observations: list[ObservationInput]


class DeleteEntities(CommandOf[DeleteEntitiesResult], frozen=True):
    entity_names: list[Name]


class DeleteObservations(CommandOf[DeleteObservationsResult], frozen=True):
    deletions: list[ObservationDeletion]


class DeleteRelations(CommandOf[DeleteRelationsResult], frozen=True):
    relations: list[RelationInput]


class UpdateEntities(CommandOf[UpdateEntitiesResult], frozen=True):
    updates: list[EntityUpdate] = msgspec.field(name="entities")


class UpdateObservations(CommandOf[UpdateObservationsResult], frozen=True):
    updates: list[ObservationUpdate]


class UpdateRelations(CommandOf[UpdateRelationsResult], frozen=True):
    updates: list[RelationUpdate] = msgspec.field(name="relations")


class MergeEntities(CommandOf[MergeEntitiesResult], frozen=True):
    merges: list[EntityMerge]


# --- schema-driven family (MemoryMesh) ---


class AddNodes(CommandOf[AddNodesResult], frozen=True):
    nodes: list[NodeInput]


class UpdateNodes(CommandOf[UpdateNodesResult], frozen=True):
    updates: list[NodeUpdate] = msgspec.field(name="nodes")


class DeleteNodes(CommandOf[DeleteNodesResult], frozen=True):
    """Delete nodes and every edge touching them. With `node_type` set (delete_<type>), each
    named node must exist with that type; without it, missing names are ignored."""

    names: list[Name] = msgspec.field(name="nodeNames")
    node_type: str | None = None


class AddEdges(CommandOf[AddEdgesResult], frozen=True):
    edges: list[EdgeInput]


class UpdateEdges(CommandOf[UpdateEdgesResult], frozen=True):
    updates: list[EdgeUpdate] = msgspec.field(name="edges")


class DeleteEdges(CommandOf[DeleteEdgesResult], frozen=True):
    edges: list[EdgeKey]


class AddMetadata(CommandOf[AddMetadataResult], frozen=True):
    changes: list[MetadataChange]


class DeleteMetadata(CommandOf[DeleteMetadataResult], frozen=True):
    changes: list[MetadataChange]


class SetNodeProperties(CommandOf[SetNodePropertiesResult], frozen=True):
    """update_<type>: the node `name` must exist with type `node_type`; each entry replaces
    the metadata of its key, each EdgeTargets replaces the node's outgoing edges of its type
    (targets must exist; an edge kept keeps its weight)."""

    name: str
    node_type: str
    entries: list[PropertyEntry]
    edges: list[EdgeTargets] = []


class RegisterSchemas(CommandOf[RegisterSchemasResult], frozen=True):
    """Bring schemas into force (SchemaRegistered) and retire others (SchemaRetired). A
    definition whose digest equals the one in force, or a retirement of a type not in force,
    writes nothing."""

    registered: list[SchemaDefinition]
    retired: list[str] = []


class CommitTransaction(CommandOf[CommitTransactionResult], frozen=True):
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
    | GraphRelate
    | GraphRelateBatch
    | GraphAdjust
    | GraphDelete
    | GraphAudit
    | GraphDecay
    | GraphPrune
    | GraphMerge
    | GraphUnmerge
)
