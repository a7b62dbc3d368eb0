"""The JSON-RPC error answers the HTTP guards send instead of passing a request on."""

from __future__ import annotations

import msgspec
from starlette.responses import Response

# JSON-RPC's invalid-request code: every guard refuses the request itself, not its method.
INVALID_REQUEST = -32600


def error_response(status: int, message: str, *, headers: dict[str, str] | None = None) -> Response:
    """An HTTP error whose body is a JSON-RPC error (id null: no request id is trusted yet)."""
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    )
    return Response(body, status_code=status, media_type="application/json", headers=headers)
