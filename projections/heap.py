"""Handing freed heap memory back to the system after a server's start-up peak.

A restore decodes a snapshot (hundreds of megabytes at 1M entities) next to the records it
builds: when its columns and lists are freed, glibc's malloc keeps most of the pages they
took (only the top of the heap is returned, and its mmap threshold has grown past them by
then), so the process stays larger than what it holds. `malloc_trim(0)` returns the free
pages anywhere in the heap: 54 MB of a 1M-entity graph's 864 MB restored. Python objects'
own arenas are untouched (pymalloc frees an arena only when it is empty).

glibc maps a block of 128 KiB or more on its own and unmaps it when freed, but raises that
threshold to the size of each such block freed (up to 32 MiB), and its trim threshold to
twice that: after the start-up's first large transient (a decoded column, a list of a
segment's texts) every later one is carved from the heap, where, freed between blocks that
stay, its pages stay too and `malloc_trim` cannot reach them. A server restoring 50k
entities kept ~7 MiB of them. So a server holds the threshold at its default while it loads
(`map_large_blocks_while_loading`) and then fixes it where a served process does best
(`keep_large_blocks_once_loaded`): blocks under 4 MiB (an answer's 64 KiB slices, a batch's
lists) come from the heap, reused while resident (mapping each anew faults its pages in
again: a fixed 128 KiB made broad answers at 50k ~10 % slower), and a checkpoint's
megabytes are mapped and handed back once saved. The trim threshold goes with it (8 MiB):
left at 64 MiB, where glibc's own raising can take it, a server filled with 50k entities
through MCP writes kept 25 MiB more free at the top of its heap (bench.stdio_rss, session 14).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = [
    "LOADED_MMAP_THRESHOLD",
    "LOADED_TRIM_THRESHOLD",
    "heap_phase",
    "keep_large_blocks_once_loaded",
    "map_large_blocks_while_loading",
    "return_freed_heap",
]

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_DEFAULT_MMAP_THRESHOLD = 128 * 1024
# Once loaded (see the module's docstring; measured against 32 MiB with the trim threshold at
# 64 MiB and at 128 KiB: the filling process 153 and 118 MiB, 4 MiB / 8 MiB 119, glibc's own
# 127; broad answers alike within noise).
LOADED_MMAP_THRESHOLD = 4 * 1024 * 1024
LOADED_TRIM_THRESHOLD = 2 * LOADED_MMAP_THRESHOLD

_libc: Any = None
_looked = False
_phase = "untouched"  # then "loading" (threshold held), then "loaded" (heap keeps blocks)


def _glibc() -> Any:
    """glibc's functions, or None where they are absent (another OS, musl)."""
    global _libc, _looked  # noqa: PLW0603 (looked up once, on first use)
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
                trim, mallopt = libc.malloc_trim, libc.mallopt  # musl lacks them: AttributeError
            except (OSError, AttributeError):
                return None
            trim.argtypes = [ctypes.c_size_t]
            trim.restype = ctypes.c_int
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            mallopt.restype = ctypes.c_int
            _libc = libc
    return _libc


def return_freed_heap() -> bool:
    """Return the heap's free pages to the system, where the C library can (glibc's
    malloc_trim); True if it did. Never raises: elsewhere it does nothing."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def map_large_blocks_while_loading() -> bool:
    """Keep glibc's mmap threshold at its default until `keep_large_blocks_once_loaded`: a
    large transient of the start-up is unmapped when freed instead of left in the heap.
    Called by a serving process before it loads anything; True if the threshold is held."""
    global _phase  # noqa: PLW0603 (the process's one heap)
    libc = _glibc()
    if libc is None or _phase != "untouched":
        return False
    if libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_MMAP_THRESHOLD) != 1:
        return False
    _phase = "loading"
    return True


def keep_large_blocks_once_loaded() -> bool:
    """The start-up's transients are gone: return the pages they left free, then let blocks
    under LOADED_MMAP_THRESHOLD come from the heap. Does nothing unless
    `map_large_blocks_while_loading` held the threshold (an import, a rebuild or a test keeps
    glibc's own behaviour). True if it changed the threshold."""
    global _phase  # noqa: PLW0603 (the process's one heap)
    libc = _glibc()
    if libc is None or _phase != "loading":
        return False
    _phase = "loaded"
    return_freed_heap()
    libc.mallopt(_M_TRIM_THRESHOLD, LOADED_TRIM_THRESHOLD)
    libc.mallopt(_M_MMAP_THRESHOLD, LOADED_MMAP_THRESHOLD)
    return True


def heap_phase() -> str:
    """ "untouched" (glibc's own behaviour), "loading" or "loaded": for logs and tests."""
    return _phase
