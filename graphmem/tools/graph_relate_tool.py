"""graph_relate (contract §8.2): single and batch mode, through one atomic command each.

The tool checks what is about text and numbers (strict arguments, control characters, sizes,
weights clamped with a warning); the command decides everything about the graph (resolution,
types, relation names, times, supersession), so a refused batch names every failing item.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.graph_commands import (
    BatchEntity,
    BatchRelation,
    GraphRelate,
    GraphRelateBatch,
    Provenance,
)
from actors.graph_results import EdgeState, GraphRelateBatchResult, GraphRelateResult
from graphmem.limits import InputLimits
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    check_count,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import (
    GraphArgs,
    clamped_unit,
    json_size,
    name_text,
    optional_text,
    parse_graph_args,
)
from graphmem.tools.graph_family import GraphFamily
from graphmem.tools.graph_write_values import edge_value, family_of, superseded_value

__all__ = ["graph_relate"]

TOOL = "graph_relate"


class _BatchEntityArgs(GraphArgs, frozen=True):
    local_id: str = msgspec.field(name="localId")
    name: str
    type: str
    properties: dict[str, Any] | None = None
    confidence: float | None = None


class _BatchRelationArgs(GraphArgs, frozen=True):
    from_ref: str = msgspec.field(name="from")
    to_ref: str = msgspec.field(name="to")
    relation: str
    weight: float | None = None
    properties: dict[str, Any] | None = None
    evidence: str | None = None
    valid_at: str | None = None


class _BatchArgs(GraphArgs, frozen=True):
    entities: list[_BatchEntityArgs] = []
    relations: list[_BatchRelationArgs] = []
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None


class RelateArgs(GraphArgs, frozen=True):
    from_name: str | None = None
    from_type: str | None = None
    to_name: str | None = None
    to_type: str | None = None
    relation: str | None = None
    weight: float | None = None
    properties: dict[str, Any] | None = None
    evidence: str | None = None
    valid_at: str | None = None
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None
    batch: _BatchArgs | None = None


_REQUIRED = ("from_name", "from_type", "to_name", "to_type", "relation")
_SINGLE_ONLY = (*_REQUIRED, "weight", "properties", "evidence", "valid_at")


def _refuse(detail: str) -> ToolInputError:
    return ToolInputError(invalid_arguments(TOOL, detail))


def _properties(limits: InputLimits, value: dict[str, Any] | None, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    size = json_size(value)
    if size > limits.max_content_chars:
        raise _refuse(
            f"{where} is {size:,} characters as JSON; the limit is {limits.max_content_chars:,}"
        )
    return value


def _provenance(limits: InputLimits, *sources: Any) -> Provenance:
    """The first given value of each source_* among `sources` (batch's own, then top level)."""
    chosen: dict[str, str | None] = {}
    for key in ("source_session", "source_transcript", "source_type"):
        value = next((getattr(s, key) for s in sources if getattr(s, key) is not None), None)
        chosen[key] = optional_text(TOOL, limits, value, key, multiline=False)
    return Provenance(**chosen)


def _weight(value: float | None, where: str, warnings: list[str]) -> float:
    return 0.5 if value is None else clamped_unit(TOOL, value, where, warnings)


def _single(args: RelateArgs, limits: InputLimits, family: GraphFamily) -> GraphRelate:
    missing = [key for key in _REQUIRED if getattr(args, key) is None]
    if missing:
        raise _refuse(f"missing {', '.join(missing)}; single mode needs {', '.join(_REQUIRED)}")
    assert args.from_name is not None and args.to_name is not None and args.relation is not None
    assert args.from_type is not None and args.to_type is not None
    warnings: list[str] = []
    return GraphRelate(
        from_name=name_text(TOOL, limits, args.from_name, "from_name"),
        from_type=name_text(TOOL, limits, args.from_type, "from_type"),
        to_name=name_text(TOOL, limits, args.to_name, "to_name"),
        to_type=name_text(TOOL, limits, args.to_type, "to_type"),
        relation=name_text(TOOL, limits, args.relation, "relation"),
        weight=_weight(args.weight, "weight", warnings),
        properties=_properties(limits, args.properties, "properties"),
        evidence=optional_text(TOOL, limits, args.evidence, "evidence"),
        valid_at=optional_text(TOOL, limits, args.valid_at, "valid_at", multiline=False),
        provenance=_provenance(limits, args),
        mention_boost=family.tunables.weights.boost_on_mention,
        max_properties_chars=limits.max_content_chars,
        warnings=warnings,
    )


def _batch(args: RelateArgs, limits: InputLimits, family: GraphFamily) -> GraphRelateBatch:
    given = [key for key in _SINGLE_ONLY if getattr(args, key) is not None]
    if given:
        raise _refuse(
            f"{', '.join(given)} cannot be given with batch; put single-mode fields in "
            "batch.entities / batch.relations, or call without batch"
        )
    batch = args.batch
    assert batch is not None
    check_count(TOOL, len(batch.entities), "batch.entities", limits.max_items)
    check_count(TOOL, len(batch.relations), "batch.relations", limits.max_items)
    warnings: list[str] = []
    entities = []
    for i, item in enumerate(batch.entities):
        where = f"batch.entities[{i}]"
        confidence = item.confidence
        entities.append(
            BatchEntity(
                local_id=name_text(TOOL, limits, item.local_id, f"{where}.localId"),
                name=name_text(TOOL, limits, item.name, f"{where}.name"),
                entity_type=name_text(TOOL, limits, item.type, f"{where}.type"),
                properties=_properties(limits, item.properties, f"{where}.properties"),
                confidence=None
                if confidence is None
                else clamped_unit(TOOL, confidence, f"{where}.confidence", warnings),
            )
        )
    relations = []
    for i, rel in enumerate(batch.relations):
        where = f"batch.relations[{i}]"
        relations.append(
            BatchRelation(
                from_ref=name_text(TOOL, limits, rel.from_ref, f"{where}.from"),
                to_ref=name_text(TOOL, limits, rel.to_ref, f"{where}.to"),
                relation=name_text(TOOL, limits, rel.relation, f"{where}.relation"),
                weight=_weight(rel.weight, f"{where}.weight", warnings),
                properties=_properties(limits, rel.properties, f"{where}.properties"),
                evidence=optional_text(TOOL, limits, rel.evidence, f"{where}.evidence"),
                valid_at=optional_text(
                    TOOL, limits, rel.valid_at, f"{where}.valid_at", multiline=False
                ),
            )
        )
    return GraphRelateBatch(
        entities=entities,
        relations=relations,
        provenance=_provenance(limits, batch, args),
        mention_boost=family.tunables.weights.boost_on_mention,
        max_properties_chars=limits.max_content_chars,
        warnings=warnings,
    )


def _single_value(result: GraphRelateResult) -> dict[str, Any]:
    value: dict[str, Any] = {
        "action": result.action,
        "edge": edge_value(result.edge),
        "created_entities": list(result.created_entities),
        "superseded": [superseded_value(s) for s in result.superseded],
    }
    if result.warnings:
        value["warnings"] = list(result.warnings)
    return value


def _edge_name(state: EdgeState, from_name: str, to_name: str) -> str:
    return f"{from_name}→{state.relation_type}→{to_name}"


def _batch_value(result: GraphRelateBatchResult) -> dict[str, Any]:
    details: list[dict[str, Any]] = [
        {"entity": d.name, "id": d.id, "action": d.action} for d in result.entity_details
    ]
    details.extend(
        {
            "edge": _edge_name(d.edge, d.from_name, d.to_name),
            "from": d.edge.from_id,
            "to": d.edge.to_id,
            "type": d.edge.relation_type,
            "action": d.action,
            "weight": d.edge.weight,
        }
        for d in result.edge_details
    )
    value: dict[str, Any] = {
        "entities_created": result.entities_created,
        "entities_merged": result.entities_merged,
        "edges_created": result.edges_created,
        "edges_strengthened": result.edges_strengthened,
        "superseded": [superseded_value(s) for s in result.superseded],
        "details": details,
    }
    if result.warnings:
        value["warnings"] = list(result.warnings)
    return value


async def graph_relate(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    family = family_of(ctx, TOOL)
    args = parse_graph_args(TOOL, raw, RelateArgs)
    if args.batch is not None:
        batch = await ctx.graph.execute(_batch(args, ctx.limits, family), ctx.cause)
        value = _batch_value(batch)
    else:
        single = await ctx.graph.execute(_single(args, ctx.limits, family), ctx.cause)
        value = _single_value(single)
    return ok(value, value, mutated=True)
