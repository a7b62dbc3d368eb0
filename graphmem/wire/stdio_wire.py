"""The stdio wire: lines in, in order, to the fast path or the SDK; answers out, whole.

The server may attach a fast path to the read stream it is handed (`WireReadStream.attach`,
graphmem.wire.fast_calls): the plain tool calls it takes are then answered on this wire, off the
SDK's per-call pipeline, and every other message still goes to the SDK. The wire tracks what
the fast path needs to know of the session (era, negotiated version, client) from the
messages it carries. Every line is read first by graphmem.wire.wire_guard, which answers what the
SDK would drop or choke on.

The SDK may not be loaded at all at first (`front`, graphmem.wire.front): a handshake-era
session's plain traffic is then answered here, and the first line the front cannot answer makes
the wire load the SDK (`load_sdk`) and hand it the session's history before that line. This
module imports nothing of the SDK: its messages are read (graphmem.wire.sdk_reading) and
written only once it serves the session.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec
import structlog

from graphmem.early_handshake import Handshake
from graphmem.protocol import as_request_id, coerce_request_id
from graphmem.wire.fast_calls import FastCall, FastCalls, SessionView, StreamedLine
from graphmem.wire.front import TOOLS_LIST_CHANGED, Front, Served
from graphmem.wire.wire_guard import (
    DRAIN_TIMEOUT,
    Encoded,
    InFlight,
    Line,
    oversized_reply,
    read_line,
)
from graphmem.wire.wire_lines import LineReader, Oversized

if TYPE_CHECKING:  # imported once the SDK serves the session (`_sdk_types`)
    from mcp.shared.message import SessionMessage

__all__ = ["MAX_QUEUED", "ORDER_TIMEOUT", "Wire", "WireReadStream"]

log = structlog.get_logger(__name__)

_encode_json = msgspec.json.Encoder().encode

# Below this, a line and its newline go out in one system call; above, the copy would cost more.
_SMALL_LINE = 64 * 1024


# A response line encoded here (graphmem.wire.wire_guard, the fast path, the front): queued
# behind whatever the SDK wrote first.
_Encoded = Encoded


def _sdk_types() -> Any:
    """The SDK's `mcp.types`, for the messages it hands the wire (loaded by then)."""
    from mcp import types  # noqa: PLC0415

    return types


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


# Lines read ahead of the one being served; past this the wire stops reading until one is taken.
MAX_QUEUED = 1024

# How long an ordered request may stay unanswered before the requests behind it go ahead anyway
# (logged): every tool call is bounded well below this by the graph's own timeout.
ORDER_TIMEOUT = 600.0


