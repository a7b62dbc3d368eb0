"""The read_history tool (memory family extension): every event that touched an entity, with the
time, node, transaction and cause (tool and client) of each: the provenance of every fact."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Protocol, cast

import msgspec

from actors.read_models import ReadModels
from graphmem.history import EnvelopeSource, HistoryPage, read_page
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_count,
    check_names,
    error,
    invalid_arguments,
    ok,
    parse_args,
)
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import Schema, array, obj, root, string
from projections.history import EVENT_TAGS, HistoryProjection

__all__ = ["HISTORY_TOOLS", "READ_HISTORY", "HistoryModels"]


class HistoryModels(Protocol):
    """What read_history needs of the writer's read models: the history index, and the log to
    read the indexed events back from."""

    @property
    def history(self) -> HistoryProjection: ...

    @property
    def event_log(self) -> EnvelopeSource: ...


class ReadHistoryArgs(msgspec.Struct):
    name: str
    includeObservations: bool = True
    includeRelations: bool = True
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None
    eventTypes: list[str] | None = None


_INTEGER: Schema = {"type": "integer"}
_OPTIONAL_STRING: Schema = {"type": ["string", "null"]}
_CAUSE: Schema = {
    "type": ["object", "null"],
    "properties": {"tool": string(), "client": _OPTIONAL_STRING, "session": _OPTIONAL_STRING},
    "required": ["tool", "client", "session"],
    "additionalProperties": False,
}
_RECORD = obj(
    {
        "position": {**_INTEGER, "description": "Where the event sits in this node's log"},
        "time": string("When it was written, from its hybrid clock (UTC, ISO 8601)"),
        "hlc": _INTEGER,
        "node": string("The node (origin) that wrote it"),
        "seq": {**_INTEGER, "description": "Its sequence number on that node"},
        "transaction": string("<node>:<seq of the transaction's first event>"),
        "cause": {
            **_CAUSE,
            "description": "The tool call that wrote it: tool name, client name, session id",
        },
        "event": {"enum": list(EVENT_TAGS)},
        # Open: each event type has its own fields.
        "fields": {"type": "object", "description": "The event's fields"},
    },
    ["position", "time", "hlc", "node", "seq", "transaction", "cause", "event", "fields"],
    closed=True,
)

READ_HISTORY = tool(
    "read_history",
    "Read History",
    'Call this to answer "why do you believe this?" or "when did this change?": it lists '
    "every event that ever touched an entity (its creation, type changes, observations added "
    "and deleted, relations to or from it, renames, merges, deletion), oldest first, each with "
    "its time, the node and transaction that wrote it, and the cause (the tool and client that "
    "made the change). Works for deleted and renamed entities too (a rename shows under both "
    "names).",
    obj(
        {
            "name": string("The entity name, current or former"),
            "includeObservations": {
                "type": "boolean",
                "description": "Include observation events (default true)",
            },
            "includeRelations": {
                "type": "boolean",
                "description": "Include events of relations to or from it (default true)",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Only the most recent events, this many; omit for all",
            },
            "eventTypes": array(
                {"enum": list(EVENT_TAGS)}, "Only events of these types; omit for all"
            ),
        },
        ["name"],
    ),
    root(
        obj(
            {
                "name": string(),
                "events": array(_RECORD),
                "total": {
                    **_INTEGER,
                    "description": "How many events matched (before limit)",
                },
            },
            ["name", "events", "total"],
            closed=True,
        )
    ),
    READ,
)


def _event_types(tool_name: str, given: list[str] | None, max_items: int) -> set[str] | None:
    if given is None:
        return None
    check_count(tool_name, len(given), "eventTypes", max_items)
    for i, tag in enumerate(given):
        if tag not in EVENT_TAGS:
            raise ToolInputError(
                invalid_arguments(
                    tool_name,
                    f"eventTypes[{i}] is {tag!r}, which is not an event type; use any of: "
                    f"{', '.join(EVENT_TAGS)}",
                )
            )
    return set(given)


async def read_history(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool_name = "read_history"
    args = parse_args(tool_name, raw, ReadHistoryArgs)
    check_names(tool_name, ctx.limits, [("name", args.name)])
    event_types = _event_types(tool_name, args.eventTypes, ctx.limits.max_items)
    name = args.name

    def positions(models: ReadModels) -> tuple[list[int], EnvelopeSource] | None:
        # ReadModels is a HistoryModels once the writer keeps the history view.
        wanted = cast(HistoryModels, models)
        index = wanted.history
        if not index.knows(name):
            return None
        found = index.positions(
            name,
            observations=args.includeObservations,
            relations=args.includeRelations,
            event_types=event_types,
        )
        return found, wanted.event_log

    found = await ctx.graph.query_models(positions)
    if found is None:
        return error(
            f"No history for {name}: no event ever touched it. Check the name with search_nodes."
        )
    # The events are read from the log off the writer's thread, so a long history never holds
    # up writes; everything indexed is committed, so the log has it.
    indexed, source = found
    page: HistoryPage = await asyncio.wait_for(
        asyncio.to_thread(read_page, source, name, indexed, args.limit), ctx.graph.timeout
    )
    value = page.to_value()
    return ok(value, value)


HISTORY_TOOLS: tuple[ToolSpec, ...] = (ToolSpec(READ_HISTORY, read_history),)
