"""One byte of memory shared by a server and its sender process: 1 while the sender's
outbound loop is idle (waiting for a commit), 0 while it is busy or has been woken.

The writer wakes the sender with a byte on a pipe after a commit; a write syscall per commit
(and the kernel waking the sender's process) cost the writer a few microseconds of a 0.1 ms
write, though in a burst the sender only looks at the pipe between rounds. With the flag the
writer writes the byte only when the sender is idle, and clears the flag so the rest of the
burst writes none. No wake is lost: the sender sets the flag, then drains the pipe, then reads
the log; a commit the read misses came after the flag was set, and its writer, seeing the flag,
writes the byte (clearing the flag is always followed by the byte). If memory order ever hid
the flag, the sender's loop still reads the log every few seconds (IDLE_RECHECK). Linux
(memfd); elsewhere there is no flag and every commit writes its byte, as before.
"""

from __future__ import annotations

import contextlib
import mmap
import os

__all__ = ["WakeFlag"]


class WakeFlag:
    """See the module docstring. Made by the server (`create`), opened by the sender from
    the inherited descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, 1)

    @classmethod
    def create(cls) -> WakeFlag | None:
        """A new flag, set (the first commit wakes); None where memfd is not available."""
        make = getattr(os, "memfd_create", None)
        if make is None:
            return None
        try:
            fd = make("graphmem-sender-idle")
            os.ftruncate(fd, 1)
            flag = cls(fd)
        except OSError:
            return None
        flag.set(idle=True)
        return flag

    def set(self, *, idle: bool) -> None:
        """The sender: idle (wake me with a byte) or busy (it reads the log before it waits)."""
        self._map[0] = 1 if idle else 0

    def take(self) -> bool:
        """The writer after a commit: whether to write the wake byte (the sender was idle);
        the flag is cleared, so the rest of a burst writes none (False once closed)."""
        try:
            if not self._map[0]:
                return False
            self._map[0] = 0
        except ValueError:  # closed at shutdown
            return False
        return True

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self._map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)