class Wire:
    """The protocol pipes: lines in, lines out, and the requests still owed an answer.

    Requests are served in the order read: one is handed on (to the fast path or the SDK) only
    once every ordered request before it is answered, so a call always sees the effects of the
    calls sent before it, whichever path runs each. Lines are read ahead meanwhile, so a
    cancellation, or a client's answer to the server, reaches the request it is about at once.
    """

    def __init__(
        self,
        lines: LineReader,
        writer: _Writer,
        order_timeout: float = ORDER_TIMEOUT,
        *,
        handshake: Handshake | None = None,
        front: Front | None = None,
    ) -> None:
        """`front`: the SDK is not loaded yet; the front answers what it can, and the first
        line it cannot answer sets `sdk_decided` (the server then starts the SDK's session on
        this wire, which is handed the session's history before that line)."""
        self.lines = lines
        # The answers owed by id: the early handshake's, and the front's initialize answer.
        self.handshake = handshake if handshake is not None else Handshake(b"")
        self.writer = writer
        self.in_flight = InFlight()
        self.session = SessionView()
        self.fast: FastCalls | None = None
        self.order_timeout = order_timeout
        # Plain asyncio tasks: an anyio task and cancel scope per call cost a tenth of a call.
        self._fast_tasks: dict[Any, asyncio.Task[None]] = {}
        self._queue: deque[Line] = deque()
        self._queue_changed = anyio.Event()
        self._dispatching = False
        self._ended = False
        self._client_gone = False  # the client's end of stdout closed (write_lines)
        self.front = front
        self._pushes: set[asyncio.Task[None]] = set()
        # Set once the SDK serves the session (`sdk_wanted`), or once the wire ended without it.
        self.sdk_decided = anyio.Event()
        self.sdk_wanted = self.front is None
        self._sdk_ready = anyio.Event()
        if self.sdk_wanted:
            self.sdk_decided.set()
            self._sdk_ready.set()
        self.incoming_send, self.incoming = anyio.create_memory_object_stream["SessionMessage"](0)
        # One queue for the SDK's messages and the fast path's lines, so a notification the
        # SDK sent during a call (resources/updated) still goes out before the call's answer.
        self.outgoing, self.outgoing_receive = anyio.create_memory_object_stream[
            "SessionMessage | _Encoded | StreamedLine"
        ](0)

    def write(self, item: SessionMessage | _Encoded) -> None:
        if isinstance(item, _Encoded):
            self._write_line(item.data)
            self.in_flight.answered(item.request_id)
            return
        types = _sdk_types()
        message = item.message
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            # The result is already the SDK's serialised wire dict: encoding it with msgspec
            # spares a third pydantic pass over what may be a whole graph.
            data = _encode_json({"jsonrpc": "2.0", "id": message.id, "result": message.result})
        else:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and self.handshake.owns(
            message.id
        ):
            # The SDK's answer to an initialize or tools/list the early path may have
            # answered already.
            success = isinstance(message, types.JSONRPCResponse)
            method = self.handshake.method(message.id)
            written, problem = self.handshake.settle(message.id, data, success=success)
            if written is not None:
                self._write_line(written)
            if problem is not None:
                log.warning("early_handshake_stale", problem=problem)
                if method == "tools/list":  # the client was sent another list: it lists again
                    self._write_line(TOOLS_LIST_CHANGED)
        else:
            self._write_line(data)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            result = message.result if isinstance(message, types.JSONRPCResponse) else None
            self.session.saw_answer(message.id, result)
            self.in_flight.answered(message.id)

    def _write_line(self, data: bytes) -> None:
        if len(data) < _SMALL_LINE:
            self.writer.write(data + b"\n")  # one system call
        else:  # no copy of a whole graph just to append a newline
            self.writer.write(data)
            self.writer.write(b"\n")

    async def read_lines(self) -> None:
        async with self.incoming_send:
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._dispatch_queued)
                    await self._read_until_closed()
                    self._ended = True
                    self._wake()
                with anyio.move_on_after(DRAIN_TIMEOUT):
                    await self.in_flight.wait_empty()
            finally:
                for task in list(self._fast_tasks.values()):
                    task.cancel()
                self.sdk_decided.set()  # the SDK was never needed, or already serves

    async def _read_until_closed(self) -> None:
        while (line := await self.lines.next()) is not None:
            if isinstance(line, Oversized):
                log.warning("line_too_long", bytes=line.size, limit=self.lines.max_line_bytes)
                reply = oversized_reply(line, self.lines.max_line_bytes)
                await self._route(Line("refused", line.head, reply=reply))
            elif line.strip():
                await self._route(read_line(line))

    async def _route(self, line: Line) -> None:
        """Serve `line` now when nothing read before it waits, else queue it in turn."""
        if line.kind == "response":  # a client's answer: a request may be waiting on it
            await self._with_sdk(line, "a response from the client")
            return
        if line.method == "notifications/cancelled" and self._cancel_queued(line.value):
            return
        if line.method == "notifications/cancelled":
            if self.front is not None:
                # No SDK request to cancel: only a fast call, or one already answered.
                self._saw_notification(line.method, line.value.get("params"))
                return
            await self._with_sdk(line, "a cancellation")
            return
        if not self._queue and not self._dispatching and self._may_start(line):
            await self._dispatch(line)
            return
        while len(self._queue) >= MAX_QUEUED:
            await self._queue_changed.wait()
        self._queue.append(line)
        self._wake()

    def _wake(self) -> None:
        self._queue_changed.set()
        self._queue_changed = anyio.Event()

    def _may_start(self, line: Line) -> bool:
        return not line.ordered or self.in_flight.settled

    async def _dispatch_queued(self) -> None:
        while True:
            while not self._queue:
                if self._ended:
                    return
                await self._queue_changed.wait()
            self._dispatching = True
            try:
                line = self._queue[0]
                if line.ordered:
                    await self._wait_turn()
                if self._queue and self._queue[0] is line:  # not cancelled meanwhile
                    self._queue.popleft()
                    self._wake()
                    await self._dispatch(line)
            finally:
                self._dispatching = False

    async def _wait_turn(self) -> None:
        # Once the client has gone, a request stuck unanswered holds up the end no longer
        # than the drain does.
        bound = DRAIN_TIMEOUT if self._ended else self.order_timeout
        with anyio.move_on_after(bound):
            await self.in_flight.wait_settled()
            return
        log.warning("request_unanswered", request_ids=list(self.in_flight.ids), s=bound)

    async def _dispatch(self, line: Line) -> None:
        if line.kind == "refused":
            if line.reply is not None:
                await self._send_out(line.reply)
            return
        if line.kind == "request" and self.fast is not None and line.exact:
            fast = self.fast.take(line.value, self.session)
            if fast is not None:
                self._start_fast(fast, ordered=line.ordered)
                return
        if self.front is not None:
            served = await self.front.serve(line, self.session)
            if isinstance(served, Served):
                for data in served.lines:
                    await self._send_out(_Encoded(line.request_id, data))
                return
            await self._with_sdk(line, served)
            return
        await self._with_sdk(line, "")

    async def _with_sdk(self, line: Line, reason: str) -> None:
        """`line` to the SDK, loading it first if the front still serves the session."""
        front = self.front
        if front is not None:
            # Before any await: a line read meanwhile waits for the SDK, not the front.
            self.front = None
            log.info("sdk_loaded", reason=reason, method=line.method)
            self.sdk_wanted = True
            self.sdk_decided.set()  # the server starts the SDK's session, reading from here
            for raw in front.history:  # the session so far, as the SDK would have read it
                await self._to_sdk(read_line(raw))
            self._sdk_ready.set()
        elif not self._sdk_ready.is_set():  # the SDK is being handed the session's history
            await self._sdk_ready.wait()
        await self._to_sdk(line)

    async def _to_sdk(self, line: Line) -> None:
        from graphmem.wire.sdk_reading import to_session_message  # noqa: PLC0415 (loaded)

        types = _sdk_types()
        message, reply = to_session_message(line)
        if message is None:
            log.warning("unparsable_message", kind=line.kind, answered=reply is not None)
            if reply is not None:
                await self._send_out(reply)
            return
        if isinstance(message.message, types.JSONRPCRequest):
            request = message.message
            if request.method == "tools/list":
                # Nothing was written early for it: the SDK's answer is kept for next time.
                self.handshake.keep_listing(request.id, line.raw)
            self.in_flight.started(request.id, ordered=line.ordered)
            self.session.saw_request(request.method, request.id, request.params)
        elif isinstance(message.message, types.JSONRPCNotification):
            self._saw_notification(message.message.method, message.message.params)
        await self.incoming_send.send(message)

    def tools_changed(self) -> None:
        """Tell the client its tool list changed (the schemas in force did), as the SDK's
        session would once `notifications/initialized` came; once the SDK serves the session,
        the server's notifier does. Runs on the event loop."""
        if self.front is None or not self.front.initialized:
            return
        task = asyncio.get_running_loop().create_task(
            self._send_out(_Encoded(None, TOOLS_LIST_CHANGED))
        )
        self._pushes.add(task)
        task.add_done_callback(self._pushes.discard)

    def _cancel_queued(self, value: Any) -> bool:
        """Drop a queued request the client cancelled: it is never run nor answered."""
        request_id = as_request_id((value.get("params") or {}).get("requestId"))
        if request_id is None:
            return False
        key = coerce_request_id(request_id)
        for queued in self._queue:
            if queued.kind == "request" and coerce_request_id(queued.request_id) == key:
                self._queue.remove(queued)
                self._wake()
                return True
        return False

    def _saw_notification(self, method: str | None, params: object) -> None:
        if method != "notifications/cancelled":
            return
        request_id = as_request_id(params.get("requestId") if isinstance(params, Mapping) else None)
        if request_id is None:
            return
        task = self._fast_tasks.pop(coerce_request_id(request_id), None)
        if task is not None:
            task.cancel()
        # JSON-RPC: a cancelled request gets no answer, from the fast path or the SDK; it
        # must not hold up the drain when the client closes stdin, nor the requests behind it.
        self.in_flight.answered(request_id)

    def _start_fast(self, call: FastCall, *, ordered: bool) -> None:
        self.in_flight.started(call.request_id, ordered=ordered)
        task = asyncio.get_running_loop().create_task(self._answer_fast(call))
        key = coerce_request_id(call.request_id)
        self._fast_tasks[key] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._fast_tasks.get(key) is done:
                del self._fast_tasks[key]

        task.add_done_callback(forget)

    async def _answer_fast(self, call: FastCall) -> None:
        assert self.fast is not None
        try:
            answer = await self.fast.answer(call)
        except asyncio.CancelledError:  # by the client (never answered), or at shutdown
            self.in_flight.answered(call.request_id)
            return
        item = _Encoded(call.request_id, answer) if isinstance(answer, bytes) else answer
        try:
            await self._send_out(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            log.debug("answer_dropped", reason="write stream closed")
            self.in_flight.answered(call.request_id)
            if isinstance(item, StreamedLine):
                item.close()
        except asyncio.CancelledError:  # at shutdown, before the writer took it
            if isinstance(item, StreamedLine):
                item.close()
            raise

    async def _send_out(self, item: SessionMessage | _Encoded | StreamedLine) -> None:
        if isinstance(item, StreamedLine) or self._client_gone:
            # Always through write_lines, the one writer: while it writes the line slice by
            # slice, it is not idle, so every other answer waits in the queue behind it.
            await self.outgoing.send(item)
        elif self._writer_idle():
            # Nothing queued ahead of this answer: write it now, saving a task switch.
            self.write(item)
            await self.writer.drain()
        else:
            await self.outgoing.send(item)

    def _writer_idle(self) -> bool:
        """True when write_lines waits for its next item and none is on its way: an item the
        SDK handed over is taken off the waiting list at once, before it is written."""
        stats = self.outgoing.statistics()
        return stats.tasks_waiting_receive > 0 and stats.tasks_waiting_send == 0

    async def write_lines(self) -> None:
        async with self.outgoing_receive:
            async for item in self.outgoing_receive:
                if self._client_gone:
                    self._drop(item)
                    continue
                try:
                    if isinstance(item, StreamedLine):
                        await self._write_streamed(item)
                        continue
                    self.write(item)
                    await self.writer.drain()
                except ConnectionError as problem:
                    # The client closed its end, perhaps mid-line: nothing more can reach it.
                    # The server ends as the client's end of stdin closes; until then answers
                    # are dropped, not written into a broken pipe.
                    log.warning("client_gone", reason=str(problem) or type(problem).__name__)
                    self._client_gone = True

    def _drop(self, item: SessionMessage | _Encoded | StreamedLine) -> None:
        """An answer no client can read any more: settled unwritten."""
        if isinstance(item, StreamedLine):
            item.close()
            self.in_flight.answered(item.request_id)
        elif isinstance(item, _Encoded):
            self.in_flight.answered(item.request_id)
        else:
            types = _sdk_types()
            if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                self.in_flight.answered(item.message.id)

    async def _write_streamed(self, line: StreamedLine) -> None:
        """One line in slices, each drained before the next is made: what is held is a slice
        or two, whatever the line's size and however slowly the client reads."""
        written = slices = 0
        try:
            for piece in line.pieces():
                self.writer.write(piece)
                written += len(piece)
                slices += 1
                await self.writer.drain()
            self.writer.write(b"\n")
            await self.writer.drain()
        finally:
            line.close()
            self.in_flight.answered(line.request_id)
        log.info("answer_streamed", request_id=line.request_id, bytes=written + 1, slices=slices)


class WireReadStream:
    """The read stream the SDK is handed: the wire's incoming messages, and the one place a
    server can attach a fast path to the wire it reads from."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._inner = wire.incoming

    async def sdk_needed(self) -> bool:
        """Wait until the session needs the SDK (True: start its session on this stream) or
        the wire ended without it (False)."""
        await self._wire.sdk_decided.wait()
        return self._wire.sdk_wanted

    def tools_changed(self) -> None:
        """See Wire.tools_changed (on the event loop)."""
        self._wire.tools_changed()

    def attach(self, fast: FastCalls) -> None:
        """Answer the tool calls `fast` takes on this wire from now on."""
        self._wire.fast = fast
        log.info("fast_calls_attached")

    async def receive(self) -> SessionMessage:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> WireReadStream:
        return self

    async def __anext__(self) -> SessionMessage:
        return await self._inner.__anext__()

    async def __aenter__(self) -> WireReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
