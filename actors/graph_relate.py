"""Deciding graph_relate, single and batch mode (contract §8.2, with §3-5): pure.

Single mode resolves or creates both ends (each mention raises its confidence to at least the
edge's weight and counts once, a self-loop once), then creates the edge or re-asserts it.
Batch mode folds its entity items by what they resolve to, then writes each relation in item
order; it is all or nothing: every failing item is collected with its index, and any failure
refuses the whole call (nothing is appended unless the decision returns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from actors.errors import AmbiguousReferenceError, GraphWriteRefusedError
from actors.graph_commands import (
    BatchEntity,
    BatchRelation,
    GraphRelate,
    GraphRelateBatch,
    Provenance,
)
from actors.graph_properties import entity_properties
from actors.graph_reader import GraphReader
from actors.graph_results import (
    BatchEdgeDetail,
    BatchEntityDetail,
    EdgeState,
    GraphRelateBatchResult,
    GraphRelateResult,
    SupersededEdge,
)
from actors.graph_touch import (
    EdgeWrite,
    Touch,
    create_entity,
    edge_state,
    resolved,
    superseded_edges,
    touch_entity,
    type_warning,
    write_edge,
)
from actors.working_graph import WorkingGraph
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityUpdated,
    RelationCreated,
    RelationUpdated,
)
from projections.graph import RelationKey
from projections.graph_time import TimeFormatError, parse_time
from projections.naming import (
    EntityTypeError,
    RelationTypeError,
    entity_id,
    normalise_entity_type,
    normalise_relation_type,
)

__all__ = ["relate", "relate_batch"]

T = TypeVar("T")
TOOL = "graph_relate"


@dataclass
class _Problems:
    """Problems found so far, each naming where (`relations[2].valid_at: ...`)."""

    found: list[str] = field(default_factory=list)

    def check(self, where: str, parse: Callable[[], T]) -> T | None:
        try:
            return parse()
        except (EntityTypeError, RelationTypeError, TimeFormatError) as problem:
            self.found.append(f"{where}: {problem}")
            return None

    def refuse_if_any(self) -> None:
        if self.found:
            raise GraphWriteRefusedError(TOOL, self.found)


def _oversized(events: list[AnyEvent], limit: int | None) -> list[str]:
    """Elements whose properties, merged, would be longer than `limit` characters as JSON."""
    if limit is None:
        return []
    found: list[str] = []
    for event in events:
        properties = getattr(event, "properties", None)
        if not properties:
            continue
        size = len(msgspec.json.encode(properties).decode())
        if size > limit:
            if isinstance(event, EntityCreated | EntityUpdated):
                element = f"entity {event.name!r}"
            else:
                assert isinstance(event, RelationCreated | RelationUpdated)
                element = f"edge {event.from_entity} -[{event.relation_type}]-> {event.to_entity}"
            found.append(
                f"the properties of {element} would be {size:,} characters; the limit is "
                f"{limit:,} (remove keys by setting them to null)"
            )
    return found


def _time(text: str | None, what: str) -> Callable[[], int | None]:
    return lambda: None if text is None else parse_time(text, what)


# --- single mode ------------------------------------------------------------------------------


def relate(
    graph: GraphReader, command: GraphRelate, now_ms: int
) -> tuple[list[AnyEvent], GraphRelateResult]:
    """Resolve or create `from` then `to`, touch each once, then write the edge (§4-5)."""
    problems = _Problems()
    relation_type = problems.check("relation", lambda: normalise_relation_type(command.relation))
    from_type = problems.check("from_type", lambda: normalise_entity_type(command.from_type))
    to_type = problems.check("to_type", lambda: normalise_entity_type(command.to_type))
    valid_at = problems.check("valid_at", _time(command.valid_at, "valid_at"))
    problems.refuse_if_any()
    assert relation_type is not None and from_type is not None and to_type is not None
    work = WorkingGraph(graph, now_ms)
    warnings = list(command.warnings)
    created: list[str] = []
    ends: list[str] = []
    for reference, entity_type in ((command.from_name, from_type), (command.to_name, to_type)):
        lookup = resolved(work, reference)
        if lookup.ambiguous:
            raise AmbiguousReferenceError(reference, lookup.ambiguous)
        if lookup.name is None:
            create_entity(
                work,
                reference,
                entity_type=entity_type,
                now_ms=now_ms,
                confidence=command.weight,
                properties=None,
                warnings=warnings,
            )
            created.append(reference)
            ends.append(reference)
            continue
        if lookup.name not in ends and lookup.name not in created:
            warning = type_warning(work, lookup.name, entity_type)
            if warning is not None:
                warnings.append(warning)
            touch_entity(work, lookup.name, now_ms, Touch(command.weight), warnings)
        ends.append(lookup.name)
    provenance = command.provenance
    write = EdgeWrite(
        ends[0],
        ends[1],
        relation_type,
        command.weight,
        dict(command.properties),
        command.evidence,
        valid_at,
        provenance.source_session,
        provenance.source_transcript,
        provenance.source_type,
    )
    written = write_edge(work, write, now_ms, command.mention_boost, warnings)
    oversized = _oversized(work.events, command.max_properties_chars)
    if oversized:
        raise GraphWriteRefusedError(TOOL, oversized)
    result = GraphRelateResult(
        action="created" if written.created else "strengthened",
        edge=edge_state(work, written.key),
        created_entities=created,
        superseded=superseded_edges(work, list(written.superseded)),
        warnings=warnings,
    )
    return work.events, result


# --- batch mode -------------------------------------------------------------------------------


@dataclass
class _Batch:
    work: WorkingGraph
    now_ms: int
    problems: _Problems = field(default_factory=_Problems)
    warnings: list[str] = field(default_factory=list)
    local: dict[str, str | None] = field(default_factory=dict)  # localId -> name (None: failed)
    order: list[str] = field(default_factory=list)  # entities named, first appearance first
    created: set[str] = field(default_factory=set)


def _entity(batch: _Batch, index: int, item: BatchEntity) -> None:
    where = f"entities[{index}]"
    if item.local_id in batch.local:
        batch.problems.found.append(f"{where}: localId {item.local_id!r} is used twice")
        return
    batch.local[item.local_id] = None
    entity_type = batch.problems.check(
        f"{where}.type", lambda: normalise_entity_type(item.entity_type)
    )
    lookup = resolved(batch.work, item.name)
    if lookup.ambiguous:
        batch.problems.found.append(f"{where}: {lookup.problem()}")
        return
    if entity_type is None:
        return
    given = entity_properties(item.properties)
    confidence = item.confidence if item.confidence is not None else given.confidence
    work, warnings = batch.work, batch.warnings
    name = lookup.name
    if name is None:
        name = item.name
        create_entity(
            work,
            name,
            entity_type=entity_type,
            now_ms=batch.now_ms,
            confidence=_or(confidence, 0.5),
            properties=given,
            warnings=warnings,
        )
        batch.created.add(name)
    else:
        warning = type_warning(work, name, entity_type)
        if warning is not None:
            warnings.append(warning)
        mention = name not in batch.order and name not in batch.created
        touch_entity(work, name, batch.now_ms, Touch(confidence, mention, given), warnings)
    batch.local[item.local_id] = name
    if name not in batch.order:
        batch.order.append(name)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _end(batch: _Batch, where: str, reference: str) -> str | None:
    if reference in batch.local:
        return batch.local[reference]  # None: its entity item failed (already listed)
    lookup = resolved(batch.work, reference)
    if lookup.ambiguous:
        batch.problems.found.append(f"{where}: {lookup.problem()}")
    elif lookup.name is None:
        batch.problems.found.append(
            f"{where}: {reference!r} is neither a localId of this batch nor an existing entity"
        )
    return lookup.name


def _relation(
    batch: _Batch,
    index: int,
    item: BatchRelation,
    *,
    provenance: Provenance,
    mention_boost: float,
    done: list[tuple[RelationKey, EdgeState, bool]],
    closed: list[tuple[RelationKey, int]],
) -> None:
    where = f"relations[{index}]"
    problems = batch.problems
    before = len(problems.found)
    from_name = _end(batch, f"{where}.from", item.from_ref)
    to_name = _end(batch, f"{where}.to", item.to_ref)
    relation_type = problems.check(
        f"{where}.relation", lambda: normalise_relation_type(item.relation)
    )
    valid_at = problems.check(f"{where}.valid_at", _time(item.valid_at, "valid_at"))
    # Later items are still written (to the working graph only) after an earlier one failed,
    # so that their own problems are found without spurious ones.
    if len(problems.found) > before or from_name is None or to_name is None:
        return
    assert relation_type is not None
    write = EdgeWrite(
        from_name,
        to_name,
        relation_type,
        item.weight,
        dict(item.properties),
        item.evidence,
        valid_at,
        provenance.source_session,
        provenance.source_transcript,
        provenance.source_type,
    )
    written = write_edge(batch.work, write, batch.now_ms, mention_boost, batch.warnings)
    done.append((written.key, edge_state(batch.work, written.key), written.created))
    closed.extend(written.superseded)


def relate_batch(
    graph: GraphReader, command: GraphRelateBatch, now_ms: int
) -> tuple[list[AnyEvent], GraphRelateBatchResult]:
    """Entities first (resolved or created, folded by what they resolve to), then relations in
    order (`from`/`to` a localId, else a reference); every problem is listed, and any refuses
    the call."""
    batch = _Batch(WorkingGraph(graph, now_ms), now_ms, warnings=list(command.warnings))
    for index, entity in enumerate(command.entities):
        _entity(batch, index, entity)
    done: list[tuple[RelationKey, EdgeState, bool]] = []
    closed: list[tuple[RelationKey, int]] = []
    for index, relation in enumerate(command.relations):
        _relation(
            batch,
            index,
            relation,
            provenance=command.provenance,
            mention_boost=command.mention_boost,
            done=done,
            closed=closed,
        )
    batch.problems.found.extend(_oversized(batch.work.events, command.max_properties_chars))
    batch.problems.refuse_if_any()
    work = batch.work
    lookup = work.name_lookup()
    entity_details = [
        BatchEntityDetail(
            name=name,
            id=entity_id(name, lookup),
            action="created" if name in batch.created else "merged",
        )
        for name in batch.order
    ]
    edge_details = [
        BatchEdgeDetail(
            from_name=key[0],
            to_name=key[1],
            edge=state,
            action="created" if created else "strengthened",
        )
        for key, state, created in done
    ]
    superseded: list[SupersededEdge] = superseded_edges(work, closed)
    result = GraphRelateBatchResult(
        entities_created=len(batch.created),
        entities_merged=len(batch.order) - len(batch.created),
        edges_created=sum(1 for *_, created in done if created),
        edges_strengthened=sum(1 for *_, created in done if not created),
        superseded=superseded,
        entity_details=entity_details,
        edge_details=edge_details,
        warnings=batch.warnings,
    )
    return work.events, result
