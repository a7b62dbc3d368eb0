"""What the graph writer answers a command with once its events are appended: one result type
per command (`CreateEntities` answers `CreateEntitiesResult`), frozen msgspec Structs like the
commands."""

from __future__ import annotations

import msgspec

from actors.command_inputs import (
    EdgeInput,
    EdgeKey,
    EntityInput,
    MetadataChange,
    NodeInput,
    RelationInput,
)
from actors.graph_maintenance import GraphDecayResult, GraphPruneResult
from actors.graph_merge_commands import GraphMergeResult, GraphUnmergeResult
from actors.graph_results import (
    GraphAdjustResult,
    GraphAuditResult,
    GraphDeleteResult,
    GraphRelateBatchResult,
    GraphRelateResult,
)

__all__ = [
    "AddEdgesResult",
    "AddMetadataResult",
    "AddNodesResult",
    "AddObservationsResult",
    "AddObservationsResultItem",
    "CommandResult",
    "CommitTransactionResult",
    "CreateEntitiesResult",
    "CreateRelationsResult",
    "DeleteEdgesResult",
    "DeleteEntitiesResult",
    "DeleteMetadataResult",
    "DeleteNodesResult",
    "DeleteObservationsResult",
    "DeleteRelationsResult",
    "EntityUpdateResult",
    "GraphAdjustResult",
    "GraphAuditResult",
    "GraphDeleteResult",
    "GraphRelateBatchResult",
    "GraphRelateResult",
    "MergeEntitiesResult",
    "MergeResult",
    "ObservationUpdateResult",
    "RegisterSchemasResult",
    "RelationUpdateResult",
    "SetNodePropertiesResult",
    "UpdateEdgesResult",
    "UpdateEntitiesResult",
    "UpdateNodesResult",
    "UpdateObservationsResult",
    "UpdateRelationsResult",
]


class _Result(msgspec.Struct, frozen=True, rename="camel"):
    """Base of the results; never used on its own. Encoded names are the tools' camelCase
    wire names, so `msgspec.to_builtins` of a result is what a tool answers with."""


class CreateEntitiesResult(_Result, frozen=True):
    """`created` in input order; `skipped`: the name of each input that was not created."""

    created: list[EntityInput]
    skipped: list[str]


class CreateRelationsResult(_Result, frozen=True):
    """`created` and `skipped` (already there, or earlier in the batch), in input order."""

    created: list[RelationInput]
    skipped: list[RelationInput]


class AddObservationsResultItem(_Result, frozen=True):
    entity_name: str
    added_observations: list[str]


class AddObservationsResult(_Result, frozen=True):
    """One item per input item, in input order."""

    results: list[AddObservationsResultItem]


class DeleteEntitiesResult(_Result, frozen=True):
    """Counts as defined in `actors.decide` (delete_entities)."""

    requested: int
    deleted: int
    not_found: list[str]


class DeleteObservationsResult(_Result, frozen=True):
    """Counts as defined in `actors.decide` (delete_observations)."""

    requested: int
    deleted: int
    entities_not_found: list[str]


class DeleteRelationsResult(_Result, frozen=True):
    """Counts as defined in `actors.decide` (delete_relations)."""

    requested: int
    deleted: int


class EntityUpdateResult(_Result, frozen=True):
    """One entity after its update: `name` as asked, `new_name` and `entity_type` as it is now;
    `moved_observations` and `moved_relations` (their new keys) say what followed a rename."""

    name: str
    new_name: str
    entity_type: str
    renamed: bool
    retyped: bool
    moved_observations: int
    moved_relations: list[RelationInput]


class UpdateEntitiesResult(_Result, frozen=True):
    """One item per input item, in input order."""

    results: list[EntityUpdateResult]


class ObservationUpdateResult(_Result, frozen=True):
    """`removed`: occurrences of the old content deleted; `added`: False when the new content
    was already there (it is never duplicated) or equals the old."""

    entity_name: str
    old_content: str
    new_content: str
    removed: int
    added: bool


class UpdateObservationsResult(_Result, frozen=True):
    """One item per input item, in input order."""

    results: list[ObservationUpdateResult]


class RelationUpdateResult(_Result, frozen=True):
    """The relation before and after; `changed` is False when the edit asked for its own key."""

    before: RelationInput
    after: RelationInput
    changed: bool


class UpdateRelationsResult(_Result, frozen=True):
    """One item per input item, in input order."""

    results: list[RelationUpdateResult]


class MergeResult(_Result, frozen=True):
    """What one merge moved: contents added to the target, relations repointed (new keys), and
    the source's relations dropped (old keys) because the target had them already or they
    linked source and target (which would have become a self-loop)."""

    source: str = msgspec.field(name="from")
    target: str = msgspec.field(name="into")
    moved_observations: list[str]
    moved_relations: list[RelationInput]
    dropped_relations: list[RelationInput]


class MergeEntitiesResult(_Result, frozen=True):
    """One item per input item, in input order."""

    results: list[MergeResult]


# --- schema-driven family (MemoryMesh) ---


class AddNodesResult(_Result, frozen=True):
    nodes: list[NodeInput]


class UpdateNodesResult(_Result, frozen=True):
    """Each updated node as it is now, in input order."""

    nodes: list[NodeInput]


class DeleteNodesResult(_Result, frozen=True):
    """`deleted` and `not_found` (distinct names, input order); `edges_removed`: the edges the
    deletion cascaded to."""

    deleted: list[str]
    not_found: list[str]
    edges_removed: list[EdgeKey]


class AddEdgesResult(_Result, frozen=True):
    edges: list[EdgeInput]


class UpdateEdgesResult(_Result, frozen=True):
    """Each edge as it is after its update, in input order."""

    edges: list[EdgeInput]


class DeleteEdgesResult(_Result, frozen=True):
    """The listed edges that existed (each once); the others were not there."""

    deleted: list[EdgeKey]


class AddMetadataResult(_Result, frozen=True):
    """Per input item: the entries actually added (those the node lacked)."""

    results: list[MetadataChange]


class DeleteMetadataResult(_Result, frozen=True):
    """Per input item: the entries actually removed (those the node had)."""

    results: list[MetadataChange]


class SetNodePropertiesResult(_Result, frozen=True):
    """The node after the update, and the edges removed (with the weight they had) and added."""

    node: NodeInput
    removed_edges: list[EdgeInput]
    added_edges: list[EdgeInput]


class RegisterSchemasResult(_Result, frozen=True):
    """Type names actually registered (new or changed) and retired."""

    registered: list[str]
    retired: list[str]


class CommitTransactionResult(_Result, frozen=True):
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
    | GraphRelateResult
    | GraphRelateBatchResult
    | GraphAdjustResult
    | GraphDeleteResult
    | GraphAuditResult
    | GraphDecayResult
    | GraphPruneResult
    | GraphMergeResult
    | GraphUnmergeResult
)
