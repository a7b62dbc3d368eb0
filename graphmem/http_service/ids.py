"""Refuses JSON-RPC messages whose id is not a string or an integer.

The SDK's handshake-era transport reads such a message as a notification: it answers 202
with no body and the client waits for an answer forever. Here it gets the JSON-RPC
invalid-request error at once.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.http_service.responses import error_response
from graphmem.wire.wire_guard import valid_id


def _kind(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case float():
            return "a fraction"
        case list():
            return "an array"
        case dict():
            return "an object"
        case _:
            return type(value).__name__


def id_problem(body: bytes) -> str | None:
    """Why `body`'s id is unusable, or None (unparseable bodies are the SDK's to answer)."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    value = message["id"]
    if valid_id(value):
        return None
    if value is None and "error" in message and "method" not in message:
        return None  # JSON-RPC's own answer to a message whose id could not be read
    return (
        f"Invalid Request: the id must be a string or an integer, not {_kind(value)}; "
        "leave the id out only for a notification, which gets no answer"
    )


async def _read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The messages read (to replay) and the whole body, or None past `limit` or cut short."""
    messages: list[Message] = []
    body = bytearray()
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return messages, None
        if not message.get("more_body", False):
            return messages, bytes(body)


class InvalidIdCheck:
    """ASGI middleware: a POST whose JSON-RPC id is unusable gets 400 with error -32600."""

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = await _read_body(receive, self.limit)
        problem = id_problem(body) if body is not None else None
        if problem is not None:
            await error_response(400, problem)(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
