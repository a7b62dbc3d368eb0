"""The schema-driven family's response format (MemoryMesh's): data, actionTaken, timestamp.

Success: the text is the JSON of `{data, actionTaken, timestamp}` and the same object is the
structured content. Error: the text is the JSON of `{error, context?, suggestions}` with
`isError`, so a model reading the text sees what went wrong and what to try next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eventstore.hlc import WallClock
from graphmem.tools.base import ToolOutcome, render
from projections.graph_time import format_ms

__all__ = ["mesh_error", "mesh_ok", "timestamp"]


def timestamp(clock: WallClock) -> str:
    """Now by the process's one clock (GRAPHMEM_CLOCK_OFFSET_DAYS moves it, as it moves the
    event stamps), as ISO-8601 UTC with milliseconds (JavaScript's toISOString, as upstream)."""
    text = format_ms(clock())
    assert text is not None
    return text


def mesh_ok(
    data: Any, action_taken: str, *, clock: WallClock, mutated: bool = False
) -> ToolOutcome:
    body = {"data": data, "actionTaken": action_taken, "timestamp": timestamp(clock)}
    return ToolOutcome(texts=[render(body)], structured=body, mutated=mutated)


def mesh_error(
    message: str,
    *,
    clock: WallClock,
    suggestions: Sequence[str] = (),
    context: Mapping[str, Any] | None = None,
) -> ToolOutcome:
    body: dict[str, Any] = {"error": message}
    if context:
        body["context"] = dict(context)
    body["suggestions"] = list(suggestions)
    body["timestamp"] = timestamp(clock)
    return ToolOutcome(texts=[render(body)], structured=body, is_error=True)
