"""The graph family's weight arithmetic: rounding, clamping, re-assert, boost, weaken, prune."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.graph_weights import (
    below_prune_threshold,
    boosted,
    clamp_unit,
    raised_confidence,
    reasserted,
    rounded,
    weakened,
)

units = st.floats(0.0, 1.0)


def test_stored_values_are_rounded_to_six_places() -> None:
    assert rounded(0.35 - 0.3) == 0.05
    assert weakened(0.35, 0.3) == 0.05
    assert rounded(0.1234567) == 0.123457


def test_a_weight_out_of_range_is_clamped_with_a_warning_saying_so() -> None:
    assert clamp_unit(1.4) == clamp_unit(1.4)
    assert (clamp_unit(1.4).value, clamp_unit(1.4).warning) == (1.0, "weight 1.4 clamped to 1.0")
    assert clamp_unit(-0.2, "confidence").warning == "confidence -0.2 clamped to 0.0"
    assert clamp_unit(0.7).warning is None and clamp_unit(0.7).value == 0.7


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_weight_that_is_not_a_finite_number_is_an_error_not_a_clamp(value: float) -> None:
    with pytest.raises(ValueError, match="not a number"):
        clamp_unit(value)


def test_reasserting_takes_a_higher_weight_else_adds_the_mention_boost() -> None:
    assert reasserted(0.5, 0.8, 0.05) == 0.8
    assert reasserted(0.7, 0.7, 0.05) == 0.75  # equal weights take the boost
    assert reasserted(0.8, 0.3, 0.05) == 0.85


def test_the_mention_boost_never_takes_a_weight_past_one() -> None:
    assert reasserted(1.0, 1.0, 0.05) == 1.0
    assert reasserted(0.98, 0.5, 0.05) == 1.0


def test_boost_and_weaken_stay_within_zero_and_one() -> None:
    assert boosted(0.5, 0.15) == 0.65
    assert boosted(0.95, 0.15) == 1.0
    assert weakened(0.5, 0.3) == 0.2
    assert weakened(0.2, 0.3) == 0.0


def test_an_edge_exactly_at_the_prune_threshold_is_not_pruned() -> None:
    assert not below_prune_threshold(0.05, 0.05)
    assert below_prune_threshold(0.049999, 0.05)
    assert not below_prune_threshold(weakened(0.35, 0.3), 0.05)


def test_a_write_never_lowers_confidence() -> None:
    assert raised_confidence(0.8, 0.3) == 0.8
    assert raised_confidence(0.3, 0.8) == 0.8


@given(units, units, st.floats(0.0, 1.0))
def test_a_reassert_never_lowers_a_weight_and_stays_within_one(
    current: float, given_weight: float, boost: float
) -> None:
    after = reasserted(current, given_weight, boost)
    assert rounded(current) <= after <= 1.0
    assert after >= rounded(given_weight)
    assert after == rounded(after)


@given(units, st.floats(0.0, 1.0))
def test_boost_and_weaken_move_the_right_way_and_stay_in_range(
    current: float, amount: float
) -> None:
    assert rounded(current) <= boosted(current, amount) <= 1.0
    assert 0.0 <= weakened(current, amount) <= rounded(current)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_clamping_gives_a_unit_value_and_warns_exactly_when_it_moved(value: float) -> None:
    clamped = clamp_unit(value)
    assert 0.0 <= clamped.value <= 1.0
    assert (clamped.warning is None) == (0.0 <= value <= 1.0)
