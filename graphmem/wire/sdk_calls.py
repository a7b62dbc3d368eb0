"""What the fast path needs of the SDK itself: the 2026-07-28 envelope read as the SDK reads it,
and the error it answers a failing handler with. Imported only once the SDK is loaded (a
modern-era session, or a failure the SDK's own code raised): graphmem.wire.fast_calls serves
the handshake era without it."""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

__all__ = ["failure", "modern_call"]

_MODERN_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})


def modern_call(method: str, params: dict[str, Any]) -> tuple[str, str | None] | None:
    """The (protocol version, client name) of a 2026-07-28 call whose envelope the SDK would
    accept, read as the SDK reads it; None leaves the call to the SDK."""
    meta = params.get("_meta")
    if params.keys() - _MODERN_PARAM_KEYS or not isinstance(meta, dict) or "progressToken" in meta:
        return None
    route = classify_inbound_request({"method": method, "params": params})
    if isinstance(route, InboundLadderRejection):
        return None
    try:
        sdk_methods.validate_client_request(method, route.protocol_version, params)
    except (ValidationError, ValueError, KeyError):
        return None  # the SDK refuses it, with its own error
    return route.protocol_version, _envelope_client(route.client_info, route.client_capabilities)


def _envelope_client(info: object, capabilities: object) -> str | None:
    """As Connection.from_envelope: the client is named only when its info and capabilities
    are both well formed."""
    try:
        implementation = types.Implementation.model_validate(info, by_name=False)
        types.ClientCapabilities.model_validate(capabilities, by_name=False)
    except ValidationError:
        return None
    return implementation.name


def failure(request_id: int | str, version: str, problem: Exception) -> SessionMessage:
    """The JSON-RPC error the SDK answers a failing handler with, in each era."""
    error = handler_exception_to_error_data(problem)
    if error is None:
        if version in MODERN_PROTOCOL_VERSIONS:
            error = types.ErrorData(code=INTERNAL_ERROR, message="Internal server error")
        else:
            error = types.ErrorData(code=0, message=str(problem))
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
