"""Deciding the schema-driven family's commands (MemoryMesh's nodes, edges, metadata, typed nodes).

A node is an entity (its node type the entity type, its metadata the entity's observations) and
an edge is a relation with a weight, so these commands write the same events as the memory
tools. Each is pure and all or nothing: it is decided against a WorkingGraph and any rejection
(a CommandRejectedError) discards everything decided so far. Where upstream MemoryMesh and the
seed differ, the seed's rules apply (see docs: seed-origins, the **Rec.** lines): weights
default to 1.0 and must lie in [0, 1], new evidence is averaged with the current weight, a batch
may not name one node or edge twice, metadata is a set of entries, and a typed update that
fails writes nothing at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from actors.commands import (
    AddEdges,
    AddEdgesResult,
    AddMetadata,
    AddMetadataResult,
    AddNodes,
    AddNodesResult,
    DeleteEdges,
    DeleteEdgesResult,
    DeleteMetadata,
    DeleteMetadataResult,
    DeleteNodes,
    DeleteNodesResult,
    EdgeInput,
    EdgeKey,
    EdgeUpdate,
    MetadataChange,
    NodeInput,
    NodeUpdate,
    SetNodeProperties,
    SetNodePropertiesResult,
    UpdateEdges,
    UpdateEdgesResult,
    UpdateNodes,
    UpdateNodesResult,
)
from actors.errors import (
    BlankFieldError,
    ConflictingWeightsError,
    DuplicateItemError,
    EdgeExistsError,
    EdgeNotFoundError,
    InvalidWeightError,
    NodeExistsError,
    NodeNotFoundError,
    NothingToUpdateError,
    TypedNodeNotFoundError,
    edge_text,
)
from actors.graph_reader import GraphReader
from actors.working_graph import WorkingGraph, relation_key
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    ObservationAdded,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.graph import EntityView, RelationKey
from projections.metadata import normalize_key, parse_entry

__all__ = [
    "add_edges",
    "add_metadata",
    "add_nodes",
    "delete_edges",
    "delete_metadata",
    "delete_nodes",
    "set_node_properties",
    "update_edges",
    "update_nodes",
]


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _node(view: EntityView) -> NodeInput:
    return NodeInput(view.name, view.entity_type, list(view.observations))


def _alive(graph: GraphReader, name: str) -> EntityView:
    view = graph.entity(name)
    if view is None:
        raise NodeNotFoundError(name)
    return view


def _typed(graph: GraphReader, node_type: str, name: str) -> EntityView:
    view = graph.entity(name)
    if view is None or view.entity_type != node_type:
        raise TypedNodeNotFoundError(node_type, name, None if view is None else view.entity_type)
    return view


def _check_weight(key: RelationKey, weight: float) -> None:
    if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
        raise InvalidWeightError(key, weight)


def _edge_key(key: RelationKey) -> EdgeKey:
    return EdgeKey(*key)


# --- nodes ------------------------------------------------------------------------------------


def add_nodes(graph: GraphReader, command: AddNodes) -> tuple[list[AnyEvent], AddNodesResult]:
    """add_nodes: every name must be new — not alive with any type (NodeExistsError), not
    twice in the batch (DuplicateItemError) — and names and types non-empty. Each node gets
    EntityCreated, then ObservationAdded per distinct metadata entry in order (metadata is a
    set of entries: an exact repeat in one list is dropped). The result lists the nodes as
    created."""
    seen: set[str] = set()
    for node in command.nodes:
        if not node.name:
            raise BlankFieldError("name", "a node in add_nodes")
        if not node.node_type:
            raise BlankFieldError("nodeType", f"node {node.name}")
        if node.name in seen:
            raise DuplicateItemError(f"Node {node.name}")
        seen.add(node.name)
        if graph.has_entity(node.name):
            raise NodeExistsError(node.name, graph.entity_type(node.name))
    events: list[AnyEvent] = []
    added: list[NodeInput] = []
    for node in command.nodes:
        metadata = _distinct(node.metadata)
        events.append(EntityCreated(name=node.name, entity_type=node.node_type))
        events.extend(ObservationAdded(entity=node.name, content=entry) for entry in metadata)
        added.append(NodeInput(node.name, node.node_type, metadata))
    return events, AddNodesResult(added)


def update_nodes(
    graph: GraphReader, command: UpdateNodes
) -> tuple[list[AnyEvent], UpdateNodesResult]:
    """update_nodes, item by item (a later item sees the earlier): the node must exist
    (NodeNotFoundError). A different `node_type` is one EntityUpdated. A `metadata` list
    replaces the whole list: ObservationDeleted for each entry not in the new list, then
    ObservationAdded for each new entry the node lacks, in the new list's order; kept entries
    keep their place (an entry the node holds twice is collapsed to one, re-added in order).
    The result lists each node as it is after its item."""
    work = WorkingGraph(graph)
    return work.events, UpdateNodesResult([_update_node(work, item) for item in command.updates])


def _update_node(work: WorkingGraph, item: NodeUpdate) -> NodeInput:
    view = _alive(work, item.name)
    if item.node_type is not None and item.node_type != view.entity_type:
        if not item.node_type:
            raise BlankFieldError("nodeType", f"node {item.name}")
        work.retype_entity(view, item.node_type)
    if item.metadata is not None:
        wanted = _distinct(item.metadata)
        current = view.observations
        counts = {entry: current.count(entry) for entry in dict.fromkeys(current)}
        for entry, count in counts.items():
            if entry not in wanted or count > 1:
                work.delete_observation(item.name, entry)
        for entry in wanted:
            if counts.get(entry) != 1:
                work.add_observation(item.name, entry)
    return _node(_alive(work, item.name))


def delete_nodes(
    graph: GraphReader, command: DeleteNodes
) -> tuple[list[AnyEvent], DeleteNodesResult]:
    """delete_nodes / delete_<type>: EntityDeleted for each distinct alive name, then
    RelationDeleted for each visible edge touching one of them, each once, in creation order.
    Without `node_type` a missing name is listed in `not_found`; with it (delete_<type>) each
    name must be a node of that type, else the whole command is refused
    (TypedNodeNotFoundError)."""
    deleted: list[str] = []
    not_found: list[str] = []
    for name in _distinct(command.names):
        if command.node_type is not None:
            _typed(graph, command.node_type, name)
        (deleted if graph.has_entity(name) else not_found).append(name)
    events: list[AnyEvent] = [EntityDeleted(name=name) for name in deleted]
    removed = [relation_key(r) for r in graph.relations_of_any(deleted)]
    events.extend(
        RelationDeleted(from_entity=f, to_entity=t, relation_type=r) for f, t, r in removed
    )
    return events, DeleteNodesResult(deleted, not_found, [_edge_key(key) for key in removed])


# --- edges ------------------------------------------------------------------------------------


def add_edges(graph: GraphReader, command: AddEdges) -> tuple[list[AnyEvent], AddEdgesResult]:
    """add_edges: for each edge, in order: from, to and edge type non-empty
    (BlankFieldError); the weight a finite number in [0, 1] (InvalidWeightError); both ends
    existing nodes, `from` first (NodeNotFoundError); the triple not twice in the batch
    (DuplicateItemError) and not already a visible edge (EdgeExistsError). Then one
    RelationCreated per edge, with its weight (1.0 when none was given)."""
    seen: set[RelationKey] = set()
    for edge in command.edges:
        key = (edge.from_entity, edge.to_entity, edge.edge_type)
        for field, value in (("from", key[0]), ("to", key[1]), ("edgeType", key[2])):
            if not value:
                raise BlankFieldError(field, f"edge {edge_text(key)}")
        _check_weight(key, edge.weight)
        _alive(graph, key[0])
        _alive(graph, key[1])
        if key in seen:
            raise DuplicateItemError(f"Edge {edge_text(key)}")
        seen.add(key)
        if graph.has_relation(*key):
            raise EdgeExistsError(key)
    events: list[AnyEvent] = [
        RelationCreated(
            from_entity=edge.from_entity,
            to_entity=edge.to_entity,
            relation_type=edge.edge_type,
            weight=edge.weight,
        )
        for edge in command.edges
    ]
    return events, AddEdgesResult(list(command.edges))


def update_edges(
    graph: GraphReader, command: UpdateEdges
) -> tuple[list[AnyEvent], UpdateEdgesResult]:
    """update_edges, item by item (a later item sees the earlier). An item must ask for
    something (NothingToUpdateError) and not give both `weight` and `new_weight`
    (ConflictingWeightsError); either must lie in [0, 1] (InvalidWeightError); the edge must be
    visible (EdgeNotFoundError). `weight` is evidence averaged with the current weight,
    (current + weight) / 2; `new_weight` replaces it. A weight-only change is one
    RelationUpdated with the new absolute weight (nothing if it equals the current). New
    endpoints must exist (NodeNotFoundError) and the new key must not be another visible edge
    (EdgeExistsError); a repointed edge is RelationDeleted(old) + RelationCreated(new) keeping
    its attributes, with the new weight. The result lists each edge as it is after its item."""
    work = WorkingGraph(graph)
    return work.events, UpdateEdgesResult([_update_edge(work, item) for item in command.updates])


def _update_edge(work: WorkingGraph, item: EdgeUpdate) -> EdgeInput:
    old_key = (item.from_entity, item.to_entity, item.edge_type)
    asked = (item.weight, item.new_weight, item.new_from, item.new_to, item.new_edge_type)
    if all(value is None for value in asked):
        raise NothingToUpdateError(
            edge_text(old_key), "weight, newWeight, newFrom, newTo and/or newEdgeType"
        )
    if item.weight is not None and item.new_weight is not None:
        raise ConflictingWeightsError(old_key)
    for weight in (item.weight, item.new_weight):
        if weight is not None:
            _check_weight(old_key, weight)
    relation = work.relation(*old_key)
    if relation is None:
        raise EdgeNotFoundError(old_key)
    weight = relation.weight
    if item.weight is not None:
        weight = (relation.weight + item.weight) / 2
    elif item.new_weight is not None:
        weight = item.new_weight
    key = (
        old_key[0] if item.new_from is None else item.new_from,
        old_key[1] if item.new_to is None else item.new_to,
        old_key[2] if item.new_edge_type is None else item.new_edge_type,
    )
    if not key[2]:
        raise BlankFieldError("newEdgeType", f"edge {edge_text(old_key)}")
    _alive(work, key[0])
    _alive(work, key[1])
    if key != old_key:
        if work.has_relation(*key):
            raise EdgeExistsError(key)
        details = work.relation_details(*old_key)
        work.delete_relation(relation)
        work.create_relation(msgspec.structs.replace(relation, weight=weight), key, details)
    elif weight != relation.weight:
        work.record(
            RelationUpdated(
                from_entity=key[0], to_entity=key[1], relation_type=key[2], weight=weight
            )
        )
    return EdgeInput(*key, weight=weight)


def delete_edges(
    graph: GraphReader, command: DeleteEdges
) -> tuple[list[AnyEvent], DeleteEdgesResult]:
    """delete_edges: RelationDeleted for each listed triple that is a visible edge, each once;
    a miss is not an error. The result lists the edges deleted, in input order."""
    done: dict[RelationKey, None] = {}
    for edge in command.edges:
        key = (edge.from_entity, edge.to_entity, edge.edge_type)
        if key not in done and graph.has_relation(*key):
            done[key] = None
    events: list[AnyEvent] = [
        RelationDeleted(from_entity=f, to_entity=t, relation_type=r) for f, t, r in done
    ]
    return events, DeleteEdgesResult([_edge_key(key) for key in done])


# --- metadata ---------------------------------------------------------------------------------


def add_metadata(
    graph: GraphReader, command: AddMetadata
) -> tuple[list[AnyEvent], AddMetadataResult]:
    """add_metadata: every node must exist (NodeNotFoundError, before anything is decided).
    Item by item, an entry is added (ObservationAdded) only if the node lacks that exact
    string, so a repeat within one list is added once (seed 4.4; upstream adds both). The
    result lists, per item, the entries actually added."""
    for change in command.changes:
        _alive(graph, change.node_name)
    work = WorkingGraph(graph)
    results: list[MetadataChange] = []
    for change in command.changes:
        present = set(work.observations(change.node_name))
        added = [entry for entry in _distinct(change.entries) if entry not in present]
        for entry in added:
            work.add_observation(change.node_name, entry)
        results.append(MetadataChange(change.node_name, added))
    return work.events, AddMetadataResult(results)


def delete_metadata(
    graph: GraphReader, command: DeleteMetadata
) -> tuple[list[AnyEvent], DeleteMetadataResult]:
    """delete_metadata: every node must exist (NodeNotFoundError, before anything is
    decided). Item by item, each listed entry the node has is removed, every occurrence of it
    (one ObservationDeleted), and so is a "key: value" entry whose key is spelled otherwise
    (_matching_entries). The result lists, per item, the entries actually removed."""
    for change in command.changes:
        _alive(graph, change.node_name)
    work = WorkingGraph(graph)
    results: list[MetadataChange] = []
    for change in command.changes:
        present = work.observations(change.node_name)
        removed = _distinct(
            [found for entry in change.entries for found in _matching_entries(present, entry)]
        )
        for entry in removed:
            work.delete_observation(change.node_name, entry)
        results.append(MetadataChange(change.node_name, removed))
    return work.events, DeleteMetadataResult(results)


def _matching_entries(present: Sequence[str], entry: str) -> list[str]:
    """The node's entries `entry` names: itself, and every "key: value" entry whose key
    normalizes like its key with the same value, so "motto: Onward" also finds the
    "Motto: Onward" an older graphmem stored (keys are one property whatever their spelling)."""
    parsed = parse_entry(entry)
    if parsed is None:
        return [entry] if entry in present else []
    key, value = normalize_key(parsed[0]), parsed[1]
    return [
        content
        for content in present
        if (other := parse_entry(content)) is not None
        and other[1] == value
        and normalize_key(other[0]) == key
    ]


# --- typed nodes (update_<type>) --------------------------------------------------------------


def set_node_properties(
    graph: GraphReader, command: SetNodeProperties
) -> tuple[list[AnyEvent], SetNodePropertiesResult]:
    """update_<type>: the node must exist with that type (TypedNodeNotFoundError) and every
    edge target must exist (NodeNotFoundError), checked before anything is decided. Each
    property entry replaces the node's entries whose key normalizes like its key (deleted,
    then the new entry added, unless the new entry is already the only one: then nothing is
    written; None only deletes). Each EdgeTargets makes the node's outgoing edges of its type
    point at exactly its targets: edges to other targets are deleted, missing ones created
    (weight 1.0), kept ones keep their weight."""
    name = command.name
    _typed(graph, command.node_type, name)
    for targets in command.edges:
        for target in targets.targets:
            _alive(graph, target)
    work = WorkingGraph(graph)
    for entry in command.entries:
        _set_property(work, name, entry.key, entry.entry)
    removed: list[EdgeInput] = []
    added: list[EdgeInput] = []
    for targets in command.edges:
        wanted = _distinct(targets.targets)
        kept: set[str] = set()
        for relation in work.relations_of(name):
            if relation.from_entity != name or relation.relation_type != targets.edge_type:
                continue
            if relation.to_entity in wanted:
                kept.add(relation.to_entity)
            else:
                work.delete_relation(relation)
                removed.append(
                    EdgeInput(name, relation.to_entity, relation.relation_type, relation.weight)
                )
        for target in wanted:
            if target not in kept:
                work.record(
                    RelationCreated(
                        from_entity=name, to_entity=target, relation_type=targets.edge_type
                    )
                )
                added.append(EdgeInput(name, target, targets.edge_type))
    node = _node(_alive(work, name))
    return work.events, SetNodePropertiesResult(node, removed, added)


def _set_property(work: WorkingGraph, name: str, key: str, entry: str | None) -> None:
    wanted_key = normalize_key(key)
    current = work.observations(name)
    matching = [
        content
        for content in current
        if (parsed := parse_entry(content)) is not None and normalize_key(parsed[0]) == wanted_key
    ]
    if entry is not None and matching == [entry]:
        return
    for content in _distinct(matching):
        work.delete_observation(name, content)
    if entry is not None and entry not in work.observations(name):
        work.add_observation(name, entry)
