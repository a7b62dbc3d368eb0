"""Commands the graph writer decides, their inputs, and the results it answers with.

Commands are imperative and plural, mirroring the official memory tools (`create_entities` is
`CreateEntities`). All are frozen msgspec Structs tagged with their class name, so they can
cross threads and, if ever needed, the wire. Fields may be given by position or keyword.
"""

from __future__ import annotations

import msgspec

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


# Inputs of the schema-driven family (MemoryMesh): a node is an entity, its `node_type` the
# entity type, its metadata the entity's observations; an edge is a relation.


class NodeInput(_Message, frozen=True, tag="NodeInput"):
    """A node as add_nodes takes it (and as the mesh tools answer with it)."""

    name: str
    node_type: str
    metadata: list[str]


class NodeUpdate(_Message, frozen=True, tag="NodeUpdate"):
    """update_nodes: a new type and/or a metadata list replacing the whole list; None keeps."""

    name: str
    node_type: str | None = None
    metadata: list[str] | None = None


class EdgeKey(_Message, frozen=True, tag="EdgeKey"):
    """An edge's identity: (from, to, edge type)."""

    from_entity: str
    to_entity: str
    edge_type: str


class EdgeInput(_Message, frozen=True, tag="EdgeInput"):
    """An edge with its weight in [0, 1] (add_edges; 1.0 when the caller gives none)."""

    from_entity: str
    to_entity: str
    edge_type: str
    weight: float = 1.0


class EdgeUpdate(_Message, frozen=True, tag="EdgeUpdate"):
    """update_edges, one item: `weight` is new evidence averaged with the current weight,
    (current + weight) / 2 (MemoryMesh's rule); `new_weight` replaces it (MemoryMesh); the
    `new_*` endpoint and type fields repoint the edge. None leaves that part as it is."""

    from_entity: str
    to_entity: str
    edge_type: str
    weight: float | None = None
    new_weight: float | None = None
    new_from: str | None = None
    new_to: str | None = None
    new_edge_type: str | None = None


class MetadataChange(_Message, frozen=True, tag="MetadataChange"):
    """Metadata entries ("Key: Value" strings) to add to or delete from one node."""

    node_name: str
    entries: list[str]


class PropertyEntry(_Message, frozen=True, tag="PropertyEntry"):
    """Set one property of a typed node: every metadata entry whose key normalizes to `key`
    (see projections.metadata.normalize_key) is replaced by `entry`; None removes them."""

    key: str
    entry: str | None


class EdgeTargets(_Message, frozen=True, tag="EdgeTargets"):
    """The outgoing edges of one type a typed node should have after an update: exactly these
    targets (an empty list removes them all)."""

    edge_type: str
    targets: list[str]


class SchemaDefinition(_Message, frozen=True, tag="SchemaDefinition"):
    """An entity-type schema as a file defines it: canonical JSON text and its digest."""

    type_name: str
    schema_json: str
    digest: str
    source: str = ""


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


# --- schema-driven family (MemoryMesh) ---


class AddNodes(_Message, frozen=True, tag="AddNodes"):
    nodes: list[NodeInput]


class UpdateNodes(_Message, frozen=True, tag="UpdateNodes"):
    updates: list[NodeUpdate]


class DeleteNodes(_Message, frozen=True, tag="DeleteNodes"):
    """Delete nodes and every edge touching them. With `node_type` set (delete_<type>), each
    named node must exist with that type; without it, missing names are ignored."""

    names: list[str]
    node_type: str | None = None


class AddEdges(_Message, frozen=True, tag="AddEdges"):
    edges: list[EdgeInput]


class UpdateEdges(_Message, frozen=True, tag="UpdateEdges"):
    updates: list[EdgeUpdate]


class DeleteEdges(_Message, frozen=True, tag="DeleteEdges"):
    edges: list[EdgeKey]


class AddMetadata(_Message, frozen=True, tag="AddMetadata"):
    changes: list[MetadataChange]


class DeleteMetadata(_Message, frozen=True, tag="DeleteMetadata"):
    changes: list[MetadataChange]


class SetNodeProperties(_Message, frozen=True, tag="SetNodeProperties"):
    """update_<type>: the node `name` must exist with type `node_type`; each entry replaces
    the metadata of its key, each EdgeTargets replaces the node's outgoing edges of its type
    (targets must exist; an edge kept keeps its weight)."""

    name: str
    node_type: str
    entries: list[PropertyEntry]
    edges: list[EdgeTargets] = []


class RegisterSchemas(_Message, frozen=True, tag="RegisterSchemas"):
    """Bring schemas into force (SchemaRegistered) and retire others (SchemaRetired). A
    definition whose digest equals the one in force, or a retirement of a type not in force,
    writes nothing."""

    registered: list[SchemaDefinition]
    retired: list[str] = []


class CommitTransaction(_Message, frozen=True, tag="CommitTransaction"):
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


