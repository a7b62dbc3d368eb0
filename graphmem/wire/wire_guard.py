"""Reading each line from the client for routing, and answering the ones the SDK cannot take.

The SDK's stdio transport drops what it cannot parse, and pydantic reads a request with a
malformed id (`true`, `1.5`, `null`, an object) as a notification, which is never answered:
the client waits forever. JSON-RPC asks for an error response to every request, with id null
when the id cannot be read. Here each line is measured (projections.json_depth) and decoded once,
then classed: a request, a notification, a response to the server, or refused with the error it
deserves. A tool call with text no parser can store gets an isError result it can show the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import msgspec

from graphmem.protocol import coerce_request_id, error_line
from graphmem.wire.wire_lines import Oversized
from projections.json_depth import MAX_NESTING, nesting_exceeds

__all__ = [
    "DRAIN_TIMEOUT",
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "UNORDERED_METHODS",
    "Encoded",
    "InFlight",
    "Line",
    "leading_fields",
    "oversized_reply",
    "read_line",
    "valid_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
DRAIN_TIMEOUT = 30.0

# Requests that change nothing, or that stay open by design (a modern client's event stream):
# they neither wait for the calls before them nor hold up the calls behind them.
UNORDERED_METHODS = frozenset({"ping", "subscriptions/listen"})

_decode_json = msgspec.json.Decoder().decode

Kind = Literal["request", "notification", "response", "refused"]


@dataclass(frozen=True)
class Encoded:
    """A response line encoded here or by the fast path (the SDK's bytes for it), to the
    request `request_id` (None: one whose id could not be read)."""

    request_id: Any
    data: bytes


@dataclass(frozen=True)
class Line:
    """One line from the client, read: what it is, and what routing needs of it."""

    kind: Kind
    raw: bytes
    value: Any = None  # the decoded JSON, for requests, notifications and responses
    request_id: Any = None
    method: str | None = None
    reply: Encoded | None = None  # for a refused line: the answer it gets
    # False when only the lenient fallback could decode it: such a line is left to the SDK.
    exact: bool = True

    @property
    def ordered(self) -> bool:
        """Answered in turn: started only once every earlier ordered request is answered."""
        return self.kind == "refused" or (
            self.kind == "request" and self.method not in UNORDERED_METHODS
        )


def valid_id(value: object) -> bool:
    """A JSON-RPC id MCP accepts: a string or an integer (a bool is not one)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def error(request_id: Any, code: int, message: str) -> Encoded:
    """The SDK's JSON-RPC error line to `request_id`."""
    return Encoded(request_id, error_line(request_id, code, message))


def _refused(raw: bytes, request_id: Any, message: str, code: int = INVALID_REQUEST) -> Line:
    return Line("refused", raw, reply=error(request_id, code, message))


def read_line(raw: bytes) -> Line:
    """What `raw` (one line, without its newline) is, decoded and classed."""
    if nesting_exceeds(raw):
        fields = leading_fields(raw)
        return _refused(
            raw,
            fields.get("id") if valid_id(fields.get("id")) else None,
            f"Invalid Request: the message nests arrays and objects more than {MAX_NESTING} "
            "levels deep, the limit for one JSON-RPC message; send flatter arguments.",
        )
    try:
        value = _decode_json(raw)
    except msgspec.DecodeError:
        # Invalid UTF-8 or a lone surrogate: read as the SDK reads it (bad bytes become U+FFFD),
        # with Python's parser, which also takes escaped lone surrogates.
        try:
            value = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return _refused(raw, None, "Parse error: the line is not valid JSON", PARSE_ERROR)
        line = _classify(raw, value)
        return Line(line.kind, raw, value, line.request_id, line.method, line.reply, exact=False)
    return _classify(raw, value)


def _classify(raw: bytes, value: Any) -> Line:
    if not isinstance(value, dict):
        what = "batches (JSON arrays) are not supported" if isinstance(value, list) else ""
        return _refused(
            raw,
            None,
            f"Invalid Request: {what or 'a JSON-RPC message is a JSON object'}; "
            "send one JSON-RPC object per line.",
        )
    has_id = "id" in value
    request_id = value.get("id")
    answer_id = request_id if valid_id(request_id) else None
    method = value.get("method")
    if "method" not in value:
        if has_id and answer_id is not None and ("result" in value or "error" in value):
            return Line("response", raw, value, answer_id)
        return _refused(
            raw, answer_id, 'Invalid Request: a request needs a "method" string and an "id".'
        )
    problem = _request_problem(value, has_id, method)
    if problem:
        return _refused(raw, answer_id, f"Invalid Request: {problem}.")
    if not has_id:
        return Line("notification", raw, value, None, method)
    return Line("request", raw, value, request_id, method)


def _request_problem(value: dict[str, Any], has_id: bool, method: object) -> str:
    if has_id and not valid_id(value["id"]):
        return "the id must be a string or an integer"
    if not isinstance(method, str):
        return '"method" must be a string'
    if value.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "params" in value and not isinstance(value["params"], dict):
        return '"params" must be an object'
    return ""


_MEMBER = re.compile(
    rb'\s*"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null)\s*,?'
)


def leading_fields(raw: bytes) -> dict[str, Any]:
    """The scalar members an object on `raw` opens with, read without parsing the rest: the id
    and method of a line too deep or too long to parse, when the client wrote them first."""
    fields: dict[str, Any] = {}
    opening = re.match(rb"\s*\{", raw)
    position = opening.end() if opening else len(raw)
    while member := _MEMBER.match(raw, position):
        try:
            fields[json.loads(b'"' + member[1] + b'"')] = json.loads(member[2])
        except ValueError:
            break
        position = member.end()
    return fields


def oversized_reply(line: Oversized, limit: int) -> Encoded:
    """The answer to a line over the size limit, to the id it opened with when it did."""
    request_id = leading_fields(line.head).get("id")
    return error(
        request_id if valid_id(request_id) else None,
        INVALID_REQUEST,
        f"Invalid Request: the line is {line.size} bytes, over the limit of {limit} bytes "
        "(GRAPHMEM_MAX_LINE_BYTES); send smaller requests or raise the limit.",
    )


class InFlight:
    """Requests handed on and not yet answered. The ordered ones gate the next ordered request."""

    def __init__(self) -> None:
        self.ids: dict[Any, bool] = {}  # the request's id -> whether it is ordered
        self._ordered = 0
        # Events only for those waiting: most requests are answered before anyone waits.
        self._empty_waiters: list[anyio.Event] = []
        self._settled_waiters: list[anyio.Event] = []

    @property
    def settled(self) -> bool:
        """No ordered request is in flight."""
        return self._ordered == 0

    def started(self, request_id: Any, *, ordered: bool = True) -> None:
        key = coerce_request_id(request_id)
        self.answered(key)  # a reused id replaces the request it named
        self.ids[key] = ordered
        self._ordered += ordered

    def answered(self, request_id: Any) -> None:
        if request_id is None:
            return
        ordered = self.ids.pop(coerce_request_id(request_id), None)
        if ordered is None:
            return
        self._ordered -= ordered
        if self._ordered == 0:
            _wake_all(self._settled_waiters)
        if not self.ids:
            _wake_all(self._empty_waiters)

    async def wait_empty(self) -> None:
        await _wait_until(not self.ids, self._empty_waiters)

    async def wait_settled(self) -> None:
        await _wait_until(self.settled, self._settled_waiters)


async def _wait_until(done: bool, waiters: list[anyio.Event]) -> None:
    if done:
        return
    event = anyio.Event()
    waiters.append(event)
    try:
        await event.wait()
    finally:
        if event in waiters:
            waiters.remove(event)


def _wake_all(waiters: list[anyio.Event]) -> None:
    for event in waiters:
        event.set()
    waiters.clear()
