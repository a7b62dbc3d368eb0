"""The inputs commands carry: one entity, relation, observation, node, edge or schema each,
frozen msgspec Structs tagged with their class name."""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = [
    "TEXT_KIND",
    "Content",
    "EdgeInput",
    "EdgeKey",
    "EdgeTargets",
    "EdgeUpdate",
    "EntityInput",
    "EntityMerge",
    "EntityUpdate",
    "MetadataChange",
    "Name",
    "NodeInput",
    "NodeUpdate",
    "ObservationDeletion",
    "ObservationInput",
    "ObservationUpdate",
    "PropertyEntry",
    "RelationInput",
    "RelationUpdate",
    "SchemaDefinition",
]


# The kind of text a string field holds, for the edge's input checks (graphmem.tools.
# input_checks): a name (entity, type, relation type, key: one line, short) or content (an
# observation or a metadata entry: line breaks allowed, long).
TEXT_KIND = "text_kind"
Name = Annotated[str, msgspec.Meta(extra={TEXT_KIND: "name"})]
Content = Annotated[str, msgspec.Meta(extra={TEXT_KIND: "content"})]


class _Input(msgspec.Struct, frozen=True, rename="camel"):
    """Base of the inputs; never used on its own. Encoded names are the tools' camelCase wire
    names, so a tool's arguments convert straight into its command (msgspec.convert)."""


class EntityInput(_Input, frozen=True):
    """An entity as create_entities takes it."""

    name: Name
    entity_type: Name
    observations: list[Content]


class RelationInput(_Input, frozen=True):
    """A relation triple as create_relations and delete_relations take it."""

    from_entity: Name = msgspec.field(name="from")
    to_entity: Name = msgspec.field(name="to")
    relation_type: Name


class ObservationInput(_Input, frozen=True):
    """Contents to add to one entity (add_observations)."""

    entity_name: Name
    contents: list[Content]


class ObservationDeletion(_Input, frozen=True):
    """Contents to delete from one entity (delete_observations)."""

    entity_name: Name
    observations: list[Content]


class EntityUpdate(_Input, frozen=True):
    """Rename and/or retype one entity (update_entities); None leaves that attribute as is."""

    name: Name
    new_name: Name | None = None
    new_entity_type: Name | None = None


class ObservationUpdate(_Input, frozen=True):
    """Replace one content on one entity with another (update_observations)."""

    entity_name: Name
    old_content: Content
    new_content: Content


class RelationUpdate(_Input, frozen=True):
    """Change one relation's type and/or endpoints (update_relations); None keeps the value."""

    from_entity: Name = msgspec.field(name="from")
    to_entity: Name = msgspec.field(name="to")
    relation_type: Name
    new_from: Name | None = None
    new_to: Name | None = None
    new_relation_type: Name | None = None


class EntityMerge(_Input, frozen=True):
    """Merge `source` into `target` (merge_entities)."""

    source: Name = msgspec.field(name="from")
    target: Name = msgspec.field(name="into")


# Inputs of the schema-driven family (MemoryMesh): a node is an entity, its `node_type` the
# entity type, its metadata the entity's observations; an edge is a relation.


class NodeInput(_Input, frozen=True):
    """A node as add_nodes takes it (and as the mesh tools answer with it)."""

    name: Name
    node_type: Name
    metadata: list[Content]


class NodeUpdate(_Input, frozen=True):
    """update_nodes: a new type and/or a metadata list replacing the whole list; None keeps."""

    name: Name
    node_type: Name | None = None
    metadata: list[Content] | None = None


class EdgeKey(_Input, frozen=True):
    """An edge's identity: (from, to, edge type)."""

    from_entity: Name = msgspec.field(name="from")
    to_entity: Name = msgspec.field(name="to")
    edge_type: Name


class EdgeInput(_Input, frozen=True):
    """An edge with its weight in [0, 1] (add_edges; 1.0 when the caller gives none)."""

    from_entity: Name = msgspec.field(name="from")
    to_entity: Name = msgspec.field(name="to")
    edge_type: Name
    weight: float = 1.0


class EdgeUpdate(_Input, frozen=True):
    """update_edges, one item: `weight` is new evidence averaged with the current weight,
    (current + weight) / 2 (MemoryMesh's rule); `new_weight` replaces it (MemoryMesh); the
    `new_*` endpoint and type fields repoint the edge. None leaves that part as it is."""

    from_entity: Name = msgspec.field(name="from")
    to_entity: Name = msgspec.field(name="to")
    edge_type: Name
    weight: float | None = None
    new_weight: float | None = None
    new_from: Name | None = None
    new_to: Name | None = None
    new_edge_type: Name | None = None


class MetadataChange(_Input, frozen=True):
    """Metadata entries ("Key: Value" strings) to add to or delete from one node."""

    node_name: Name
    entries: list[Content]


class PropertyEntry(_Input, frozen=True):
    """Set one property of a typed node: every metadata entry whose key normalizes to `key`
    (see projections.metadata.normalize_key) is replaced by `entry`; None removes them."""

    key: str
    entry: str | None


class EdgeTargets(_Input, frozen=True):
    """The outgoing edges of one type a typed node should have after an update: exactly these
    targets (an empty list removes them all)."""

    edge_type: Name
    targets: list[Name]


class SchemaDefinition(_Input, frozen=True):
    """An entity-type schema as a file defines it: canonical JSON text and its digest."""

    type_name: str
    schema_json: str
    digest: str
    source: str = ""
