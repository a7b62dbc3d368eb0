"""Trigrams for the search index's filter: the hashed byte trigrams of texts and of queries,
and the set bits of a segment bitset.

The texts' side has a compiled twin (projections/_trigrams.c: one pass over the bytes, ~10x
the Python here, which a search index's build and a graph image's filter spend most of their
time in); GRAPHMEM_PURE_PYTHON=1 when this is first imported makes the Python run. Both give
the same buckets (tests/property/test_trigrams.py).
"""

from __future__ import annotations

import operator
import sys
from array import array
from collections import deque
from itertools import repeat
from typing import Protocol, cast

from projections.accelerators import accelerator

__all__ = ["COMPILED", "filter_rows", "ones", "query_buckets", "text_buckets"]

_QUAD = next(code for code in "IL" if array(code).itemsize == 4)
_LOW_3 = 0xFFFFFF
_QUERY_BYTES = 256
# Set bits up to which `ones` takes them one at a time: each step costs about what writing out
# the whole number once does divided by 16, so well below that (measured at 391 to 31,250 bits).
_SPARSE = 12


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates too: JSON can carry them


class _Compiled(Protocol):
    """The compiled module's functions (projections/_trigrams.c)."""

    def text_buckets(self, texts: list[str], buckets: int, /) -> set[int]: ...

    def filter_rows(self, texts: list[str], segment_size: int, buckets: int, /) -> bytes: ...


COMPILED: _Compiled | None = cast(_Compiled | None, accelerator("_trigrams"))
"""The compiled twin, or None where the Python runs."""


def text_buckets(texts: list[str], buckets: int) -> set[int]:
    """The buckets of every byte trigram of `texts`' words, each padded with two spaces either
    side (the trigrams at a word's edges no query asks for, but they are few); the bucket of
    three spaces alone when there is no word. Words are split at ASCII whitespace, NUL and
    U+0001 only; a query's words (see query_buckets) at least there. A trigram is the number
    b0 | b1 << 8 | b2 << 16 of its bytes, on any machine."""
    if COMPILED is not None:
        return COMPILED.text_buckets(texts, buckets)
    return text_buckets_python(texts, buckets)


def text_buckets_python(texts: list[str], buckets: int) -> set[int]:
    """text_buckets in Python: each distinct word once, read four bytes at a time by `array`
    at the four offsets, with no Python-level loop over characters."""
    # U+0001 too: a packed segment's texts come as one string (see projections.search).
    words = set(_utf8(" ".join(texts)).replace(b"\x00", b" ").replace(b"\x01", b" ").split())
    # Two spaces between words: a trigram spanning them depends on one letter, not two, so
    # there are fewer of these useless ones. Three at the end: the last four-byte word read
    # then starts at the last word's last byte, as every other word's ends are read, so the
    # buckets do not depend on which word the set lists last.
    data = b"  " + b"  ".join(words) + b"   "
    quads = array(_QUAD)
    for offset in range(4):
        quads.frombytes(data[offset : offset + (len(data) - offset) // 4 * 4])
    if sys.byteorder == "big":
        quads.byteswap()  # each word's low three bytes are then its first three, as below
    # The low three bytes of each four-byte word (read little-endian): the trigram at its
    # first byte.
    trigrams = map(operator.and_, set(quads), repeat(_LOW_3))
    return set(map(operator.mod, trigrams, repeat(buckets)))


def filter_rows(texts: list[str], segment_size: int, buckets: int) -> bytes:
    """The trigram filter of `texts` cut into segments of `segment_size`: per bucket, a row of
    one bit per segment (segment k at byte k // 8, bit k % 8), set where a text of that
    segment has a trigram in that bucket (text_buckets)."""
    if COMPILED is not None:
        return COMPILED.filter_rows(texts, segment_size, buckets)
    return filter_rows_python(texts, segment_size, buckets)


def filter_rows_python(texts: list[str], segment_size: int, buckets: int) -> bytes:
    """filter_rows in Python, built a byte column (eight segments) at a time: each segment's
    buckets set as bytes of 1, the eight shifted into one byte each as whole numbers, the
    columns then laid into the rows by strided slices."""
    segments = (len(texts) + segment_size - 1) // segment_size
    row_bytes = (segments + 7) // 8
    matrix = bytearray(buckets * row_bytes)
    for column in range(row_bytes):
        packed = 0
        for bit in range(8):
            k = column * 8 + bit
            if k >= segments:
                break
            marks = bytearray(buckets)
            found = text_buckets_python(texts[k * segment_size : (k + 1) * segment_size], buckets)
            deque(map(marks.__setitem__, found, repeat(1)), maxlen=0)
            packed |= int.from_bytes(marks, "little") << bit
        matrix[column::row_bytes] = packed.to_bytes(buckets, "little")
    return bytes(matrix)


def query_buckets(needle: str, buckets: int) -> set[int]:
    """The buckets of the trigrams inside the query's words: a text holding the query holds
    each of them inside one of its words (split where texts are, and at U+0001 too)."""
    found: set[int] = set()
    # A long query's prefix selects well enough, and its trigrams are the query's too.
    data = _utf8(needle)[:_QUERY_BYTES]
    for word in data.replace(b"\x00", b" ").replace(b"\x01", b" ").split():
        found.update(
            int.from_bytes(word[at : at + 3], "little") % buckets for at in range(len(word) - 2)
        )
    return found


def ones(bits: int) -> list[int]:
    """Positions of the set bits (of a non-negative number), lowest first."""
    found: list[int] = []
    if bits.bit_count() <= _SPARSE:
        # A selective query leaves a few bits in a bitset of thousands of segments (7,813 at
        # a million entities): a few whole-number steps each beat writing out every digit
        # (~1.4 against ~4.4 us there); a broad one leaves many, each step as long as the number.
        while bits:
            low = bits & -bits
            found.append(low.bit_length() - 1)
            bits ^= low
        return found
    digits = bin(bits)[:1:-1]
    at = digits.find("1")
    while at >= 0:
        found.append(at)
        at = digits.find("1", at + 1)
    return found
