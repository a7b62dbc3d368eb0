"""A handshake-era stdio session served before the MCP SDK is loaded.

Every host today opens with `initialize`, sends `notifications/initialized`, lists the tools and
calls them: traffic whose answers graphmem can write byte for byte without the SDK, whose
pydantic models and server cost ~30 MiB of every stdio server's RSS (issue 21 item 2). So the
wire (graphmem.wire.stdio_wire) asks this front first, while the SDK is not loaded, and the
front answers what it is sure of:

- a plainly well-formed first `initialize` (graphmem.wire.initialize_answer), or agrees the
  session an `initialize` answer written early already opened (graphmem.early_handshake);
- `notifications/initialized` and `ping`, without parameters;
- `resources/list` and `resources/templates/list` (the one resource: graphmem.graph_resource)
  and `prompts/list` (graphmem serves none: the SDK's "Method not found"), without parameters:
  what hosts ask at start;
- `tools/list` without parameters, from the runner's current definitions
  (graphmem.tools.tools_list: the SDK's bytes); an answer the early reads wrote from a kept file
  is compared with it as the SDK's would be, and the first list is kept for the next start;
- `tools/call`s are the fast path's (graphmem.wire.fast_calls), attached before the SDK.

Anything else (resources, subscriptions, logging, completion, a call with a progress token, a
second `initialize`, a client's response, the 2026-07-28 era's first request) returns the
reason the SDK is needed: the wire then loads it and hands it the session's history in order
(`history`: the `initialize` line, whose SDK answer is owed, compared with what was written and
not written again; `notifications/initialized`), then the line, then everything after. From
then on the session is the SDK's, exactly as when it was loaded at start.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from graphmem.early_handshake import Handshake
from graphmem.graph_resource import GRAPH_RESOURCE
from graphmem.kept_answer import KeptAnswer
from graphmem.protocol import error_line
from graphmem.wire.fast_calls import SessionView, plain_id
from graphmem.wire.initialize_answer import (
    ServerIdentity,
    initialize_line,
    initialize_result,
    plain_initialize,
)
from graphmem.wire.wire_guard import Line

__all__ = ["TOOLS_LIST_CHANGED", "Front", "ListTools", "Served"]

ListTools = Callable[[str], Awaitable[bytes]]
"""The `result` of a `tools/list` at a protocol version, as the SDK writes it (a ValueError
for a list the SDK would refuse to send)."""

# The SDK's own line for the notification (JSONRPCNotification without params).
TOOLS_LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'

log = structlog.get_logger(__name__)

_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS = frozenset({"jsonrpc", "method", "params"})

# Results that never change, by method, for a request without parameters.
_FIXED_RESULTS = {
    "ping": {},
    "resources/list": {"resources": [GRAPH_RESOURCE]},
    "resources/templates/list": {"resourceTemplates": []},
}
METHOD_NOT_FOUND = -32601
# Methods of the protocol graphmem has no handler for (the SDK answers "Method not found").
_NOT_SERVED = frozenset({"prompts/list"})

_encode_json = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class Served:
    """A line the front took: `lines` are what it writes for it, in order."""

    lines: tuple[bytes, ...] = ()


class Front:
    """Answers a handshake-era session's plain traffic until the SDK is needed."""

    def __init__(
        self,
        identity: ServerIdentity,
        handshake: Handshake,
        *,
        list_tools: ListTools,
        on_initialized: Callable[[], None] = lambda: None,
    ) -> None:
        """`on_initialized` runs at the client's `notifications/initialized` (what the
        server's own handler does besides the SDK's)."""
        self.identity = identity
        self.handshake = handshake
        self.list_tools = list_tools
        self.on_initialized = on_initialized
        # The lines the SDK must read first, in order, if it comes to serve the session.
        self.history: list[bytes] = []
        self.initialized = False  # the client sent notifications/initialized

    async def serve(self, line: Line, session: SessionView) -> Served | str:
        """Take `line` (read in order, its turn come), or say why the SDK must."""
        if line.kind not in {"request", "notification"}:
            return f"a {line.kind} line"
        if not line.exact:
            return "a line only the lenient parser reads"
        value = line.value
        if line.kind == "notification":
            return self._notification(line, value, session)
        if value.keys() - _REQUEST_KEYS or not plain_id(line.request_id):
            return f"an unexpected {line.method} request"
        if line.method == "initialize" and session.era is None:
            return self._initialize(line, value.get("params"), session)
        if not session.ready:
            return f"{line.method} outside a handshake-era session"
        method = line.method
        if method not in _FIXED_RESULTS and method not in _NOT_SERVED and method != "tools/list":
            return f"a {method} request"
        if not _no_params(value):
            return f"a {method} request with parameters"
        if method == "tools/list":
            assert session.version is not None  # ready
            return await self._tools_list(line, session.version)
        if method in _NOT_SERVED:
            not_found = error_line(line.request_id, METHOD_NOT_FOUND, "Method not found", method)
            return Served((not_found,))
        result = _FIXED_RESULTS[method]
        return Served((_encode_json({"jsonrpc": "2.0", "id": line.request_id, "result": result}),))

    def _notification(
        self, line: Line, value: Mapping[str, Any], session: SessionView
    ) -> Served | str:
        plain = not value.keys() - _NOTIFICATION_KEYS and _no_params(value)
        if line.method == "notifications/initialized" and plain and session.ready:
            if not self.initialized:
                self.initialized = True
                self.history.append(line.raw)
                self.on_initialized()
            return Served()  # a repeat changes nothing for the SDK either
        return f"a {line.method} notification"

    def _initialize(self, line: Line, params: object, session: SessionView) -> Served | str:
        request_id = line.request_id
        version = plain_initialize(params)
        if version is None:
            return "an initialize whose parameters the SDK must read"
        data = initialize_line(request_id, self.identity, version)
        owed = self.handshake.owed.get(str(request_id))
        written: bytes | None = data
        if owed is None:
            self.handshake.owe(request_id, KeptAnswer(None, answered=data))
        elif owed.answered is None:
            owed.written_ahead(data)  # kept for the next start's early answer
        else:
            # Answered before the server loaded, from a kept answer: compared as the SDK's
            # answer would be (a difference replaces the kept copies; the client keeps what
            # it was sent), and the copy a new store lacks is made.
            written, problem = owed.settle(data, success=True)
            if problem is not None:
                log.warning("early_handshake_stale", problem=problem)
            owed.answered = data  # what the SDK's answer is compared with, if it comes
        session.saw_request("initialize", request_id, params if isinstance(params, dict) else None)
        session.saw_answer(request_id, initialize_result(self.identity, version))
        self.history.append(line.raw)
        return Served(() if written is None else (written,))

    async def _tools_list(self, line: Line, version: str) -> Served | str:
        try:
            result = await self.list_tools(version)
        except Exception as failure:  # the SDK's handler meets it too, and answers it
            return f"tools/list failed here ({type(failure).__name__})"
        data = _encode_json(
            {"jsonrpc": "2.0", "id": line.request_id, "result": msgspec.Raw(result)}
        )
        key = str(line.request_id)
        if key not in self.handshake.owed:  # the session's first list: kept for the next start
            self.handshake.keep_listing(line.request_id, line.raw)
        kept = self.handshake.owed.get(key)
        if kept is None or kept.method != "tools/list":
            return Served((data,))
        # As the wire settles the SDK's answer: an early answer is compared, not written twice.
        del self.handshake.owed[key]
        written, problem = kept.settle(data, success=True)
        if problem is None:
            return Served(() if written is None else (written,))
        log.warning("early_handshake_stale", problem=problem)
        return Served((TOOLS_LIST_CHANGED,))  # the client was sent another list: it lists again


def _no_params(value: Mapping[str, Any]) -> bool:
    params = value.get("params", {})
    return isinstance(params, dict) and not params
