"""One walker over a command's fields: every string checked by the kind of text it holds (a
name or content, as actors.command_inputs marks it), every list against the item limit, and
each problem named by its path in the tool's arguments (`entities[2].entityType`)."""

from __future__ import annotations

import functools
import types
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import msgspec

from actors.command_inputs import TEXT_KIND
from graphmem.limits import InputLimits
from graphmem.tools.base import check_count, check_text, parse_args

__all__ = ["check_command", "command_from"]

C = TypeVar("C", bound=msgspec.Struct)


def command_from(tool: str, raw: dict[str, Any], shape: type[C], limits: InputLimits) -> C:
    """A tool's arguments as its command (the wire names are the command's encoded names),
    every field within the input limits; a ToolInputError says what to fix."""
    command = parse_args(tool, raw, shape)
    check_command(tool, limits, command)
    return command


def check_command(tool: str, limits: InputLimits, command: msgspec.Struct) -> None:
    """Raise ToolInputError for the first field of `command` that breaks a limit."""
    _check_struct(tool, limits, command, "")


@functools.cache
def _fields(cls: type[msgspec.Struct]) -> tuple[tuple[str, str, Any], ...]:
    """(attribute, wire name, type) of each field, resolved once per class."""
    return tuple((f.name, f.encode_name, f.type) for f in msgspec.structs.fields(cls))


def _check_struct(tool: str, limits: InputLimits, value: msgspec.Struct, path: str) -> None:
    for attribute, wire_name, annotation in _fields(type(value)):
        where = f"{path}.{wire_name}" if path else wire_name
        _check(tool, limits, getattr(value, attribute), annotation, where)


def _check(tool: str, limits: InputLimits, value: Any, annotation: Any, where: str) -> None:
    if value is None:
        return
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:  # `X | None`: check as X
        (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
        origin = get_origin(annotation)
    if origin is Annotated and isinstance(value, str):
        _check_text(tool, limits, value, annotation, where)
    elif isinstance(value, list):
        check_count(tool, len(value), where, limits.max_items)
        (item,) = get_args(annotation) or (Any,)
        for index, element in enumerate(value):
            _check(tool, limits, element, item, f"{where}[{index}]")
    elif isinstance(value, msgspec.Struct):
        _check_struct(tool, limits, value, where)


def _check_text(tool: str, limits: InputLimits, value: str, annotation: Any, where: str) -> None:
    kinds = [
        meta.extra.get(TEXT_KIND)
        for meta in get_args(annotation)[1:]
        if isinstance(meta, msgspec.Meta) and meta.extra
    ]
    if "content" in kinds:
        check_text(tool, value, where, limits.max_content_chars, multiline=True)
    elif "name" in kinds:
        check_text(tool, value, where, limits.max_name_chars, multiline=False)
