"""MCP over stdio without a thread hop per line.

The SDK's stdio transport reads and writes through worker threads (`anyio.wrap_file`): about
a dozen thread hand-offs per tool call, most of the per-call cost on a small graph. This one
reads and writes pipes on the event loop. Like the SDK's, it claims fds 0 and 1 while
serving — fd 0 reads the null device and fd 1 goes to stderr — so nothing else in the process
can read the protocol or write stray bytes into it. Where a standard stream is not a pipe or a
socket (a regular file, a terminal), that stream is read or written in a worker thread, behind
the same wire (graphmem.wire.stdio_wire): one set of rules for every kind of stdio.

At the end every answer is written whole before the pipe closes: the client may close stdin
right after its last request and still read a 10 MB answer to the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import structlog

from graphmem.config import MAX_LINE_BYTES
from graphmem.early_handshake import Handshake, streamable
from graphmem.wire.fast_calls import FastCalls
from graphmem.wire.front import Front
from graphmem.wire.stdio_wire import Wire, WireReadStream
from graphmem.wire.wire_guard import DRAIN_TIMEOUT
from graphmem.wire.wire_lines import LineReader

__all__ = ["MAX_LINE_BYTES", "WireReadStream", "fast_stdio_server"]

log = structlog.get_logger(__name__)

# Linux pipes hold 64 KiB by default: a 40 MB answer would take some 600 event-loop turns.
PIPE_BYTES = 1024 * 1024

_CHUNK = 1024 * 1024

# What the pipe transport may hold beyond the pipe before a writer waits for the client. Small:
# a large answer is made in 64 KiB slices (graphmem.tools.graph_body) behind a 1 MiB pipe, and
# every byte buffered here is freed into a heap glibc does not trim (4 MiB left ~7 MiB of RssAnon
# after broad answers at 50k, bench.answer_memory; the answers' CPU was the same).
WRITE_AHEAD_BYTES = 256 * 1024


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


class _FileWriter:
    """Writes to a stream the event loop cannot watch (a regular file), in a worker thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[bytes] = []
        self._lock = anyio.Lock()  # one thread writes at a time, in order

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        async with self._lock:
            while self._pending:
                # Taken off the list once written: a drain cancelled at the end (the session
                # over) leaves it for the final flush.
                count = len(self._pending)
                await anyio.to_thread.run_sync(_write_all, self._fd, b"".join(self._pending))
                del self._pending[:count]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _open_reader(fd: int) -> tuple[Callable[[], Awaitable[bytes]], Callable[[], None]]:
    """A read function for `fd` and what closes it."""
    if not streamable(fd):

        async def read_in_thread() -> bytes:
            return await anyio.to_thread.run_sync(os.read, fd, _CHUNK, abandon_on_cancel=True)

        return read_in_thread, lambda: None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    return (lambda: reader.read(_CHUNK)), transport.close


async def _open_writer(fd: int) -> asyncio.StreamWriter | _FileWriter:
    """An asyncio StreamWriter on a pipe, or a _FileWriter: both write and drain."""
    if not streamable(fd):
        return _FileWriter(fd)
    _widen_pipe(fd)
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb", buffering=0)
    )
    # drain() returns once no more than this waits in memory: a line written in slices
    # (stdio_wire) makes its next slice while the client reads the last one.
    transport.set_write_buffer_limits(high=WRITE_AHEAD_BYTES)
    return asyncio.StreamWriter(transport, protocol, None, loop)


@contextlib.asynccontextmanager
async def fast_stdio_server(
    max_line_bytes: int = MAX_LINE_BYTES,
    handshake: Handshake | None = None,
    *,
    front: Front | None = None,
    fast: FastCalls | None = None,
) -> AsyncIterator[tuple[WireReadStream, Any]]:
    """(read_stream, write_stream) of SessionMessages, like `mcp.server.stdio.stdio_server`,
    with the wire guard built in: a line the SDK cannot take is answered here, requests are
    served in the order read, and when the client closes stdin, requests already read are
    answered, and every answer written whole, before the server sees the end.

    With `front` the SDK is not loaded yet: the front and `fast` (the fast path) answer what
    they can, and `WireReadStream.sdk_needed` says when the SDK's session must start."""
    if handshake is not None:
        handshake.take_over()  # before the fds are claimed: the early reads use them
    wire_in, wire_out = _claim_standard_fds()
    try:
        read, close_reader = await _open_reader(wire_in)
        writer = await _open_writer(wire_out)
        if handshake is not None and handshake.consumed:
            read = _read_first(handshake.consumed, read)
        wire = Wire(LineReader(read, max_line_bytes), writer, handshake=handshake, front=front)
        wire.fast = fast
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(wire.read_lines)
                group.start_soon(wire.write_lines)
                yield WireReadStream(wire), wire.outgoing
                group.cancel_scope.cancel()
        finally:
            close_reader()
            await _flush(writer)
    finally:
        _restore_standard_fds(wire_in, wire_out)


def _read_first(
    consumed: bytes, read: Callable[[], Awaitable[bytes]]
) -> Callable[[], Awaitable[bytes]]:
    """`read`, after the bytes the early handshake read from the pipe before the server ran."""
    pending = [consumed]

    async def read_after() -> bytes:
        if pending:
            return pending.pop()
        return await read()

    return read_after


async def _flush(writer: asyncio.StreamWriter | _FileWriter) -> None:
    """Write out what is still buffered, bounded (the client may have stopped reading), then
    close: a pipe transport closed with data buffered would lose it when the loop ends."""
    with anyio.move_on_after(DRAIN_TIMEOUT, shield=True) as scope:
        with contextlib.suppress(ConnectionError):
            if isinstance(writer, asyncio.StreamWriter):
                pending = writer.transport.get_write_buffer_size()
                if pending:  # the client has closed stdin and not yet read these
                    log.info("answers_flushing", bytes=pending)
                # drain() waits only for the buffer to fall below its high-water mark; with
                # the mark at zero it waits until every byte is in the pipe.
                writer.transport.set_write_buffer_limits(high=0)
            await writer.drain()
    if isinstance(writer, asyncio.StreamWriter):
        writer.close()
    if scope.cancelled_caught:
        log.warning("answer_not_flushed", reason=f"the client read nothing for {DRAIN_TIMEOUT} s")
