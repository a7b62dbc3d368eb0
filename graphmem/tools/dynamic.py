"""The schema family: add_<type>, update_<type> and delete_<type> tools generated per schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from actors.commands import (
    AddEdgesResult,
    AddNodesResult,
    Command,
    CommandResult,
    CommitTransaction,
    CommitTransactionResult,
    DeleteNodesResult,
    SetNodePropertiesResult,
)
from actors.errors import CommandRejectedError
from actors.schema_plans import (
    Action,
    plan_add,
    plan_delete,
    plan_update,
    unwrap_arguments,
)
from eventstore.hlc import WallClock
from graphmem.limits import InputLimits
from graphmem.tools.base import (
    Runner,
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_count,
    check_names,
    check_text,
)
from graphmem.tools.definition import ToolAnnotations, ToolDefinition, ToolExecution
from graphmem.tools.mesh_format import mesh_ok
from graphmem.tools.schema import DRAFT_07
from graphmem.tools.schema_definitions import tool_description, tool_input_schema
from projections.entity_schema import EntitySchema

__all__ = ["dynamic_tools", "schema_tools"]


_ANNOTATIONS: dict[Action, ToolAnnotations] = {
    "add": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
    # Setting the same properties twice leaves the node as the first call did.
    "update": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "delete": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
}
_TITLES: dict[Action, str] = {"add": "Add", "update": "Update", "delete": "Delete"}
_DONE: dict[Action, str] = {"add": "Created", "update": "Updated", "delete": "Deleted"}


def dynamic_tools(schemas: Iterable[EntitySchema]) -> tuple[ToolSpec, ...]:
    """The three tools of each schema, in the order given."""
    return tuple(spec for schema in schemas for spec in schema_tools(schema))


def schema_tools(schema: EntitySchema) -> tuple[ToolSpec, ToolSpec, ToolSpec]:
    """add_<type>, update_<type>, delete_<type> for one schema; each call uses this schema,
    the one in force when the call started, even if a newer one arrives meanwhile."""
    add, update, delete = (_spec(schema, action) for action in ("add", "update", "delete"))
    return add, update, delete


def _spec(schema: EntitySchema, action: Action) -> ToolSpec:
    name = f"{action}_{schema.type_name}"
    input_schema = dict(tool_input_schema(schema, action))
    input_schema.setdefault("$schema", DRAFT_07)
    tool = ToolDefinition(
        name=name,
        title=f"{_TITLES[action]} {schema.type_name}",
        description=tool_description(schema, action),
        input_schema=input_schema,
        annotations=_ANNOTATIONS[action],
        execution=ToolExecution(task_support="forbidden"),
    )
    return ToolSpec(
        tool,
        _runner(schema, action, name),
        error_style="mesh",
    )


def _runner(schema: EntitySchema, action: Action, tool_name: str) -> Runner:
    async def run(ctx: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        values = unwrap_arguments(schema, action, arguments)
        try:
            check_values(tool_name, ctx.limits, schema, values)
        except ToolInputError as problem:
            # Mesh errors carry suggestions (as MemoryMesh defines it); server._run passes these on.
            problem.suggestions = [  # type: ignore[attr-defined]
                f"Fix the value the error names and call {tool_name} again; nothing was written."
            ]
            raise
        steps: list[Command]
        if action == "add":
            steps = list(plan_add(schema, values).steps)
        elif action == "update":
            steps = [plan_update(schema, values)]
        else:
            steps = [plan_delete(schema, values)]
        results = await _commit(ctx, steps)
        return _answer(schema, action, results, ctx.clock)

    return run


async def _commit(ctx: ToolContext, steps: Sequence[Command]) -> list[CommandResult]:
    """All steps in one log transaction: a rejected step (a missing relationship target, say)
    means nothing at all is written. The steps are this tool's own business, so a refusal
    does not name them ("Step 2 of 2 (AddEdges)")."""
    try:
        if ctx.transactions is not None:
            return list((await ctx.transactions.commit(steps, ctx.cause)).results)
        committed = await ctx.graph.execute(CommitTransaction(list(steps)), ctx.cause)
    except CommandRejectedError as rejection:
        rejection.message = rejection.unstepped
        rejection.args = (rejection.unstepped,)
        raise
    assert isinstance(committed, CommitTransactionResult)
    return list(committed.results)


def _answer(
    schema: EntitySchema, action: Action, results: Sequence[CommandResult], clock: WallClock
) -> ToolOutcome:
    match action:
        case "add":
            nodes = [n for r in results if isinstance(r, AddNodesResult) for n in r.nodes]
            edges = [e for r in results if isinstance(r, AddEdgesResult) for e in r.edges]
            data: dict[str, Any] = {
                "nodes": msgspec.to_builtins(nodes),
                "edges": msgspec.to_builtins(edges),
            }
            name = nodes[0].name if nodes else ""
        case "update":
            update = next(r for r in results if isinstance(r, SetNodePropertiesResult))
            data = {
                "updatedNode": msgspec.to_builtins(update.node),
                # MemoryMesh's shape: the edges removed and added, each with its weight.
                "edgeChanges": {
                    "remove": msgspec.to_builtins(update.removed_edges),
                    "add": msgspec.to_builtins(update.added_edges),
                },
            }
            name = update.node.name
        case "delete":
            deleted = next(r for r in results if isinstance(r, DeleteNodesResult))
            name = deleted.deleted[0] if deleted.deleted else ""
            data = {
                "deletedNode": name,
                "removedEdges": msgspec.to_builtins(deleted.edges_removed),
            }
    return mesh_ok(data, f"{_DONE[action]} {schema.type_name}: {name}", clock=clock, mutated=True)


def check_values(
    tool_name: str, limits: InputLimits, schema: EntitySchema, values: Mapping[str, Any]
) -> None:
    """Bound and clean the text of one call: the name, property keys and relationship targets
    as names, other strings as metadata content. Values of other kinds are left to the plan,
    which says what each property takes."""
    check_count(tool_name, len(values), "the properties", limits.max_items)
    for key, value in values.items():
        check_names(tool_name, limits, [(f"property name {key!r}", key)])
        prop = schema.find(key)
        is_name = key == "name" or (prop is not None and prop.relationship is not None)
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list):
            check_count(tool_name, len(value), key, limits.max_items)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                continue
            where = f"{key}[{i}]" if isinstance(value, list) else key
            if is_name:
                check_text(tool_name, item, where, limits.max_name_chars, multiline=False)
            else:
                check_text(tool_name, item, where, limits.max_content_chars, multiline=True)
