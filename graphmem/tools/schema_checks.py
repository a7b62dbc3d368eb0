"""check_schemas: the schema family's read tool listing entities that do not conform to their
type's schema (from the schema view projection)."""

from __future__ import annotations

from typing import Any

import msgspec
from mcp import types

from actors.read_models import ReadModels
from graphmem.tools.base import ToolContext, ToolOutcome, ToolSpec, check_names, parse_args
from graphmem.tools.memory_schemas import READ
from graphmem.tools.mesh_format import mesh_ok
from graphmem.tools.schema import obj, root, string
from projections.schema_view import Problem

__all__ = ["CHECK_SCHEMAS", "SCHEMA_STATIC_TOOLS"]

MAX_LIMIT = 10_000

CHECK_SCHEMAS_TOOL = types.Tool(
    name="check_schemas",
    title="Check Schemas",
    description=(
        "List the entities whose metadata does not conform to the schema of their type: a "
        "required property with no entry, a value outside the allowed values or not of the "
        "property's kind, a key the schema does not allow, a property given twice. Each "
        "problem says what to fix (usually with update_<type>). Use after a schema file "
        "changed, or to audit the memory."
    ),
    input_schema=root(
        obj(
            {
                "entityType": string("Only entities of this type; omit for every type"),
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": f"At most this many problems (default and maximum {MAX_LIMIT})",
                },
            }
        )
    ),
    annotations=READ,
)


class CheckArgs(msgspec.Struct):
    entityType: str | None = None
    limit: int = msgspec.field(default=MAX_LIMIT)


def _problem(problem: Problem) -> dict[str, Any]:
    return {
        "entity": problem.entity,
        "entityType": problem.entity_type,
        "kind": problem.kind,
        "key": problem.key,
        "value": problem.value,
        "detail": problem.detail,
    }


async def check_schemas(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "check_schemas"
    args = parse_args(tool, raw, CheckArgs)
    check_names(tool, ctx.limits, [("entityType", args.entityType)])
    limit = max(1, min(args.limit, MAX_LIMIT))
    entity_type = args.entityType

    def problems(models: ReadModels) -> tuple[list[dict[str, Any]], int]:
        view = models.schema_view
        found = [_problem(p) for p in view.problems(entity_type, limit)]
        return found, view.nonconforming_count(entity_type)

    found, nonconforming = await ctx.graph.query_models(problems)
    scope = f" of type {entity_type}" if entity_type else ""
    if nonconforming:
        action = (
            f"Checked entities{scope} against their schemas: {nonconforming} do not conform "
            f"({len(found)} problems listed)"
        )
    else:
        action = f"Checked entities{scope} against their schemas: all conform"
    return mesh_ok({"problems": found, "nonconforming": nonconforming}, action)


CHECK_SCHEMAS = ToolSpec(
    CHECK_SCHEMAS_TOOL, check_schemas, families=frozenset({"schema"}), error_style="mesh"
)
SCHEMA_STATIC_TOOLS: tuple[ToolSpec, ...] = (CHECK_SCHEMAS,)
