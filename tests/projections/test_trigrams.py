"""The set bits of a segment bitset (projections.trigrams.ones): the same list whichever way it
is read, one bit at a time (a selective query's few candidates) or spelled out (a broad one's)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projections.trigrams import ones


@given(st.sets(st.integers(min_value=0, max_value=40_000), max_size=40))
def test_ones_lists_every_set_bit_lowest_first_however_many_are_set(positions: set[int]) -> None:
    assert ones(sum(1 << at for at in positions)) == sorted(positions)


def test_ones_of_a_bitset_with_no_bit_set_is_empty() -> None:
    assert ones(0) == []


def test_ones_reads_a_few_bits_of_a_long_bitset_and_a_bitset_full_of_them_alike() -> None:
    wide = 7_813  # segments at a million entities
    assert ones(1 | 1 << 4_000 | 1 << (wide - 1)) == [0, 4_000, wide - 1]
    assert ones((1 << wide) - 1) == list(range(wide))
