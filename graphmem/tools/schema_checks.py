"""check_schemas: the schema family's read tool listing entities that do not conform to their
type's schema (from the schema view projection), now or as of a past point (`as_of`)."""

from __future__ import annotations

from typing import Any

import msgspec

from actors.time_travel import GraphModels

# The mesh read tools' as-of handling, shared so a bad as_of gets the same error and suggestions
# and the answer says the point read the same way.
from graphmem.tools.as_of import as_of_data, as_of_phrase
from graphmem.tools.base import ToolContext, ToolOutcome, ToolSpec, check_names, parse_args
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.memory_schemas import AS_OF, READ
from graphmem.tools.mesh import mesh_read
from graphmem.tools.mesh_format import mesh_ok
from graphmem.tools.schema import obj, root, string
from projections.schema_view import Problem

__all__ = ["CHECK_SCHEMAS", "SCHEMA_STATIC_TOOLS"]

MAX_LIMIT = 10_000

CHECK_SCHEMAS_TOOL = ToolDefinition(
    name="check_schemas",
    title="Check Schemas",
    description=(
        "List the entities whose metadata does not conform to the schema of their type: a "
        "required property with no entry, a value outside the allowed values or not of the "
        "property's kind, a key the schema does not allow, a property given twice. Each "
        "problem says what to fix (usually with update_<type>). Use after a schema file "
        "changed, or to audit the memory. With as_of, checks the entities as they were then "
        "against the schemas in force then."
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
                "as_of": AS_OF,
            }
        )
    ),
    annotations=READ,
)


class CheckArgs(msgspec.Struct):
    entityType: str | None = None
    limit: int = msgspec.field(default=MAX_LIMIT)
    # Checked by actors.time_travel.parse_as_of (through mesh_read), as the other read tools do.
    as_of: Any = None


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

    def problems(models: GraphModels) -> tuple[list[dict[str, Any]], int]:
        view = models.schema_view
        found = [_problem(p) for p in view.problems(entity_type, limit)]
        return found, view.nonconforming_count(entity_type)

    (found, nonconforming), point = await mesh_read(ctx, tool, {"as_of": args.as_of}, problems)
    scope = f" of type {entity_type}" if entity_type else ""
    if nonconforming:
        action = (
            f"Checked entities{scope}{as_of_phrase(point)} against their schemas: "
            f"{nonconforming} do not conform ({len(found)} problems listed)"
        )
    else:
        action = f"Checked entities{scope}{as_of_phrase(point)} against their schemas: all conform"
    data = {"problems": found, "nonconforming": nonconforming, **as_of_data(point)}
    return mesh_ok(data, action, clock=ctx.clock)


CHECK_SCHEMAS = ToolSpec(CHECK_SCHEMAS_TOOL, check_schemas, error_style="mesh")
SCHEMA_STATIC_TOOLS: tuple[ToolSpec, ...] = (CHECK_SCHEMAS,)
