"""MCP over stdio without a thread hop per line.

The SDK's stdio transport reads and writes through worker threads (`anyio.wrap_file`): about
a dozen thread hand-offs per tool call, most of the per-call cost on a small graph. This one
reads and writes the pipes on the event loop. Like the SDK's, it claims fds 0 and 1 while
serving — fd 0 reads the null device and fd 1 goes to stderr — so nothing else in the process
can read the protocol or write stray bytes into it. Where the standard streams are not pipes
or sockets (a regular file, say), the caller falls back to the SDK's transport.

The server may attach a fast path to the read stream it is handed (`WireReadStream.attach`,
graphmem.fast_calls): the plain tool calls it takes are then answered on this wire, off the
SDK's per-call pipeline, and every other message still goes to the SDK. The wire tracks what
the fast path needs to know of the session (era, negotiated version, client) from the
messages it carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
import structlog
from mcp import types
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage

from graphmem.fast_calls import FastCall, FastCalls, SessionView
from graphmem.wire_guard import DRAIN_TIMEOUT, InFlight, reply_for

log = structlog.get_logger(__name__)

_encode_json = msgspec.json.Encoder().encode

# A single JSON-RPC line may carry a large call (a 10 MB observation is refused by the tool,
# but it must first be read to be refused); past this, the line is a protocol fault.
MAX_LINE_BYTES = 256 * 1024 * 1024

# Below this, a line and its newline go out in one system call; above, the copy would cost more.
_SMALL_LINE = 64 * 1024

# Linux pipes hold 64 KiB by default: a 40 MB answer would take some 600 event-loop turns.
PIPE_BYTES = 1024 * 1024


def stdio_is_streamable() -> bool:
    """True when fds 0 and 1 are pipes or sockets, which the event loop can watch."""
    try:
        return all(
            stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
            for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode)
        )
    except OSError:
        return False


def _claim_standard_fds() -> tuple[int, int]:
    """Private copies of the protocol fds; 0 and 1 are pointed away from the wire."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _widen_pipe(fd: int) -> None:
    if not sys.platform.startswith("linux") or not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    # Best effort: the kernel caps the size for unprivileged processes (pipe-max-size).
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)


def _restore_standard_fds(wire_in: int, wire_out: int) -> None:
    with contextlib.suppress(OSError):
        os.dup2(wire_in, 0)
    with contextlib.suppress(OSError):
        os.dup2(wire_out, 1)


@dataclass(frozen=True)
class _Encoded:
    """A response line encoded by the fast path, queued behind whatever the SDK wrote first."""

    request_id: Any
    data: bytes


class _Wire:
    """The protocol pipes: lines in, lines out, and the requests still owed an answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.in_flight = InFlight()
        self.session = SessionView()
        self.fast: FastCalls | None = None
        # Plain asyncio tasks: an anyio task and cancel scope per call cost a tenth of a call.
        self._fast_tasks: dict[Any, asyncio.Task[None]] = {}
        self.incoming_send, self.incoming = anyio.create_memory_object_stream[SessionMessage](0)
        # One queue for the SDK's messages and the fast path's lines, so a notification the
        # SDK sent during a call (resources/updated) still goes out before the call's answer.
        self.outgoing, self.outgoing_receive = anyio.create_memory_object_stream[
            SessionMessage | _Encoded
        ](0)

    def write(self, item: SessionMessage | _Encoded) -> None:
        if isinstance(item, _Encoded):
            self._write_line(item.data)
            self.in_flight.answered(item.request_id)
            return
        message = item.message
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            # The result is already the SDK's serialised wire dict: encoding it with msgspec
            # spares a third pydantic pass over what may be a whole graph.
            data = _encode_json({"jsonrpc": "2.0", "id": message.id, "result": message.result})
        else:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        self._write_line(data)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.session.saw_answer(message)
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
                await self._read_until_closed()
                with anyio.move_on_after(DRAIN_TIMEOUT):
                    await self.in_flight.empty.wait()
            finally:
                for task in list(self._fast_tasks.values()):
                    task.cancel()

    async def _read_until_closed(self) -> None:
        while True:
            try:
                line = await self.reader.readline()
            except (asyncio.LimitOverrunError, ValueError):
                return  # a line past MAX_LINE_BYTES: the stream cannot be resynchronised
            if not line:
                return
            if not line.strip():
                continue
            fast = self.fast.take(line, self.session) if self.fast is not None else None
            if fast is not None:
                self._start_fast(fast)
                continue
            text = line.decode("utf-8", "replace")  # as the SDK: bad bytes become U+FFFD
            try:
                message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
            except Exception as problem:
                reply = reply_for(problem)
                if reply is not None:
                    self.write(reply)
                    await self.writer.drain()
                continue
            if isinstance(message, types.JSONRPCRequest):
                self.in_flight.started(message.id)
                self.session.saw_request(message.method, message.id, message.params)
            elif isinstance(message, types.JSONRPCNotification):
                self._saw_notification(message)
            await self.incoming_send.send(SessionMessage(message))

    def _saw_notification(self, message: types.JSONRPCNotification) -> None:
        if message.method != "notifications/cancelled":
            return
        request_id = as_request_id((message.params or {}).get("requestId"))
        if request_id is None:
            return
        key = coerce_request_id(request_id)
        task = self._fast_tasks.pop(key, None)
        if task is not None:
            task.cancel()
        # JSON-RPC: a cancelled request gets no answer, from the fast path or the SDK; it
        # must not hold up the drain when the client closes stdin.
        for owed in [i for i in self.in_flight.ids if coerce_request_id(i) == key]:
            self.in_flight.answered(owed)

    def _start_fast(self, call: FastCall) -> None:
        self.in_flight.started(call.request_id)
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
            if self._writer_idle():
                # Nothing queued ahead of this answer: write it now, saving a task switch.
                self.write(item)
                await self.writer.drain()
            else:
                await self.outgoing.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            log.debug("answer_dropped", reason="write stream closed")
            self.in_flight.answered(call.request_id)

    def _writer_idle(self) -> bool:
        """True when write_lines waits for its next item and none is on its way: an item the
        SDK handed over is taken off the waiting list at once, before it is written."""
        stats = self.outgoing.statistics()
        return stats.tasks_waiting_receive > 0 and stats.tasks_waiting_send == 0

    async def write_lines(self) -> None:
        async with self.outgoing_receive:
            async for item in self.outgoing_receive:
                self.write(item)
                await self.writer.drain()


class WireReadStream:
    """The read stream the SDK is handed: the wire's incoming messages, and the one place a
    server can attach a fast path to the wire it reads from."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire
        self._inner = wire.incoming

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


@contextlib.asynccontextmanager
async def fast_stdio_server() -> AsyncIterator[tuple[WireReadStream, Any]]:
    """(read_stream, write_stream) of SessionMessages, like `mcp.server.stdio.stdio_server`,
    with the wire guard built in: an unparsable request is answered here, and when the client
    closes stdin, requests already read are answered before the server sees the end."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = _claim_standard_fds()
    _widen_pipe(wire_out)
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    wire = _Wire(reader, asyncio.StreamWriter(write_transport, write_protocol, None, loop))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(wire.read_lines)
            group.start_soon(wire.write_lines)
            yield WireReadStream(wire), wire.outgoing
            group.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        _restore_standard_fds(wire_in, wire_out)
