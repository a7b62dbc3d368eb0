"""The spooled whole-graph answers of one HTTP request, handed to the SDK as small stand-ins.

Over streamable HTTP the SDK builds a pydantic model of a tool's whole result and sends it as
one JSON body or SSE event: for a read_graph at a million entities, several GB. Instead, when
the request came through `graphmem.http_service.AnswerSplicer` (which puts an `AnswerSlot`
in its ASGI scope), `on_call_tool` gives the SDK a result whose text and structured content
are stand-ins naming a fresh token, and keeps the spooled body (graph_body) here. The SDK
runs its whole pipeline on that small result: session, headers, auth, SSE framing, event
ids. The splicer then finds the stand-ins in the bytes the SDK sends and writes the answer in
their place, slice by slice.

The slot belongs to the request that carried the call (the scope is that POST's), so the
request's end frees whatever was not written: a response the SDK dropped (its client gone,
its session ended) never leaves a spool behind. Light on purpose: `graphmem.server` imports it
on stdio too, where nothing of starlette may load.
"""

from __future__ import annotations

import secrets
from typing import Any

from graphmem.tools.base import ToolOutcome
from graphmem.tools.graph_body import GraphBody

__all__ = ["SLOT_KEY", "STRUCTURED_KEY", "TEXT_STAND_IN", "AnswerSlot", "slot_of"]

# The ASGI scope key the splicer files a request's slot under.
SLOT_KEY = "graphmem.answer_slot"
# The text stand-in is this prefix and the token; the structured one {STRUCTURED_KEY: token}.
TEXT_STAND_IN = "graphmem-spliced-text-"
STRUCTURED_KEY = "graphmem-spliced"


class AnswerSlot:
    """The spooled answers of one request, by token, until written or the request ends."""

    def __init__(self) -> None:
        self.bodies: dict[str, GraphBody] = {}
        self.closed = False

    def stand_in(self, outcome: ToolOutcome) -> dict[str, Any]:
        """The CallToolResult wire dict (as `ToolOutcome.to_wire`) of `outcome`, whose body is
        kept here under a fresh token and named by the stand-ins."""
        body = outcome.body
        assert body is not None
        token = secrets.token_hex(16)  # unguessable: a client cannot plant it in its own id
        if self.closed:
            body.close()  # the request is over: the answer has nowhere to go
        else:
            self.bodies[token] = body
        wire: dict[str, Any] = {
            "content": [{"type": "text", "text": TEXT_STAND_IN + token}],
            "resultType": "complete",
            "structuredContent": {STRUCTURED_KEY: token},
        }
        if outcome.is_error:
            wire["isError"] = True
        return wire

    def take(self, token: str) -> GraphBody | None:
        """The body of `token`, now the caller's to close."""
        return self.bodies.pop(token, None)

    def close(self) -> None:
        """Free every body not taken: the request is over."""
        self.closed = True
        while self.bodies:
            self.bodies.popitem()[1].close()


def slot_of(request: object) -> AnswerSlot | None:
    """The slot of the HTTP request a call came in (None on stdio, on the SDK's other paths)."""
    scope = getattr(request, "scope", None)
    slot = scope.get(SLOT_KEY) if isinstance(scope, dict) else None
    return slot if isinstance(slot, AnswerSlot) else None
