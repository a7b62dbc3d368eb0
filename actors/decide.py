"""decide(graph, command): the pure core of the graph writer — commands in, events out.

Semantics are the official memory server's, as on its `main` branch (dangling relations are
rejected, duplicates within one batch are skipped, skips and misses are reported); the edit
and merge commands are decided in `actors.edits`, the schema-driven family's in `actors.mesh`,
transactions and schema registrations in `actors.transactions`. The graph is any GraphReader:
the projection itself, or a WorkingGraph when a transaction decides its steps. decide never
mutates the graph; it raises a
CommandRejectedError to refuse a command, and then nothing is written. Every event of one
decision is appended in one transaction, stamped in order, so an entity's creation is older
than the observations written with it.

The graph family's commands (decided in `actors.graph_relate` and `actors.graph_adjust`) read
"now" — last_seen, last_confirmed, ingested_at, decay up to now — from `now_ms`, which the
writer reads once per batch from the log's clock (the one clock that also stamps the events);
decide never reads a clock itself.
"""

from __future__ import annotations

from typing import assert_never

from actors import graph_adjust, graph_maintenance, graph_merge, graph_relate, graph_unmerge, mesh
from actors.commands import (
    AddEdges,
    AddMetadata,
    AddNodes,
    AddObservations,
    AddObservationsResult,
    AddObservationsResultItem,
    Command,
    CommitTransaction,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    CreateRelationsResult,
    DeleteEdges,
    DeleteEntities,
    DeleteEntitiesResult,
    DeleteMetadata,
    DeleteNodes,
    DeleteObservations,
    DeleteObservationsResult,
    DeleteRelations,
    DeleteRelationsResult,
    EntityInput,
    GraphAdjust,
    GraphAudit,
    GraphDelete,
    GraphMerge,
    GraphRelate,
    GraphRelateBatch,
    GraphUnmerge,
    MergeEntities,
    RegisterSchemas,
    RelationInput,
    SetNodeProperties,
    UpdateEdges,
    UpdateEntities,
    UpdateNodes,
    UpdateObservations,
    UpdateRelations,
)
from actors.decision import Decision
from actors.edits import merge_entities, update_entities, update_observations, update_relations
from actors.errors import EntityNotFoundError
from actors.graph_maintenance import GraphDecay, GraphPrune
from actors.graph_reader import GraphReader
from actors.transactions import commit_transaction, register_schemas
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
)
from projections.schemas import SchemaProjection

__all__ = ["Decision", "decide"]


