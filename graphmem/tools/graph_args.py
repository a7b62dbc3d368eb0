"""Arguments of the graph family's tools (contract §2): strict, and every problem named.

Each tool's arguments are a msgspec Struct that forbids unknown fields: a misspelt `max_hop`
is refused with the list of accepted arguments rather than ignored (upstream's schema library
dropped unknown keys without a word). Numbers out of range are errors naming the range, except
input weights and confidences, which are clamped into [0, 1] with a warning. Times are
ISO 8601 (projections.graph_time). Names are trimmed; an empty one is an error.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeVar

import msgspec

from actors.graph_weights import clamp_unit
from graphmem.limits import InputLimits
from graphmem.tools.base import ToolInputError, check_text, invalid_arguments
from projections.graph_time import TimeFormatError, parse_time

__all__ = [
    "GraphArgs",
    "check_range",
    "clamped_unit",
    "json_size",
    "name_text",
    "optional_text",
    "parse_graph_args",
    "time_ms",
]

A = TypeVar("A", bound="GraphArgs")


class GraphArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """Base of the graph tools' argument shapes: unknown arguments are refused."""


_UNKNOWN_FIELD = re.compile(r"Object contains unknown field `([^`]*)`(?: - at `\$(.*)`)?")


def accepted_names(shape: type[msgspec.Struct]) -> list[str]:
    return [field.encode_name for field in msgspec.structs.fields(shape)]


def parse_graph_args(tool: str, raw: dict[str, Any], shape: type[A]) -> A:
    """`raw` as `shape`; a ToolInputError names what is wrong and, for an unknown argument,
    every argument the tool accepts."""
    try:
        return msgspec.convert(raw, shape)
    except msgspec.ValidationError as problem:
        detail = str(problem)
        unknown = _UNKNOWN_FIELD.fullmatch(detail)
        if unknown is not None and not unknown.group(2):
            accepted = ", ".join(accepted_names(shape))
            detail = f"unknown argument `{unknown.group(1)}`; {tool} accepts: {accepted}"
        elif unknown is not None:
            detail = f"unknown field `{unknown.group(1)}` in `{unknown.group(2).lstrip('.')}`"
        raise ToolInputError(invalid_arguments(tool, detail)) from None


def check_range(tool: str, value: float | None, where: str, low: float, high: float) -> None:
    """An error naming the range when `value` (if given) is outside [low, high]."""
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolInputError(invalid_arguments(tool, f"{where} must be a number"))
    if not low <= value <= high:
        raise ToolInputError(
            invalid_arguments(
                tool, f"{where} is {value!r}; it must be between {low:g} and {high:g}"
            )
        )


def clamped_unit(tool: str, value: float, where: str, warnings: list[str]) -> float:
    """An input weight or confidence brought into [0, 1]; a clamp adds a warning."""
    try:
        clamped = clamp_unit(value, where)
    except ValueError as problem:
        raise ToolInputError(invalid_arguments(tool, str(problem))) from None
    if clamped.warning is not None:
        warnings.append(clamped.warning)
    return clamped.value


def time_ms(tool: str, value: str | None, where: str) -> int | None:
    """An ISO 8601 input time as wall ms (None when omitted)."""
    if value is None:
        return None
    try:
        return parse_time(value, where)
    except TimeFormatError as problem:
        raise ToolInputError(invalid_arguments(tool, str(problem))) from None


def name_text(tool: str, limits: InputLimits, value: str, where: str) -> str:
    """A name, type or relation as given, trimmed; refused when empty or not storable."""
    check_text(tool, value, where, limits.max_name_chars, multiline=False)
    trimmed = value.strip()
    if not trimmed:
        raise ToolInputError(invalid_arguments(tool, f"{where} is empty; give a name"))
    return trimmed


def optional_text(
    tool: str, limits: InputLimits, value: str | None, where: str, *, multiline: bool = True
) -> str | None:
    """Free text (evidence, reason, provenance): checked like observation content."""
    if value is None:
        return None
    check_text(tool, value, where, limits.max_content_chars, multiline=multiline)
    return value


def json_size(value: Any) -> int:
    """The length of `value` serialised as compact JSON (for the properties and data limits)."""
    return len(msgspec.json.encode(value))
