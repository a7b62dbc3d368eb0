"""The schema-driven family's response format (MemoryMesh's): data, actionTaken, timestamp.

Success: the text is the JSON of `{data, actionTaken, timestamp}` and the same object is the
structured content. Error: the text is the JSON of `{error, context?, suggestions}` with
`isError`, so a model reading the text sees what went wrong and what to try next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from graphmem.tools.base import ToolOutcome, render

__all__ = ["mesh_error", "mesh_ok", "timestamp"]


def timestamp() -> str:
    """Now, as ISO-8601 UTC with milliseconds (JavaScript's toISOString, as upstream)."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def mesh_ok(data: Any, action_taken: str, *, mutated: bool = False) -> ToolOutcome:
    body = {"data": data, "actionTaken": action_taken, "timestamp": timestamp()}
    return ToolOutcome(texts=[render(body)], structured=body, mutated=mutated)


def mesh_error(
    message: str,
    *,
    suggestions: Sequence[str] = (),
    context: Mapping[str, Any] | None = None,
) -> ToolOutcome:
    body: dict[str, Any] = {"error": message}
    if context:
        body["context"] = dict(context)
    body["suggestions"] = list(suggestions)
    body["timestamp"] = timestamp()
    return ToolOutcome(texts=[render(body)], structured=body, is_error=True)
