"""Decoding JSON from outside (memory files, schema files, schemas in the log) with its shape
bounded, so hostile input is refused with a reason instead of crashing the reader.

Python's `json` raises RecursionError on a value nested about 1,000 deep (how deep depends on
the caller's stack, so two processes could disagree) and a bare ValueError on an integer of
more than 4,300 digits, with advice about `sys.set_int_max_str_digits` that is no use to a user.
Here both become a `JsonShapeError` saying what was refused, and the depth limit is a fixed
number, far below the recursion limit, so every process decides alike.
"""

from __future__ import annotations

import json
import math
from typing import Any

from projections.json_depth import nesting_exceeds

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "JsonShapeError", "decode", "exceeds_depth"]

# No document graphmem reads needs more than a handful of levels (a schema file uses four);
# 64 leaves room for extra keys a user keeps there and stays far below the recursion limit.
MAX_DEPTH = 64
# CPython's default int_max_str_digits, fixed here so a changed interpreter setting does not
# change what a file means.
MAX_INT_DIGITS = 4300


class JsonShapeError(ValueError):
    """Well-formed (or nearly) JSON refused for its shape; the message says what and the limit."""


def decode(text: str, *, max_depth: int = MAX_DEPTH, constants: bool = True) -> Any:
    """`json.loads(text)`, refusing nesting deeper than `max_depth`, integers of more than
    MAX_INT_DIGITS digits and numbers too large for a float; with `constants` False, NaN and
    Infinity too (JSON has neither). Raises json.JSONDecodeError for malformed text and
    JsonShapeError for the rest."""
    # Measured on the text, before the parser recurses into it (the wire's check, too).
    if nesting_exceeds(text.encode("utf-8", "surrogatepass"), max_depth):
        raise JsonShapeError(_too_deep(max_depth))
    return json.loads(
        text,
        parse_int=_int,
        parse_float=_float,
        parse_constant=None if constants else _no_constant,
    )


def exceeds_depth(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects in `value` nest more than `max_depth` deep (`[]` is 1 deep).
    Walks without recursion, so any decoded value can be checked."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _too_deep(max_depth: int) -> str:
    return f"arrays and objects nest more than {max_depth} levels deep (the limit)"


def _int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise JsonShapeError(f"a number has {digits:,} digits; the limit is {MAX_INT_DIGITS:,}")
    try:
        return int(text)
    except ValueError:  # the interpreter's own digit limit was set lower
        raise JsonShapeError(f"a number has {digits:,} digits, too many to read") from None


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 40 else f"{text[:20]}...{text[-10:]}"
        raise JsonShapeError(f"the number {shown} is too large")
    return value


def _no_constant(name: str) -> Any:
    raise JsonShapeError(f"not valid JSON: {name} is not allowed")
