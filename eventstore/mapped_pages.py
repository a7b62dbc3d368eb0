"""Handing the log's mapped pages back: the memory map keeps every page a process has touched
counted in its resident set until the kernel needs the memory, so a long-running writer
(which touches each new page of the log as it appends) would look ever larger than a fresh
process on the same data. The pages stay in the page cache; dropping this process's mapping
of them costs a minor fault on the next touch."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["release_mapped_pages"]

_MADV_DONTNEED = 4  # Linux
_libc: ctypes.CDLL | None = None


def _madvise() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    global _libc  # noqa: PLW0603 (loaded once, on first use)
    if not sys.platform.startswith("linux"):
        return None
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc.madvise.restype = ctypes.c_int
    return _libc.madvise


def release_mapped_pages(data_file: str | os.PathLike[str]) -> int:
    """Drop this process's resident pages of every read-only shared mapping of `data_file`
    (LMDB maps its data file read-only unless opened with writemap); returns the bytes of
    mapping advised. Never raises: on any other platform, or any surprise, it does nothing.

    The caller must hold off anything that remaps the file (a map resize) meanwhile."""
    madvise = _madvise()
    if madvise is None:
        return 0
    target = os.fspath(os.path.realpath(data_file))
    released = 0
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or fields[5].rstrip("\n") != target:
                    continue
                if not fields[1].startswith("r") or "w" in fields[1] or fields[1][3] != "s":
                    continue  # only a read-only shared mapping can be dropped and re-read safely
                low, high = (int(bound, 16) for bound in fields[0].split("-"))
                if madvise(low, high - low, _MADV_DONTNEED) == 0:
                    released += high - low
    except OSError:
        return released
    return released
