"""The inputs commands carry: one entity, relation, observation, node, edge or schema each,
frozen msgspec Structs tagged with their class name."""

from __future__ import annotations

import msgspec

__all__ = [
    "EdgeInput",
    "EdgeKey",
    "EdgeTargets",
    "EdgeUpdate",
    "EntityInput",
    "EntityMerge",
    "EntityUpdate",
    "MetadataChange",
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


class _Input(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of the inputs; never used on its own."""


class EntityInput(_Input, frozen=True, tag="EntityInput"):
    """An entity as create_entities takes it."""

    name: str
    entity_type: str
    observations: list[str]


class RelationInput(_Input, frozen=True, tag="RelationInput"):
    """A relation triple as create_relations and delete_relations take it."""

    from_entity: str
    to_entity: str
    relation_type: str


class ObservationInput(_Input, frozen=True, tag="ObservationInput"):
    """Contents to add to one entity (add_observations)."""

    entity_name: str
    contents: list[str]


class ObservationDeletion(_Input, frozen=True, tag="ObservationDeletion"):
    """Contents to delete from one entity (delete_observations)."""

    entity_name: str
    observations: list[str]


class EntityUpdate(_Input, frozen=True, tag="EntityUpdate"):
    """Rename and/or retype one entity (update_entities); None leaves that attribute as is."""

    name: str
    new_name: str | None = None
    new_entity_type: str | None = None


class ObservationUpdate(_Input, frozen=True, tag="ObservationUpdate"):
    """Replace one content on one entity with another (update_observations)."""

    entity_name: str
    old_content: str
    new_content: str


class RelationUpdate(_Input, frozen=True, tag="RelationUpdate"):
    """Change one relation's type and/or endpoints (update_relations); None keeps the value."""

    from_entity: str
    to_entity: str
    relation_type: str
    new_from: str | None = None
    new_to: str | None = None
    new_relation_type: str | None = None


class EntityMerge(_Input, frozen=True, tag="EntityMerge"):
    """Merge `source` into `target` (merge_entities)."""

    source: str
    target: str


# Inputs of the schema-driven family (MemoryMesh): a node is an entity, its `node_type` the
# entity type, its metadata the entity's observations; an edge is a relation.


class NodeInput(_Input, frozen=True, tag="NodeInput"):
    """A node as add_nodes takes it (and as the mesh tools answer with it)."""

    name: str
    node_type: str
    metadata: list[str]


class NodeUpdate(_Input, frozen=True, tag="NodeUpdate"):
    """update_nodes: a new type and/or a metadata list replacing the whole list; None keeps."""

    name: str
    node_type: str | None = None
    metadata: list[str] | None = None


class EdgeKey(_Input, frozen=True, tag="EdgeKey"):
    """An edge's identity: (from, to, edge type)."""

    from_entity: str
    to_entity: str
    edge_type: str


class EdgeInput(_Input, frozen=True, tag="EdgeInput"):
    """An edge with its weight in [0, 1] (add_edges; 1.0 when the caller gives none)."""

    from_entity: str
    to_entity: str
    edge_type: str
    weight: float = 1.0


class EdgeUpdate(_Input, frozen=True, tag="EdgeUpdate"):
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


class MetadataChange(_Input, frozen=True, tag="MetadataChange"):
    """Metadata entries ("Key: Value" strings) to add to or delete from one node."""

    node_name: str
    entries: list[str]


class PropertyEntry(_Input, frozen=True, tag="PropertyEntry"):
    """Set one property of a typed node: every metadata entry whose key normalizes to `key`
    (see projections.metadata.normalize_key) is replaced by `entry`; None removes them."""

    key: str
    entry: str | None


class EdgeTargets(_Input, frozen=True, tag="EdgeTargets"):
    """The outgoing edges of one type a typed node should have after an update: exactly these
    targets (an empty list removes them all)."""

    edge_type: str
    targets: list[str]


class SchemaDefinition(_Input, frozen=True, tag="SchemaDefinition"):
    """An entity-type schema as a file defines it: canonical JSON text and its digest."""

    type_name: str
    schema_json: str
    digest: str
    source: str = ""
