"""A line as the SDK reads it: its pydantic JSON-RPC message, or the answer a line its parser
refuses deserves. Imported only once the SDK serves the session (graphmem.wire.stdio_wire):
the handshake era's plain traffic never needs it."""

from __future__ import annotations

from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from graphmem.wire.wire_guard import INVALID_REQUEST, PARSE_ERROR, Encoded, Line, error

__all__ = ["to_session_message"]


def to_session_message(line: Line) -> tuple[SessionMessage | None, SessionMessage | Encoded | None]:
    """The SDK's reading of `line` and None; or, when its parser refuses the line, None and the
    answer the line deserves (None for a notification or a response: nothing to answer)."""
    text = line.raw.decode("utf-8", "replace")  # as the SDK: bad bytes become U+FFFD
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as problem:
        return None, _unparsable_request(line, problem) if line.kind == "request" else None
    return SessionMessage(message), None


def _unparsable_request(line: Line, problem: ValidationError) -> SessionMessage | Encoded:
    if not any(detail["type"] == "json_invalid" for detail in problem.errors()):
        detail = problem.errors()[0]
        where = ".".join(str(part) for part in detail["loc"][1:]) or "the message"
        return error(line.request_id, INVALID_REQUEST, f"Invalid Request: {where}: {detail['msg']}")
    # Valid JSON the SDK's parser refuses: text that cannot be stored (a lone surrogate).
    if line.method == "tools/call":
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
            id=line.request_id,
            result=result.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )
        return SessionMessage(response)
    return error(
        line.request_id,
        PARSE_ERROR,
        "Parse error: the request is not valid JSON-RPC (invalid Unicode?)",
    )
