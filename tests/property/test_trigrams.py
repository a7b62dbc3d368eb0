"""The texts' trigram buckets (projections.trigrams and projections/_trigrams.c): the compiled
twin and the Python one give the same buckets and the same filter matrix for any texts (words
split at whitespace, NUL and U+0001, any code point, lone surrogates included); the buckets are
those of each word padded with two spaces, whichever order the words come in; and every
trigram a query asks for is among the buckets of a text that holds the query (the filter never
hides a match)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.trigrams import (
    filter_rows_python,
    query_buckets,
    text_buckets,
    text_buckets_python,
)

try:
    from projections import _trigrams
except ImportError:  # not built: only the Python twin is tested
    _trigrams = None  # type: ignore[assignment]

needs_compiled = pytest.mark.skipif(_trigrams is None, reason="the C trigrams are not built")

# Characters that split words, and ones that make multi-byte UTF-8 (a lone surrogate too).
_TRICKY = " \t\n\r\x0b\x0c\x00\x01\x1c\x85\xa0é€\U0001f600\ud800\udfff"
TEXTS = st.lists(
    st.text(alphabet=st.sampled_from("abcab" + _TRICKY), max_size=20)
    | st.text(st.characters(codec=None), max_size=12),
    max_size=8,
)
BUCKETS = st.sampled_from([1, 2, 3, 97, 251, 32_749])


def padded_trigrams(word: bytes) -> set[int]:
    padded = b"  " + word + b"  "
    return {int.from_bytes(padded[at : at + 3], "little") for at in range(len(padded) - 2)}


def words_of(texts: list[str]) -> list[bytes]:
    data = " ".join(texts).encode("utf-8", "surrogatepass")
    return data.replace(b"\x00", b" ").replace(b"\x01", b" ").split()


@needs_compiled
@given(TEXTS, BUCKETS)
def test_the_compiled_buckets_are_the_python_ones(texts: list[str], buckets: int) -> None:
    assert _trigrams.text_buckets(texts, buckets) == text_buckets_python(texts, buckets)


@needs_compiled
@given(TEXTS, st.integers(min_value=1, max_value=4), BUCKETS)
def test_the_compiled_filter_matrix_is_the_python_one(
    texts: list[str], segment_size: int, buckets: int
) -> None:
    expected = filter_rows_python(texts, segment_size, buckets)
    assert _trigrams.filter_rows(texts, segment_size, buckets) == expected


@given(TEXTS, BUCKETS)
def test_the_buckets_are_each_padded_word_s_trigrams_in_any_order(
    texts: list[str], buckets: int
) -> None:
    words = words_of(texts)
    expected = {t % buckets for word in words for t in padded_trigrams(word)}
    if not words:
        expected = {0x202020 % buckets}
    assert text_buckets_python(texts, buckets) == expected
    assert text_buckets_python(list(reversed(texts)), buckets) == expected
    assert text_buckets(texts, buckets) == expected


@given(TEXTS, st.data())
def test_a_text_holding_a_query_has_every_bucket_the_query_asks_for(
    texts: list[str], data: st.DataObject
) -> None:
    text = " ".join(texts)
    if not text:
        return
    start = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    query = text[start : start + data.draw(st.integers(min_value=1, max_value=12))]
    assert query_buckets(query, 32_749) <= text_buckets(texts, 32_749)


@needs_compiled
def test_the_compiled_twin_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError):
        _trigrams.text_buckets([b"bytes"], 7)
    with pytest.raises(ValueError, match="buckets"):
        _trigrams.text_buckets(["a"], 0)
    with pytest.raises(ValueError, match="segment_size"):
        _trigrams.filter_rows(["a"], 0, 7)
    huge = sys.maxsize  # one segment, whatever its size: no overflow on the way
    assert _trigrams.filter_rows(["ab", "cd"], huge, 7) == filter_rows_python(["ab", "cd"], 7, 7)
