"""Newline-delimited lines from the client, each bounded in size.

A line past the limit cannot be parsed, but the stream can be resynchronised at the next
newline: its bytes are dropped as they arrive (only its head is kept, to find the request id)
and the reader goes on with the line after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["HEAD_BYTES", "LineReader", "Oversized"]

HEAD_BYTES = 64 * 1024
"""How much of an oversized line is kept: enough for the members a client writes first."""

# Past this many consumed bytes the buffer is compacted, so each line costs only its own length.
_COMPACT_AT = 1024 * 1024


@dataclass(frozen=True)
class Oversized:
    """A line longer than the limit, skipped through its newline."""

    head: bytes
    size: int


class LineReader:
    """Lines from `read`, an awaitable that returns the next bytes or b"" at the end."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], max_line_bytes: int) -> None:
        self._read = read
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._start = 0  # where the next line begins in the buffer
        self._searched = 0  # no newline before here
        self._skipped: tuple[bytes, int] | None = None  # (head, size) of a line being dropped
        self._ended = False

    async def next(self) -> bytes | Oversized | None:
        """The next line without its newline, an Oversized one, or None at the end."""
        while True:
            end = self._buffer.find(b"\n", self._searched)
            if end >= 0:
                return self._take(end)
            self._searched = len(self._buffer)
            if self._skipped is not None or self._searched - self._start > self.max_line_bytes:
                self._skip_buffered()
            if self._ended:
                return self._last()
            chunk = await self._read()
            if chunk:
                self._buffer += chunk
            else:
                self._ended = True

    def _take(self, end: int) -> bytes | Oversized:
        line = bytes(self._buffer[self._start : end])
        self._start = self._searched = end + 1
        if self._start >= _COMPACT_AT:
            del self._buffer[: self._start]
            self._start = self._searched = 0
        if self._skipped is not None:
            head, size = self._skipped
            self._skipped = None
            return Oversized(head, size + len(line))
        if len(line) > self.max_line_bytes:
            return Oversized(line[:HEAD_BYTES], len(line))
        return line

    def _skip_buffered(self) -> None:
        """Drop the buffered part of an oversized line, keeping its head."""
        dropped = bytes(self._buffer[self._start : self._start + HEAD_BYTES])
        size = len(self._buffer) - self._start
        if self._skipped is not None:
            dropped, size = self._skipped[0], self._skipped[1] + size
        self._skipped = (dropped, size)
        del self._buffer[:]
        self._start = self._searched = 0

    def _last(self) -> bytes | Oversized | None:
        """What remains at the end: a last line without its newline, if any."""
        if self._skipped is not None or self._start < len(self._buffer):
            return self._take(len(self._buffer))
        return None
