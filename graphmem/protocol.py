"""The few facts of the MCP wire that graphmem's stdio front, its `tools/list` bytes and its
notifier need, without importing the SDK.

Importing `mcp_types` (pydantic models) costs a stdio server ~25 MiB of RSS and a tenth of a
second before its first answer (issue 21 item 2), yet the handshake era's plain traffic needs
only these constants, the SDK's request-id rules and its error line. Each one is the SDK's
own, copied: tests/graphmem/test_wire_front.py holds them equal to the installed SDK's
(re-check when the `mcp` pin moves).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "MODERN_PROTOCOL_VERSIONS",
    "PROTOCOL_VERSION_META_KEY",
    "SERVER_INFO_META_KEY",
    "as_request_id",
    "coerce_request_id",
    "error_line",
]

# mcp_types.version
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]
# mcp_types: the `_meta` keys of the 2026-07-28 envelope and of its results' stamp
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

_encode_json = msgspec.json.Encoder().encode


def as_request_id(value: object) -> int | str | None:
    """mcp.shared.dispatcher.as_request_id: a wire value as a request id, or None (a bool
    is not one: True would alias id 1)."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    return None


def coerce_request_id(request_id: Any) -> Any:
    """mcp.shared.dispatcher.coerce_request_id: "7" and 7 are one id for correlation."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


def error_line(request_id: Any, code: int, message: str, data: str | None = None) -> bytes:
    """The line the SDK writes for `JSONRPCError(id=request_id, error=ErrorData(code,
    message, data))` (pydantic's `model_dump_json(by_alias=True, exclude_unset=True)`; no
    `data` member when it is None)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _encode_json({"jsonrpc": "2.0", "id": request_id, "error": error})