def decide(
    graph: GraphReader,
    command: Command,
    schemas: SchemaProjection | None = None,
    now_ms: int | None = None,
) -> Decision:
    """Decide `command` against `graph` (and, for RegisterSchemas, the schemas in force) at
    wall time `now_ms` (required by the graph family's commands); raises CommandRejectedError
    to reject it."""
    match command:
        case CreateEntities():
            return _create_entities(graph, command)
        case CreateRelations():
            return _create_relations(graph, command)
        case AddObservations():
            return _add_observations(graph, command)
        case DeleteEntities():
            return _delete_entities(graph, command)
        case DeleteObservations():
            return _delete_observations(graph, command)
        case DeleteRelations():
            return _delete_relations(graph, command)
        case UpdateEntities():
            return Decision(*update_entities(graph, command, now_ms or 0))
        case UpdateObservations():
            return Decision(*update_observations(graph, command))
        case UpdateRelations():
            return Decision(*update_relations(graph, command, now_ms or 0))
        case MergeEntities():
            return Decision(*merge_entities(graph, command, now_ms or 0))
        case AddNodes():
            return Decision(*mesh.add_nodes(graph, command))
        case UpdateNodes():
            return Decision(*mesh.update_nodes(graph, command))
        case DeleteNodes():
            return Decision(*mesh.delete_nodes(graph, command))
        case AddEdges():
            return Decision(*mesh.add_edges(graph, command))
        case UpdateEdges():
            return Decision(*mesh.update_edges(graph, command))
        case DeleteEdges():
            return Decision(*mesh.delete_edges(graph, command))
        case AddMetadata():
            return Decision(*mesh.add_metadata(graph, command))
        case DeleteMetadata():
            return Decision(*mesh.delete_metadata(graph, command))
        case SetNodeProperties():
            return Decision(*mesh.set_node_properties(graph, command))
        case RegisterSchemas():
            return Decision(*register_schemas(schemas, command))
        case CommitTransaction():
            return Decision(*commit_transaction(graph, command, schemas, decide, now_ms))
        case GraphRelate():
            return Decision(*graph_relate.relate(graph, command, _now(command, now_ms)))
        case GraphRelateBatch():
            return Decision(*graph_relate.relate_batch(graph, command, _now(command, now_ms)))
        case GraphAdjust():
            return Decision(*graph_adjust.adjust(graph, command, _now(command, now_ms)))
        case GraphDelete():
            return Decision(*graph_adjust.delete(graph, command, _now(command, now_ms)))
        case GraphDecay():
            return Decision(*graph_maintenance.decay(graph, command, _now(command, now_ms)))
        case GraphPrune():
            return Decision(*graph_maintenance.prune(graph, command, _now(command, now_ms)))
        case GraphAudit():
            return Decision(*graph_adjust.audit(command))
        case GraphMerge():
            return Decision(*graph_merge.merge(graph, command, _now(command, now_ms)))
        case GraphUnmerge():
            return Decision(*graph_unmerge.unmerge(graph, command, _now(command, now_ms)))
        case _:
            assert_never(command)


def _now(command: Command, now_ms: int | None) -> int:
    # A missing clock reading is a bug of the caller, never something to default.
    if now_ms is None:
        raise ValueError(f"{type(command).__name__} is decided at a time: pass now_ms")
    return now_ms


def _create_entities(graph: GraphReader, command: CreateEntities) -> Decision:
    """create_entities: skip a name that is alive or came earlier in the batch (`skipped`
    lists each skipped input's name, in input order; its type and observations are dropped).
    A created entity gets EntityCreated, then one ObservationAdded per observation in the
    given order, duplicates included (the official server stores them as given)."""
    events: list[AnyEvent] = []
    created: list[EntityInput] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for entity in command.entities:
        if entity.name in seen or graph.has_entity(entity.name):
            skipped.append(entity.name)
            continue
        seen.add(entity.name)
        created.append(entity)
        events.append(EntityCreated(name=entity.name, entity_type=entity.entity_type))
        events.extend(
            ObservationAdded(entity=entity.name, content=content) for content in entity.observations
        )
    return Decision(events, CreateEntitiesResult(created, skipped))


def _create_relations(graph: GraphReader, command: CreateRelations) -> Decision:
    """create_relations: first the whole batch is checked, in order, `from` before `to`: an
    endpoint that is not an alive entity rejects the command (EntityNotFoundError) and nothing
    is written. Then a triple that is visible or came earlier in the batch is skipped (listed
    in `skipped`); the others get RelationCreated (weight 1.0). Self-relations are allowed."""
    for relation in command.relations:
        for endpoint in (relation.from_entity, relation.to_entity):
            if not graph.has_entity(endpoint):
                raise EntityNotFoundError(endpoint)
    events: list[AnyEvent] = []
    created: list[RelationInput] = []
    skipped: list[RelationInput] = []
    seen: set[tuple[str, str, str]] = set()
    for relation in command.relations:
        key = (relation.from_entity, relation.to_entity, relation.relation_type)
        if key in seen or graph.has_relation(*key):
            skipped.append(relation)
            continue
        seen.add(key)
        created.append(relation)
        events.append(RelationCreated(from_entity=key[0], to_entity=key[1], relation_type=key[2]))
    return Decision(events, CreateRelationsResult(created, skipped))


