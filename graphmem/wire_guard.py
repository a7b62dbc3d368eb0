"""Answers requests the SDK could not parse, so a client never waits for a reply that is not
coming. The SDK's stdio transport drops an unparsable line (for example a lone surrogate
escaped in a JSON string, which pydantic's JSON parser refuses); JSON-RPC asks for an error
response instead, and a tool call deserves an isError result it can show the model."""

from __future__ import annotations

import json
from typing import Any

import anyio
import structlog
from mcp import types
from mcp.shared.message import SessionMessage

log = structlog.get_logger(__name__)

PARSE_ERROR = -32700


def _raw_line(problem: Exception) -> str | None:
    errors = getattr(problem, "errors", None)
    if not callable(errors):
        return None
    try:
        for detail in errors():
            raw = detail.get("input")
            if isinstance(raw, str | bytes):
                return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    except Exception:  # an unusual exception shape: nothing to salvage
        return None
    return None


def reply_for(problem: Exception) -> SessionMessage | None:
    """The reply an unparsable line deserves, or None when it was not a request."""
    raw = _raw_line(problem)
    request: Any = None
    if raw is not None:
        try:
            request = json.loads(raw)  # Python's parser accepts what pydantic's refused
        except ValueError:
            request = None
    if not isinstance(request, dict) or "id" not in request or "method" not in request:
        if raw is None or request is None:
            message = types.JSONRPCError(
                jsonrpc="2.0",
                id=None,
                error=types.ErrorData(code=PARSE_ERROR, message="Parse error: not valid JSON-RPC"),
            )
            return SessionMessage(message)
        return None  # an unparsable notification or response: nothing to answer
    request_id = request["id"]
    if request.get("method") == "tools/call":
        result = types.CallToolResult(
            content=[
                types.TextContent(
                    type="text",
                    text="MCP error -32602: Input validation error: the arguments contain "
                    "invalid Unicode (a lone surrogate or a broken escape); send valid UTF-8.",
                )
            ],
            is_error=True,
        )
        response = types.JSONRPCResponse(
            jsonrpc="2.0",
            id=request_id,
            result=result.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )
        return SessionMessage(response)
    error = types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(
            code=PARSE_ERROR,
            message="Parse error: the request is not valid JSON-RPC (invalid Unicode?)",
        ),
    )
    return SessionMessage(error)


DRAIN_TIMEOUT = 30.0


class InFlight:
    """Request ids read from the client and not yet answered."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.empty = anyio.Event()
        self.empty.set()

    def started(self, request_id: Any) -> None:
        self.ids.add(request_id)
        self.empty = anyio.Event()

    def answered(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        if not self.ids:
            self.empty.set()


class _AnsweringWriteStream:
    """The SDK's write stream, noting which requests have been answered."""

    def __init__(self, inner: Any, in_flight: InFlight) -> None:
        self._inner = inner
        self._in_flight = in_flight

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._in_flight.answered(message.id)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweringWriteStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def guard(read_stream: Any, write_stream: Any, task_group: Any) -> tuple[Any, Any]:
    """Read and write streams like the SDK's, with two differences: unparsable lines are
    answered here, and when the client closes its side, requests already read are answered
    before the server sees the end (the SDK would fail them with "Connection closed")."""
    send, receive = anyio.create_memory_object_stream[Any](0)
    in_flight = InFlight()
    answering = _AnsweringWriteStream(write_stream, in_flight)

    async def pump() -> None:
        async with send:
            async for item in read_stream:
                if isinstance(item, Exception):
                    reply = reply_for(item)
                    log.warning("unparsable_message", answered=reply is not None)
                    if reply is not None:
                        await write_stream.send(reply)
                    continue
                if isinstance(item.message, types.JSONRPCRequest):
                    in_flight.started(item.message.id)
                await send.send(item)
            with anyio.move_on_after(DRAIN_TIMEOUT):
                await in_flight.empty.wait()

    task_group.start_soon(pump)
    return receive, answering
