"""Tool calls answered on graphmem's stdio transport without the SDK's per-call pipeline.

The SDK spends more on a `tools/call` than a small tool does: pydantic validation of the
request (twice), a session, a dispatch context, and a validating dump of the result that, on a
whole-graph answer, walks the graph once more. For the plain call that dominates real traffic,
this module does only what that pipeline would do for it, so the wire cannot tell the
difference: the same tool run (`ToolCaller`, the one `on_call_tool` uses), the same
resource-updated notification before the answer, and the response line the SDK would write,
byte for byte, in either protocol era. A request it is not sure of — any other method, an
unexpected key, a progress token, a session not yet initialized, an envelope the SDK might
refuse — goes to the SDK untouched.

The handshake era's path imports nothing of the SDK (the stdio front serves it before the SDK
is loaded); what only the 2026-07-28 era or a failure the SDK raised needs is in
graphmem.wire.sdk_calls, imported then.

`GRAPHMEM_FAST_CALLS=0` turns it off (every call through the SDK), for comparison and tests.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from eventstore.events import Cause
from graphmem.protocol import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    coerce_request_id,
    error_line,
)

if TYPE_CHECKING:  # the SDK is imported where a session needs it (graphmem.wire.sdk_calls)
    from mcp.shared.message import SessionMessage
    from typing_extensions import TypeIs

    # The tool layer is the runner's to load: the wire only carries its outcomes.
    from graphmem.tools.base import ToolOutcome
    from graphmem.tools.graph_body import GraphBody

__all__ = [
    "FastCall",
    "FastCalls",
    "SessionView",
    "StreamedLine",
    "ToolCaller",
    "plain_id",
]

log = structlog.get_logger(__name__)

ToolCaller = Callable[[str, dict[str, Any], Cause], Awaitable["ToolOutcome"]]
"""Runs one tool call (name, arguments, cause) to its outcome, notifications and log included."""

CALL_METHOD = "tools/call"
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_LEGACY_PARAM_KEYS = frozenset({"name", "arguments"})
_INT64 = range(-(2**63), 2**63)

_encode_json = msgspec.json.Encoder().encode

# Stand-ins for a streamed answer's text and structured content while its framing is encoded:
# the line is cut at them (the last of each: a client's id comes before them, never after).
_TEXT_MARK = "graphmem-streamed-text-5b1e"
_STRUCTURED_MARK = b'"graphmem-streamed-structured-5b1e"'


class SessionView:
    """What the client and the SDK have agreed, as seen on the wire: the connection's era
    (decided by the client's first request, as the SDK decides it) and, in the handshake era,
    the negotiated version and the client's name once an `initialize` has been answered.

    While an `initialize` is unanswered the SDK may be changing its session, so no call is
    taken then: the SDK runs `initialize` inline, and a call read after it would see its outcome.
    """

    def __init__(self) -> None:
        self.era: str | None = None  # "legacy" or "modern" once the first request is read
        self.version: str | None = None  # the handshake's negotiated version
        self.client: str | None = None
        self._initializing: dict[Any, str | None] = {}

    @property
    def ready(self) -> bool:
        """A handshake-era session whose `initialize` was accepted, none pending."""
        return self.era == "legacy" and self.version is not None and not self._initializing

    def saw_request(self, method: str, request_id: Any, params: Mapping[str, Any] | None) -> None:
        """Every request the SDK is handed, in the order read."""
        if self.era is None:
            modern = method != "initialize" and _has_envelope(params)
            self.era = "modern" if modern else "legacy"
        if method == "initialize":
            self._initializing[coerce_request_id(request_id)] = _client_name(params)

    def saw_answer(self, response_id: object, result: object) -> None:
        """Every response written (`result`: its result, None for an error): an accepted
        `initialize` commits its session."""
        if not self._initializing or response_id is None:
            return
        key = coerce_request_id(response_id)
        if key not in self._initializing:
            return
        client = self._initializing.pop(key)
        if isinstance(result, Mapping):
            version = result.get("protocolVersion")
            if isinstance(version, str) and version in HANDSHAKE_PROTOCOL_VERSIONS:
                self.version, self.client = version, client


def _has_envelope(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_META_KEY in meta


def _client_name(params: Mapping[str, Any] | None) -> str | None:
    # Used only once the SDK has accepted the handshake, which validates this shape.
    info = (params or {}).get("clientInfo")
    name = info.get("name") if isinstance(info, Mapping) else None
    return name if isinstance(name, str) else None


@dataclass(frozen=True)
class FastCall:
    """A `tools/call` taken by the fast path: what to run, and for which protocol version."""

    request_id: int | str
    name: str
    arguments: dict[str, Any]
    version: str
    client: str | None


class FastCalls:
    """Takes the tool calls it can answer exactly as the SDK would, and answers them."""

    def __init__(self, call_tool: ToolCaller, server: Any = None) -> None:
        """`server`: the SDK's `Server`, whose serverInfo stamp 2026-07-28 answers carry (None
        before the SDK is loaded: only handshake-era calls are taken then)."""
        self._call_tool = call_tool
        # Fixed at construction by the SDK too; a fresh copy per answer is not needed because
        # each answer is encoded at once and never kept.
        self._server_info = None if server is None else server.server_info_stamp

    def take(self, message: object, session: SessionView) -> FastCall | None:
        """The call in `message` (a line's decoded JSON) when it is one this path answers;
        None leaves it to the SDK."""
        if session.era is None or not isinstance(message, dict) or message.keys() - _REQUEST_KEYS:
            return None
        request_id = message.get("id")
        params = message.get("params")
        if (
            message.get("jsonrpc") != "2.0"
            or message.get("method") != CALL_METHOD
            or not plain_id(request_id)
            or not isinstance(params, dict)
        ):
            return None
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        if session.era == "legacy":
            if not session.ready or params.keys() - _LEGACY_PARAM_KEYS:
                return None
            assert session.version is not None  # ready
            return FastCall(request_id, name, arguments, session.version, session.client)
        if self._server_info is None:
            return None  # the SDK serves the modern era, and attaches its own
        from graphmem.wire.sdk_calls import modern_call  # noqa: PLC0415 (loaded by now)

        route = modern_call(CALL_METHOD, params)
        if route is None:
            return None
        return FastCall(request_id, name, arguments, *route)

    async def answer(self, call: FastCall) -> bytes | StreamedLine | SessionMessage:
        """The response to `call`: its encoded line (or, for an answer spooled to disk, the
        line to write in slices), or the JSON-RPC error the SDK would send when the handler
        itself fails (a tool's own failure is an isError result)."""
        cause = Cause(tool=call.name, client=call.client, session=None)
        try:
            outcome = await self._call_tool(call.name, call.arguments, cause)
        except Exception as problem:  # the edge, as the SDK's dispatcher treats it
            log.exception("tool_call_failed", tool=call.name)
            return _failure(call, problem)
        if outcome.body is not None:
            return self.streamed(call.request_id, outcome, call.version)
        return self.encode(call.request_id, outcome, call.version)

    def streamed(self, request_id: int | str, outcome: ToolOutcome, version: str) -> StreamedLine:
        """The response line of an outcome with a spooled body, to be written in slices: the
        line `encode` writes for it, byte for byte, framing and all."""
        from graphmem.tools.base import ToolOutcome  # noqa: PLC0415 (loaded: a tool ran)

        assert outcome.body is not None
        frame = ToolOutcome(
            texts=[_TEXT_MARK],
            is_error=outcome.is_error,
            structured_json=_STRUCTURED_MARK,
        )
        line = self.encode(request_id, frame, version)
        head, _, rest = line.rpartition(_TEXT_MARK.encode())
        middle, _, tail = rest.rpartition(_STRUCTURED_MARK)
        return StreamedLine(request_id, head, middle, tail, outcome.body)

    def encode(self, request_id: int | str, outcome: ToolOutcome, version: str) -> bytes:
        """The response line the SDK writes for `outcome` at `version`: the CallToolResult
        fields in its schema's order, `resultType` and the serverInfo stamp only at 2026-07-28."""
        outcome = outcome.materialized()
        result: dict[str, Any] = {"content": [{"text": t, "type": "text"} for t in outcome.texts]}
        if outcome.is_error:
            result["isError"] = True
        if version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"
        if outcome.structured_json is not None:  # the same bytes, encoded once
            result["structuredContent"] = msgspec.Raw(outcome.structured_json)
        elif outcome.structured is not None:
            result["structuredContent"] = outcome.structured
        if version in MODERN_PROTOCOL_VERSIONS:
            result["_meta"] = {SERVER_INFO_META_KEY: self._server_info}
        return _encode_json({"jsonrpc": "2.0", "id": request_id, "result": result})


@dataclass(frozen=True)
class StreamedLine:
    """A response line written in slices (issue 21): the text of a spooled answer escaped
    into its JSON string piece by piece, then its structured content, inside the framing
    the SDK would write. `close` frees the body, written or not."""

    request_id: int | str
    head: bytes  # up to the text's opening quote
    middle: bytes  # from the text's closing quote to the structured content
    tail: bytes
    body: GraphBody

    def pieces(self) -> Iterator[bytes]:
        """The line, without its newline, a slice at a time."""
        yield self.head
        for piece in self.body.text_pieces():
            # Escaping is per character: the pieces' escapes are the whole text's.
            yield _encode_json(piece.decode())[1:-1]
        yield self.middle
        yield from self.body.structured_pieces()
        yield self.tail

    def close(self) -> None:
        self.body.close()


def _failure(call: FastCall, problem: Exception) -> bytes | SessionMessage:
    """The JSON-RPC error the SDK answers a failing handler with, in each era."""
    # An SDK error (MCPError, pydantic's ValidationError) has its own answer; none can be
    # raised while neither is loaded, and the handshake era's catch-all is code 0.
    raised_by_sdk = "mcp.shared.exceptions" in sys.modules or "pydantic_core" in sys.modules
    if raised_by_sdk or call.version in MODERN_PROTOCOL_VERSIONS:
        from graphmem.wire.sdk_calls import failure  # noqa: PLC0415

        return failure(call.request_id, call.version, problem)
    return error_line(call.request_id, 0, str(problem))


def plain_id(request_id: object) -> TypeIs[int | str]:
    """An id both parsers read alike and msgspec writes back unchanged."""
    if isinstance(request_id, str):
        return True
    return isinstance(request_id, int) and not isinstance(request_id, bool) and request_id in _INT64
