"""Handing freed heap memory back to the system after a restore's transient peak.

A restore decodes a snapshot (hundreds of megabytes at 1M entities) next to the records it
builds: when its columns and lists are freed, glibc's malloc keeps most of the pages they
took (only the top of the heap is returned, and its mmap threshold has grown past them by
then), so the process stays larger than what it holds. `malloc_trim(0)` returns the free
pages anywhere in the heap: 54 MB of a 1M-entity graph's 864 MB restored. Python objects'
own arenas are untouched (pymalloc frees an arena only when it is empty).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["return_freed_heap"]

_trim: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
_looked = False


def return_freed_heap() -> bool:
    """Return the heap's free pages to the system, where the C library can (glibc's
    malloc_trim); True if it did. Never raises: elsewhere it does nothing."""
    global _trim, _looked  # noqa: PLW0603 (looked up once, on first use)
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
                _trim = libc.malloc_trim  # absent from musl: AttributeError
                _trim.argtypes = [ctypes.c_size_t]
                _trim.restype = ctypes.c_int
            except (OSError, AttributeError):
                _trim = None
    if _trim is None:
        return False
    _trim(0)
    return True
