"""projections.heap against glibc itself: where a large block comes from in each phase.

Each case runs in a fresh interpreter (the phases are the process's, and glibc's threshold,
once moved, stays moved). A block's origin is read from glibc's own accounting: mallinfo2's
`hblkhd` counts the bytes of blocks mapped on their own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys
import textwrap

import pytest

_PROBE = textwrap.dedent(
    """
    import ctypes, ctypes.util, json, sys
    from projections import heap

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    libc.mallinfo2.restype = Info

    def mapped(size):
        # Whether a block of `size` bytes, made and freed, was mapped on its own.
        before = libc.mallinfo2().hblkhd
        block = bytearray(size)
        during = libc.mallinfo2().hblkhd
        del block
        return during - before >= size

    MIB = 1 << 20
    seen = []
    for step in sys.argv[1].split(","):
        if step == "load":
            seen.append(heap.map_large_blocks_while_loading())
        elif step == "settle":
            seen.append(heap.keep_large_blocks_once_loaded())
        else:
            seen.append(mapped(int(step) * MIB))
        seen.append(heap.heap_phase())
    print(json.dumps(seen))
    """
)


def _glibc_mallinfo2() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL(ctypes.util.find_library("c") or None), "mallinfo2")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's mallinfo2 is needed")


def _run(steps: str) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, steps],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    import json  # noqa: PLC0415 (the probe's answer only)

    figures: list[object] = json.loads(done.stdout)
    return figures


def test_glibc_on_its_own_takes_the_second_large_block_from_the_heap() -> None:
    # What the held phase is for: the threshold rose to the freed block's size.
    assert _run("1,1") == [True, "untouched", False, "untouched"]


def test_while_loading_every_large_block_is_mapped_and_unmapped() -> None:
    assert _run("load,1,1,1") == [
        True,
        "loading",
        True,
        "loading",
        True,
        "loading",
        True,
        "loading",
    ]


def test_once_loaded_large_blocks_come_from_the_heap_up_to_the_raised_threshold() -> None:
    figures = _run("load,1,settle,1,3,8")
    assert figures == [
        True,
        "loading",
        True,
        "loading",
        True,
        "loaded",
        False,  # 1 MiB: from the heap
        "loaded",
        False,  # 3 MiB: from the heap
        "loaded",
        True,  # 8 MiB: past LOADED_MMAP_THRESHOLD (4 MiB), mapped
        "loaded",
    ]


def test_settling_without_a_held_start_up_changes_nothing() -> None:
    # An import or a rebuild never held the threshold: the writer's settle leaves it alone.
    assert _run("settle,1,1") == [False, "untouched", True, "untouched", False, "untouched"]


def test_each_phase_is_entered_once() -> None:
    assert _run("load,load,settle,settle,load") == [
        True,
        "loading",
        False,
        "loading",
        True,
        "loaded",
        False,
        "loaded",
        False,
        "loaded",
    ]
