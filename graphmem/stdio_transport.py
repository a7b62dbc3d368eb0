"""MCP over stdio without a thread hop per line.

The SDK's stdio transport reads and writes through worker threads (`anyio.wrap_file`): about
a dozen thread hand-offs per tool call, most of the per-call cost on a small graph. This one
reads and writes the pipes on the event loop. Like the SDK's, it claims fds 0 and 1 while
serving — fd 0 reads the null device and fd 1 goes to stderr — so nothing else in the process
can read the protocol or write stray bytes into it. Where the standard streams are not pipes
or sockets (a regular file, say), the caller falls back to the SDK's transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
from mcp import types
from mcp.shared.message import SessionMessage

from graphmem.wire_guard import DRAIN_TIMEOUT, InFlight, reply_for

_encode_json = msgspec.json.Encoder().encode

# A single JSON-RPC line may carry a large call (a 10 MB observation is refused by the tool,
# but it must first be read to be refused); past this, the line is a protocol fault.
MAX_LINE_BYTES = 256 * 1024 * 1024


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


def _restore_standard_fds(wire_in: int, wire_out: int) -> None:
    with contextlib.suppress(OSError):
        os.dup2(wire_in, 0)
    with contextlib.suppress(OSError):
        os.dup2(wire_out, 1)


class _Wire:
    """The protocol pipes: lines in, lines out, and the requests still owed an answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.in_flight = InFlight()
        self.incoming_send, self.incoming = anyio.create_memory_object_stream[SessionMessage](0)
        self.outgoing, self.outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)

    def write(self, session_message: SessionMessage) -> None:
        message = session_message.message
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            # The result is already the SDK's serialised wire dict: encoding it with msgspec
            # spares a third pydantic pass over what may be a whole graph.
            data = _encode_json({"jsonrpc": "2.0", "id": message.id, "result": message.result})
        else:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        self.writer.write(data + b"\n")
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.in_flight.answered(message.id)

    async def read_lines(self) -> None:
        async with self.incoming_send:
            await self._read_until_closed()
            with anyio.move_on_after(DRAIN_TIMEOUT):
                await self.in_flight.empty.wait()

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
            await self.incoming_send.send(SessionMessage(message))

    async def write_lines(self) -> None:
        async with self.outgoing_receive:
            async for session_message in self.outgoing_receive:
                self.write(session_message)
                await self.writer.drain()


@contextlib.asynccontextmanager
async def fast_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) of SessionMessages, like `mcp.server.stdio.stdio_server`,
    with the wire guard built in: an unparsable request is answered here, and when the client
    closes stdin, requests already read are answered before the server sees the end."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = _claim_standard_fds()
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
            yield wire.incoming, wire.outgoing
            group.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        _restore_standard_fds(wire_in, wire_out)
