"""Handing freed heap memory back to the system: after a restore's transient peak, and after
every large transient (a whole-graph answer, a snapshot's bytes).

A restore decodes a snapshot (hundreds of megabytes at 1M entities) next to the records it
builds: when its columns and lists are freed, glibc's malloc keeps most of the pages they
took (only the top of the heap is returned, and its mmap threshold has grown past them by
then), so the process stays larger than what it holds. `malloc_trim(0)` returns the free
pages anywhere in the heap: 54 MB of a 1M-entity graph's 864 MB restored. Python objects'
own arenas are untouched (pymalloc frees an arena only when it is empty).

glibc also moves its mmap threshold up to the size of each mapped block freed (up to 32 MiB):
after the first checkpoint's snapshot bytes or broad answer's JSON is freed, every later one
is carved from the heap instead, and stays there once freed (a 50,000-entity server filled
through MCP writes held ~10 MB more after its writes and ~19 MB more after one broad
`search_nodes`, freed but never returned). `keep_large_blocks_mapped` pins the threshold at
its default, so a large block is mapped and unmapped on its own, as the first one was.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_large_blocks_mapped", "return_freed_heap"]

_trim: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
_mallopt: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
_looked = False

# glibc's mallopt parameter and its default value (malloc.h: M_MMAP_THRESHOLD,
# DEFAULT_MMAP_THRESHOLD_MIN): blocks at least this large are mapped on their own. Setting it
# also turns off the dynamic raising described above.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024


def _look_up() -> None:
    global _trim, _mallopt, _looked  # noqa: PLW0603 (looked up once, on first use)
    if _looked:
        return
    _looked = True
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        trim = libc.malloc_trim  # absent from musl: AttributeError
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _trim, _mallopt = trim, mallopt


def return_freed_heap() -> bool:
    """Return the heap's free pages to the system, where the C library can (glibc's
    malloc_trim); True if it did. Never raises: elsewhere it does nothing."""
    _look_up()
    if _trim is None:
        return False
    _trim(0)
    return True


def keep_large_blocks_mapped() -> bool:
    """Keep every block of `MMAP_THRESHOLD` bytes or more mapped on its own, so that freeing
    it returns its pages at once (glibc's mallopt); True if set. For a long-running process
    whose large transients (answers, snapshots) would otherwise stay in its heap. Costs a
    map and unmap per such block: microseconds against the milliseconds its bytes take to
    fill. Never raises: elsewhere it does nothing."""
    _look_up()
    if _mallopt is None:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