# --- results --------------------------------------------------------------------------------


class CreateEntitiesResult(_Message, frozen=True, tag="CreateEntitiesResult"):
    """`created` in input order; `skipped`: the name of each input that was not created."""

    created: list[EntityInput]
    skipped: list[str]


class CreateRelationsResult(_Message, frozen=True, tag="CreateRelationsResult"):
    """`created` and `skipped` (already there, or earlier in the batch), in input order."""

    created: list[RelationInput]
    skipped: list[RelationInput]


class AddObservationsResultItem(_Message, frozen=True, tag="AddObservationsResultItem"):
    entity_name: str
    added_observations: list[str]


class AddObservationsResult(_Message, frozen=True, tag="AddObservationsResult"):
    """One item per input item, in input order."""

    results: list[AddObservationsResultItem]


class DeleteEntitiesResult(_Message, frozen=True, tag="DeleteEntitiesResult"):
    """Counts as defined in `actors.decide` (delete_entities)."""

    requested: int
    deleted: int
    not_found: list[str]


class DeleteObservationsResult(_Message, frozen=True, tag="DeleteObservationsResult"):
    """Counts as defined in `actors.decide` (delete_observations)."""

    requested: int
    deleted: int
    entities_not_found: list[str]


class DeleteRelationsResult(_Message, frozen=True, tag="DeleteRelationsResult"):
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


class UpdateEntitiesResult(_Message, frozen=True, tag="UpdateEntitiesResult"):
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


class UpdateObservationsResult(_Message, frozen=True, tag="UpdateObservationsResult"):
    """One item per input item, in input order."""

    results: list[ObservationUpdateResult]


class RelationUpdateResult(_Message, frozen=True, tag="RelationUpdateResult"):
    """The relation before and after; `changed` is False when the edit asked for its own key."""

    before: RelationInput
    after: RelationInput
    changed: bool


class UpdateRelationsResult(_Message, frozen=True, tag="UpdateRelationsResult"):
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


class MergeEntitiesResult(_Message, frozen=True, tag="MergeEntitiesResult"):
    """One item per input item, in input order."""

    results: list[MergeResult]


# --- schema-driven family (MemoryMesh) ---


class AddNodesResult(_Message, frozen=True, tag="AddNodesResult"):
    nodes: list[NodeInput]


class UpdateNodesResult(_Message, frozen=True, tag="UpdateNodesResult"):
    """Each updated node as it is now, in input order."""

    nodes: list[NodeInput]


class DeleteNodesResult(_Message, frozen=True, tag="DeleteNodesResult"):
    """`deleted` and `not_found` (distinct names, input order); `edges_removed`: the edges the
    deletion cascaded to."""

    deleted: list[str]
    not_found: list[str]
    edges_removed: list[EdgeKey]


class AddEdgesResult(_Message, frozen=True, tag="AddEdgesResult"):
    edges: list[EdgeInput]


class UpdateEdgesResult(_Message, frozen=True, tag="UpdateEdgesResult"):
    """Each edge as it is after its update, in input order."""

    edges: list[EdgeInput]


class DeleteEdgesResult(_Message, frozen=True, tag="DeleteEdgesResult"):
    """The listed edges that existed (each once); the others were not there."""

    deleted: list[EdgeKey]


class AddMetadataResult(_Message, frozen=True, tag="AddMetadataResult"):
    """Per input item: the entries actually added (those the node lacked)."""

    results: list[MetadataChange]


class DeleteMetadataResult(_Message, frozen=True, tag="DeleteMetadataResult"):
    """Per input item: the entries actually removed (those the node had)."""

    results: list[MetadataChange]


class SetNodePropertiesResult(_Message, frozen=True, tag="SetNodePropertiesResult"):
    """The node after the update, and the edges removed and added."""

    node: NodeInput
    removed_edges: list[EdgeKey]
    added_edges: list[EdgeInput]


class RegisterSchemasResult(_Message, frozen=True, tag="RegisterSchemasResult"):
    """Type names actually registered (new or changed) and retired."""

    registered: list[str]
    retired: list[str]


class CommitTransactionResult(_Message, frozen=True, tag="CommitTransactionResult"):
    """One result per step, in order."""

    results: list[CommandResult]


CommandResult = (
    CreateEntitiesResult
    | CreateRelationsResult
    | AddObservationsResult
    | DeleteEntitiesResult
    | DeleteObservationsResult
    | DeleteRelationsResult
    | UpdateEntitiesResult
    | UpdateObservationsResult
    | UpdateRelationsResult
    | MergeEntitiesResult
    | AddNodesResult
    | UpdateNodesResult
    | DeleteNodesResult
    | AddEdgesResult
    | UpdateEdgesResult
    | DeleteEdgesResult
    | AddMetadataResult
    | DeleteMetadataResult
    | SetNodePropertiesResult
    | RegisterSchemasResult
    | CommitTransactionResult
)
