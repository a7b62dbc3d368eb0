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
from mcp import types
from mcp.shared.message import SessionMessage

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


@contextlib.asynccontextmanager
async def fast_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) of SessionMessages, like `mcp.server.stdio.stdio_server`."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = _claim_standard_fds()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    in_file = os.fdopen(wire_in, "rb", buffering=0)
    out_file = os.fdopen(wire_out, "wb", buffering=0)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), in_file
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, out_file
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)

    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        async with incoming_send:
            while True:
                try:
                    line = await reader.readline()
                except (asyncio.LimitOverrunError, ValueError) as too_long:
                    await incoming_send.send(too_long)
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                text = line.decode("utf-8", "replace")  # as the SDK: bad bytes become U+FFFD
                try:
                    message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
                except Exception as problem:  # answered by the wire guard
                    await incoming_send.send(problem)
                    continue
                await incoming_send.send(SessionMessage(message))

    async def write_lines() -> None:
        async with outgoing_receive:
            async for session_message in outgoing_receive:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(data.encode("utf-8") + b"\n")
                await writer.drain()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_lines)
            group.start_soon(write_lines)
            yield incoming, outgoing
            group.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        _restore_standard_fds(wire_in, wire_out)
