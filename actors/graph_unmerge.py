"""Deciding graph_unmerge (contract §8.11): split an entity, pure.

A new entity is created (confidence 0.5 unless its properties give one, mentioned once) and
each listed edge of the original — found by its other end, relation type (the lookup rules of
§3.4: as given, then normalised) and direction (either, for a symmetric type) — is deleted and
re-created on it with every attribute kept: weight, validity, provenance, evidence,
properties, ingested_at and last_confirmed (so its decay goes on from the same reference). An
item matching no edge refuses the whole call; every problem is listed.

The new name must not resolve to an existing entity, with one exception: a name that resolves
only through an alias of the entity being split. That is how a merge leaves the source's name
(graph_merge adds it to the target's aliases), and splitting the merge off again takes the
name back: the alias is removed from the original. Without it, undoing a merge could never
restore the name it folded away.
"""

from __future__ import annotations

from actors.errors import GraphWriteRefusedError
from actors.graph_merge_commands import (
    EdgeToMove,
    GraphUnmerge,
    GraphUnmergeResult,
    MovedEdge,
)
from actors.graph_properties import entity_properties
from actors.graph_reader import GraphReader
from actors.graph_touch import create_entity, resolved
from actors.working_graph import WorkingGraph
from eventstore.events import AnyEvent, AuditRecorded, EntitySplit, EntityUpdated
from projections.graph import RelationKey
from projections.naming import (
    SYMMETRIC_RELATION_TYPES,
    EntityTypeError,
    MatchStep,
    entity_id,
    fold_name,
    normalise_entity_type,
    relation_lookup_candidates,
)

__all__ = ["find_edge_to_move", "split_key", "unmerge"]

TOOL = "graph_unmerge"


def find_edge_to_move(
    work: WorkingGraph, original: str, other: str, item: EdgeToMove
) -> RelationKey | None:
    """The edge an item names: `original -[type]-> other` (out) or `other -[type]-> original`
    (in), the type as given then normalised; a symmetric type is found in either direction."""
    for relation_type in relation_lookup_candidates(item.relation_type):
        if item.direction == "out":
            key = (original, other, relation_type)
        else:
            key = (other, original, relation_type)
        if work.has_relation(*key):
            return key
        reverse = (key[1], key[0], relation_type)
        if relation_type.upper() in SYMMETRIC_RELATION_TYPES and work.has_relation(*reverse):
            return reverse
    return None


def split_key(key: RelationKey, original: str, new: str) -> RelationKey:
    """The key on the new entity: every end that is the original replaced (a self-loop moves
    whole)."""
    return (
        new if key[0] == original else key[0],
        new if key[1] == original else key[1],
        key[2],
    )


def _item_text(index: int, item: EdgeToMove) -> str:
    return (
        f"edges_to_move[{index}] ({item.direction} {item.relation_type!r}, other end "
        f"{item.other_entity_id!r})"
    )


def _chosen_edges(
    work: WorkingGraph, original: str, items: list[EdgeToMove], problems: list[str]
) -> list[RelationKey]:
    """The edges the items name, each once, in item order; problems for those naming none."""
    chosen: dict[RelationKey, None] = {}
    for index, item in enumerate(items):
        lookup = resolved(work, item.other_entity_id)
        if lookup.ambiguous:
            problems.append(f"{_item_text(index, item)}: {lookup.problem()}")
            continue
        if lookup.name is None:
            problems.append(f"{_item_text(index, item)}: the other end names no entity")
            continue
        key = find_edge_to_move(work, original, lookup.name, item)
        if key is None:
            arrow = (
                f"{original} -[{item.relation_type}]-> {lookup.name}"
                if item.direction == "out"
                else f"{lookup.name} -[{item.relation_type}]-> {original}"
            )
            problems.append(f"{_item_text(index, item)}: no edge {arrow}")
            continue
        chosen[key] = None
    return list(chosen)


def _reclaimed_alias(work: WorkingGraph, original: str | None, new_name: str) -> bool | None:
    """Whether `new_name` is free (False), free once the original gives up an alias (True),
    or taken (None)."""
    resolution = work.resolve_name(new_name)
    if not resolution.found:
        return False
    if (
        original is not None
        and resolution.step is MatchStep.ALIAS
        and resolution.names == (original,)
    ):
        return True
    return None


def unmerge(
    graph: GraphReader, command: GraphUnmerge, now_ms: int
) -> tuple[list[AnyEvent], GraphUnmergeResult]:
    """Create the new entity and move the listed edges onto it, as one command (§8.11)."""
    work = WorkingGraph(graph, now_ms)
    problems: list[str] = []
    new_type: str | None = None
    try:
        new_type = normalise_entity_type(command.new_entity_type)
    except EntityTypeError as problem:
        problems.append(f"new_entity_type: {problem}")
    lookup = resolved(work, command.entity_id)
    original = lookup.name
    if lookup.ambiguous:
        problems.append(f"entity_id: {lookup.problem()}")
    elif original is None:
        problems.append(
            f"entity_id: no entity is named {command.entity_id!r} (look it up with graph_entities)"
        )
    new_name = command.new_entity_name
    reclaim = _reclaimed_alias(work, original, new_name)
    if reclaim is None:
        holders = ", ".join(repr(n) for n in work.resolve_name(new_name).names)
        problems.append(
            f"new_entity_name: {new_name!r} already names an entity ({holders}); choose a name "
            "no entity has"
        )
    chosen: list[RelationKey] = []
    if original is not None:
        chosen = _chosen_edges(work, original, command.edges_to_move, problems)
    if problems:
        raise GraphWriteRefusedError(TOOL, problems)
    assert original is not None and new_type is not None
    if reclaim:
        attributes = work.entity_attributes(original)
        assert attributes is not None
        folded = fold_name(new_name)
        kept = [alias for alias in attributes.aliases if fold_name(alias) != folded]
        work.record(EntityUpdated(name=original, aliases=kept))
        taken = work.resolve_name(new_name)
        if taken.found:  # the alias hid a later step's match (another entity's slug)
            holders = ", ".join(repr(n) for n in taken.names)
            raise GraphWriteRefusedError(
                TOOL, [f"new_entity_name: {new_name!r} is the id of {holders}; choose another name"]
            )
    warnings: list[str] = []
    given = entity_properties(command.properties)
    create_entity(
        work,
        new_name,
        entity_type=new_type,
        now_ms=now_ms,
        confidence=0.5 if given.confidence is None else given.confidence,
        properties=given,
        warnings=warnings,
    )
    moved: list[RelationKey] = []
    for key in chosen:
        relation = work.relation(*key)
        assert relation is not None, "chosen among visible edges"
        details = work.relation_details(*key)
        work.delete_relation(relation)
        new_key = split_key(key, original, new_name)
        work.create_relation(relation, new_key, details)
        moved.append(new_key)
    work.note(EntitySplit(source=original, targets=[new_name]))
    work.record(
        AuditRecorded(
            action=TOOL,
            detail={
                "entities": [original, new_name],
                "moved": [list(key) for key in moved],
                "reason": command.reason,
            },
        )
    )
    ids = work.name_lookup()
    result = GraphUnmergeResult(
        original_id=entity_id(original, ids),
        original_name=original,
        remaining_edges=len(work.relations_of(original)),
        new_id=entity_id(new_name, ids),
        new_name=new_name,
        new_type=new_type,
        moved=[
            MovedEdge(
                from_id=entity_id(key[0], ids),
                to_id=entity_id(key[1], ids),
                relation_type=key[2],
            )
            for key in moved
        ],
        at_ms=now_ms,
        warnings=warnings,
    )
    return work.events, result
