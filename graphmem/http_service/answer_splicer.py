"""Whole-graph answers written into the SDK's HTTP response slice by slice (issue 21, item 3).

ASGI middleware directly around the SDK's streamable-HTTP app, inside every guard. For a
handshake-era POST (the 2025-06-18 / 2025-11-25 wire: the MCP-Protocol-Version header absent
or one of those, as the SDK's session manager routes it) it files an `AnswerSlot` in the
scope; a tool call that comes in that request and has a spooled answer is given to the SDK as
stand-ins (graphmem.spliced_answers). Everything the SDK validates it still validates, and it
frames the response as always: the JSON body or the one SSE `message` event, with its event
id, session header and status. Here, the response message that carries the stand-ins is cut
at them and written as: the SDK's bytes up to the text, the indented text JSON-escaped a batch
at a time, the SDK's bytes between, the compact structured content a batch at a time, the
SDK's bytes after; byte for byte what the SDK would have sent for the whole result. A JSON
body's Content-Length is counted first, from the spool (a pass that formats and escapes, but
keeps one slice in memory). The 2026-07-28 era (`handle_modern_request`, which encodes with
`json.dumps`' ASCII escapes) gets no slot and takes the SDK's path, the answer whole.

Every `send` of the request goes through one lock, so nothing (sse-starlette's pings) can
land inside the spliced event. uvicorn drops a send once its client is gone, silently; a
watcher on `receive` notices the disconnect and stops the answer (`client_gone`); the spool is
freed either way, and when the request ends whatever it did not write.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import msgspec
import structlog
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.spliced_answers import SLOT_KEY, STRUCTURED_KEY, TEXT_STAND_IN, AnswerSlot
from graphmem.tools.graph_body import GraphBody

__all__ = ["AnswerSplicer"]

log = structlog.get_logger(__name__)

_encode_json = msgspec.json.Encoder().encode


class AnswerSplicer:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _handshake_era(scope):
            await self.app(scope, receive, send)
            return
        slot = AnswerSlot()
        scope[SLOT_KEY] = slot
        try:
            await self.app(scope, receive, _SplicingSend(slot, receive, send))
        finally:
            slot.close()


def _handshake_era(scope: Scope) -> bool:
    version = Headers(scope=scope).get(MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


class _SplicingSend:
    """The `send` of one request, writing a spooled answer where its stand-ins are."""

    def __init__(self, slot: AnswerSlot, receive: Receive, send: Send) -> None:
        self.slot = slot
        self.receive = receive
        self.send = send
        self.lock = anyio.Lock()
        self.start: Message | None = None  # a JSON response's start, held for its length
        self.sent = 0  # bytes of the answer being spliced sent so far

    async def __call__(self, message: Message) -> None:
        async with self.lock:
            if message["type"] == "http.response.start" and self.slot.bodies:
                if any(name == b"content-length" for name, _ in message.get("headers", ())):
                    self.start = message  # its length may change: sent with the body
                    return
            elif message["type"] == "http.response.body" and self.slot.bodies:
                found = _stand_ins(self.slot, message.get("body", b""))
                if found is not None:
                    await self._splice(message, *found)
                    return
            if self.start is not None:
                start, self.start = self.start, None
                await self.send(start)
            await self.send(message)

    async def _splice(self, message: Message, body: GraphBody, cuts: list[_Cut]) -> None:
        started = time.perf_counter()
        self.sent = 0
        finished = failed = False
        try:
            if self.start is not None:
                start, self.start = self.start, None
                length = 0
                for piece in _pieces(message["body"], cuts, body):
                    length += len(piece)
                    await anyio.lowlevel.checkpoint()  # a long count must not hold the loop
                await self.send(_with_length(start, length))
            finished = await self._write(_pieces(message["body"], cuts, body), message)
        except Exception:  # the spool unreadable: the edge, the SDK answers 500
            failed = True
            log.exception("answer_stream_failed", transport="http", sent_bytes=self.sent)
            raise
        finally:
            # Written, failed or stopped (the watcher saw the client go, or the SDK's SSE
            # response was cancelled by its own disconnect listener): the spool is freed now.
            body.close()
            if finished:
                ms = round((time.perf_counter() - started) * 1000, 3)
                log.info("answer_streamed", transport="http", bytes=self.sent, ms=ms)
            elif not failed:
                log.info("client_gone", transport="http", sent_bytes=self.sent)

    async def _write(self, pieces: Iterator[bytes], message: Message) -> bool:
        """Sends `pieces` as body messages, the last with the message's `more_body`: True
        when all went out, False when the client went away first."""
        finished = False
        async with anyio.create_task_group() as watch:
            watch.start_soon(self._watch_disconnect, watch.cancel_scope)
            piece = next(pieces)
            for following in pieces:
                await self.send({"type": "http.response.body", "body": piece, "more_body": True})
                self.sent += len(piece)
                # A send into a socket that takes it all never suspends: without this the loop
                # would serve no one else, nor hear of a client gone, until the answer is out.
                await anyio.lowlevel.checkpoint()
                piece = following
            last = message.get("more_body", False)
            await self.send({"type": "http.response.body", "body": piece, "more_body": last})
            self.sent += len(piece)
            finished = True
            watch.cancel_scope.cancel()
        return finished

    async def _watch_disconnect(self, scope: anyio.CancelScope) -> None:
        # The request's body was read before the call ran: what comes now is a disconnect.
        while (await self.receive())["type"] != "http.disconnect":
            pass
        scope.cancel()


class _Cut:
    """Where a stand-in sits in the SDK's message: [start, end) and what goes there."""

    def __init__(self, start: int, end: int, *, text: bool) -> None:
        self.start, self.end, self.text = start, end, text


def _stand_ins(slot: AnswerSlot, data: bytes) -> tuple[GraphBody, list[_Cut]] | None:
    """The body whose stand-ins are both in `data`, taken from the slot, with where they are."""
    for token in list(slot.bodies):
        text = f'"{TEXT_STAND_IN}{token}"'.encode()
        structured = f'{{"{STRUCTURED_KEY}":"{token}"}}'.encode()
        # The last of each: a client's request id comes before the result, never after.
        text_at, structured_at = data.rfind(text), data.rfind(structured)
        if text_at < 0 or structured_at < 0:
            continue
        body = slot.take(token)
        assert body is not None
        cuts = [
            _Cut(text_at, text_at + len(text), text=True),
            _Cut(structured_at, structured_at + len(structured), text=False),
        ]
        return body, sorted(cuts, key=lambda cut: cut.start)
    return None


def _pieces(data: bytes, cuts: list[_Cut], body: GraphBody) -> Iterator[bytes]:
    """`data` with the answer in place of its stand-ins, a slice at a time."""
    at = 0
    for cut in cuts:
        yield data[at : cut.start]
        if cut.text:
            yield b'"'
            for piece in body.text_pieces():
                # Escaping is per character: the pieces' escapes are the whole text's.
                yield _encode_json(piece.decode())[1:-1]
            yield b'"'
        else:
            yield from body.structured_pieces()
        at = cut.end
    yield data[at:]


def _with_length(start: Message, length: int) -> Message:
    headers = [
        (name, str(length).encode() if name == b"content-length" else value)
        for name, value in start.get("headers", ())
    ]
    return {**start, "headers": headers}
