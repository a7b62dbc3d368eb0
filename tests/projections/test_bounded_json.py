"""Bounded JSON decoding: hostile shapes are refused with a reason, never a RecursionError."""

from __future__ import annotations

import json
import sys

import pytest

from projections.bounded_json import MAX_DEPTH, JsonShapeError, decode, exceeds_depth


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_decodes_and_one_level_more_is_refused() -> None:
    assert exceeds_depth(decode(nested(MAX_DEPTH))) is False
    with pytest.raises(JsonShapeError, match=f"nest more than {MAX_DEPTH} levels deep"):
        decode(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_nesting_past_the_recursion_limit_is_refused_not_a_recursion_error(depth: int) -> None:
    with pytest.raises(JsonShapeError, match="levels deep"):
        decode('{"params":{"x":' + nested(depth) + "}}")
    with pytest.raises(JsonShapeError, match="levels deep"):
        decode("[" * depth)  # never closed: the depth is what stops it first


def test_an_integer_over_4300_digits_is_refused_with_its_length() -> None:
    assert decode("9" * 4300) == int("9" * 4300)
    with pytest.raises(JsonShapeError, match="4,301 digits; the limit is 4,300"):
        decode('{"n": -' + "9" * 4301 + "}")


def test_a_lower_interpreter_digit_limit_is_refused_too() -> None:
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.raises(JsonShapeError, match="1,000 digits, too many"):
            decode("1" * 1000)
    finally:
        sys.set_int_max_str_digits(previous)


def test_a_number_too_large_for_a_float_is_refused() -> None:
    with pytest.raises(JsonShapeError, match="is too large"):
        decode("1e999")
    with pytest.raises(JsonShapeError, match="is too large"):
        decode("1" * 5000 + ".5")
    assert decode("1.5e300") == 1.5e300


def test_nan_and_infinity_are_refused_only_when_asked() -> None:
    assert decode("[Infinity]") == [float("inf")]
    with pytest.raises(JsonShapeError, match="not valid JSON: NaN is not allowed"):
        decode("[NaN]", constants=False)


def test_malformed_text_still_raises_the_json_decode_error_with_its_position() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        decode('{"a": ')
    assert raised.value.colno == 7


def test_depth_counts_objects_and_arrays_but_not_scalars() -> None:
    assert exceeds_depth("text", 0) is False
    assert exceeds_depth([], 0) is True
    assert exceeds_depth({"a": [{"b": 1}]}, 3) is False
    assert exceeds_depth({"a": [{"b": []}]}, 3) is True