def _add_observations(graph: GraphReader, command: AddObservations) -> Decision:
    """add_observations: an item naming an entity that is not alive rejects the command
    (EntityNotFoundError for the first such item) and nothing is written. Per item, in order,
    each content not among the entity's observations as they stood before this item is added,
    so duplicates within one `contents` list are both added and a later item for the same
    entity sees the earlier item's additions (as the official server does)."""
    for item in command.observations:
        if not graph.has_entity(item.entity_name):
            raise EntityNotFoundError(item.entity_name)
    events: list[AnyEvent] = []
    results: list[AddObservationsResultItem] = []
    present: dict[str, set[str]] = {}
    for item in command.observations:
        name = item.entity_name
        existing = present.get(name)
        if existing is None:
            existing = present[name] = set(graph.observations(name))
        added = [content for content in item.contents if content not in existing]
        existing.update(added)
        events.extend(ObservationAdded(entity=name, content=content) for content in added)
        results.append(AddObservationsResultItem(name, added))
    return Decision(events, AddObservationsResult(results))


def _delete_entities(graph: GraphReader, command: DeleteEntities) -> Decision:
    """delete_entities: EntityDeleted for each distinct alive name, then RelationDeleted for
    each visible relation touching one of them, each once, in creation order. Missing names
    are not an error. Counts: `requested` = len(entity_names); `deleted` = distinct alive
    names deleted; `not_found` = distinct names that were not alive, in input order."""
    deleted: list[str] = []
    not_found: list[str] = []
    seen: set[str] = set()
    for name in command.entity_names:
        if name in seen:
            continue
        seen.add(name)
        (deleted if graph.has_entity(name) else not_found).append(name)
    events: list[AnyEvent] = [EntityDeleted(name=name) for name in deleted]
    events.extend(
        RelationDeleted(
            from_entity=relation.from_entity,
            to_entity=relation.to_entity,
            relation_type=relation.relation_type,
        )
        for relation in graph.relations_of_any(deleted)
    )
    result = DeleteEntitiesResult(len(command.entity_names), len(deleted), not_found)
    return Decision(events, result)


def _delete_observations(graph: GraphReader, command: DeleteObservations) -> Decision:
    """delete_observations: for each item on an alive entity, ObservationDeleted for each
    listed content currently present (each (entity, content) once); it removes every
    occurrence of that content. Missing entities and contents are not an error. Counts:
    `requested` = all listed contents, duplicates included; `deleted` = distinct listed
    (entity, content) pairs that were present; `entities_not_found` = distinct names that were
    not alive, in input order."""
    events: list[AnyEvent] = []
    requested = 0
    not_found: dict[str, None] = {}
    done: set[tuple[str, str]] = set()
    for item in command.deletions:
        name = item.entity_name
        requested += len(item.observations)
        if not graph.has_entity(name):
            not_found[name] = None
            continue
        present = set(graph.observations(name))
        for content in item.observations:
            if content in present and (name, content) not in done:
                done.add((name, content))
                events.append(ObservationDeleted(entity=name, content=content))
    return Decision(events, DeleteObservationsResult(requested, len(done), list(not_found)))


def _delete_relations(graph: GraphReader, command: DeleteRelations) -> Decision:
    """delete_relations: RelationDeleted for each listed triple that is visible, each once.
    A miss is not an error. Counts: `requested` = len(relations); `deleted` = distinct listed
    triples that were visible."""
    events: list[AnyEvent] = []
    done: set[tuple[str, str, str]] = set()
    for relation in command.relations:
        key = (relation.from_entity, relation.to_entity, relation.relation_type)
        if key not in done and graph.has_relation(*key):
            done.add(key)
            events.append(
                RelationDeleted(from_entity=key[0], to_entity=key[1], relation_type=key[2])
            )
    return Decision(events, DeleteRelationsResult(len(command.relations), len(done)))
