"""Trigrams for the search index's filter: the hashed byte trigrams of texts and of queries,
and the set bits of a segment bitset."""

from __future__ import annotations

import operator
import sys
from array import array
from itertools import repeat

__all__ = ["ones", "query_buckets", "text_buckets"]

_QUAD = next(code for code in "IL" if array(code).itemsize == 4)
_LOW_3 = 0xFFFFFF
_QUERY_BYTES = 256
# Set bits up to which `ones` takes them one at a time: each step costs about what writing out
# the whole number once does divided by 16, so well below that (measured at 391 to 31,250 bits).
_SPARSE = 12


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates too: JSON can carry them


def text_buckets(texts: list[str], buckets: int) -> set[int]:
    """The buckets of every byte trigram inside a word of `texts`, and of some at a word's
    edges (which no query asks for). Each distinct word once, read four bytes at a time by
    `array` at the four offsets: no Python-level loop over characters. Words are split at
    ASCII whitespace, NUL and U+0001 only; a query's words (see query_buckets) at least there."""
    # U+0001 too: a packed segment's texts come as one string (see projections.search).
    words = set(_utf8(" ".join(texts)).replace(b"\x00", b" ").replace(b"\x01", b" ").split())
    # Two spaces between words: a trigram spanning them depends on one letter, not two, so
    # there are fewer of these useless ones.
    data = b"  " + b"  ".join(words) + b"  "
    quads = array(_QUAD)
    for offset in range(4):
        quads.frombytes(data[offset : offset + (len(data) - offset) // 4 * 4])
    # The low three bytes of each four-byte word: the trigram at its first byte (little-endian)
    # or at its second (big-endian); the padding spaces make either cover every trigram.
    trigrams = map(operator.and_, set(quads), repeat(_LOW_3))
    return set(map(operator.mod, trigrams, repeat(buckets)))


def query_buckets(needle: str, buckets: int) -> set[int]:
    """The buckets of the trigrams inside the query's words: a text holding the query holds
    each of them inside one of its words (split where texts are, and at U+0001 too)."""
    found: set[int] = set()
    order = sys.byteorder
    # A long query's prefix selects well enough, and its trigrams are the query's too.
    data = _utf8(needle)[:_QUERY_BYTES]
    for word in data.replace(b"\x00", b" ").replace(b"\x01", b" ").split():
        found.update(
            int.from_bytes(word[at : at + 3], order) % buckets for at in range(len(word) - 2)
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
