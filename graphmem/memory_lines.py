"""The fast path for reading the official JSONL: a line that is a well-formed entity or relation,
decoded by msgspec into a typed struct, or None when the line needs the tolerant reader.

The tolerant reader (graphmem.memory_file) decodes every line with `json`, measures its nesting
first and checks each string: about 14 µs a line, most of a bulk import's reading. A line the
official server wrote is almost always plain (the four or five fields, strings only, nothing to
escape), and msgspec decodes and type-checks it in about 1 µs. Anything this path is not sure
of (a missing or extra field, a value of another kind, malformed JSON, an escape that could
hide a control character) returns None and is read by the tolerant reader, so a file's
records and its problems are the same whichever path read a line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import msgspec

from graphmem.limits import InputLimits

__all__ = [
    "EntityLine",
    "RelationLine",
    "plain_record",
    "plain_records",
    "unescaped_text",
    "whole_file_records",
]

_LIMITS = InputLimits()
# What the tolerant reader refuses in a name (single-line) or an observation (tabs and line
# breaks allowed), lone surrogates included: the same sets as graphmem.memory_file's checks.
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_BAD_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


# The limits are the tolerant reader's, checked by the decoder (in characters, as len counts):
# a longer value makes the line the tolerant reader's, which reports it.
Name = Annotated[str, msgspec.Meta(max_length=_LIMITS.max_name_chars)]
Text = Annotated[str, msgspec.Meta(max_length=_LIMITS.max_content_chars)]


class EntityLine(msgspec.Struct, tag_field="type", tag="entity", forbid_unknown_fields=True):
    """`{"type":"entity","name":…,"entityType":…,"observations":[…]}`, nothing else."""

    name: Name
    entityType: Name  # the file's own field name
    observations: list[Text]


class RelationLine(msgspec.Struct, tag_field="type", tag="relation", forbid_unknown_fields=True):
    """`{"type":"relation","from":…,"to":…,"relationType":…}`, nothing else."""

    from_entity: Name = msgspec.field(name="from")
    to: Name
    relationType: Name  # the file's own field name


_DECODER = msgspec.json.Decoder(EntityLine | RelationLine)


def plain_record(raw: bytes, *, unescaped: bool = False) -> EntityLine | RelationLine | None:
    """The line as a record if it is a plain, valid one; None if the tolerant reader must
    read it (to import what it can and report the rest).

    `unescaped`: the caller found no backslash and no DEL anywhere in the data the line was
    cut from, so the line need not be searched for either (`unescaped_text`)."""
    try:
        record = _DECODER.decode(raw)
    except msgspec.DecodeError:  # malformed, or not this shape (ValidationError is one too)
        return None
    except RecursionError:
        # A value nested past the interpreter's limit where msgspec skips it (an unknown or
        # repeated key before the type is known): the tolerant reader names the limit.
        return None
    # Raw bytes below 0x20 are malformed JSON and UTF-8 cannot hold a surrogate, so a string
    # can hold a refused character only through an escape or as DEL (the decoder checked the
    # lengths).
    suspect = not (unescaped or unescaped_text(raw))
    return None if suspect and not _clean(record) else record


def plain_records(
    lines: Sequence[bytes], *, unescaped: bool = False
) -> list[EntityLine | RelationLine] | None:
    """Every line as its record, when `plain_record` would take each of them; None as soon as
    one would go to the tolerant reader (malformed, another shape, blank, or a suspect line
    that is not clean), and the caller reads the lines one by one.

    The same decisions as `plain_record` line by line, made over the whole list at once: the
    lines are decoded by one C-level map (a Python call per line was a third of reading a
    million records), and only the lines `plain_record` would suspect are checked again.
    `unescaped` as for `plain_record`, for all the lines."""
    try:
        records: list[EntityLine | RelationLine] = list(map(_DECODER.decode, lines))
    except (msgspec.DecodeError, RecursionError):
        return None
    if not unescaped:
        for raw, record in zip(lines, records, strict=True):
            if not unescaped_text(raw) and not _clean(record):
                return None
    return records


def whole_file_records(data: bytes, *, unescaped: bool) -> list[EntityLine | RelationLine] | None:
    """Each line of `data` as its record, decoded in one call, when every line is one that
    `plain_record` takes and `unescaped` (`unescaped_text(data)`, which the caller has
    found): then no line needs a second look. None otherwise, and the caller reads the
    lines (`plain_records`, or one by one).

    msgspec's `decode_lines` reads values separated by any whitespace, line breaks included,
    so it alone cannot tell one record a line from two on one line and one across two. Here
    every line starts with `{`, and no record can hold a `{` token (every field is a string
    or a list of strings, and unknown fields are refused): a line break inside a record
    would put one at the start of the next line, so none is inside one, and each line holds
    at least one record. As many records as lines then means exactly one a line. Without an
    escape or DEL anywhere, a string can hold no refused character (raw control characters
    are malformed JSON and UTF-8 holds no surrogate), and the decoder checks the lengths."""
    if not data.startswith(b"{") or not unescaped:
        return None
    breaks = data.count(b"\n")
    inner = breaks - 1 if data.endswith(b"\n") else breaks
    if data.count(b"\n{") != inner:
        return None  # a line that does not start with `{`: blank, indented or not a record
    try:
        records: list[EntityLine | RelationLine] = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return records if len(records) == inner + 1 else None


def unescaped_text(data: bytes) -> bool:
    """Whether `data` holds no backslash (a JSON escape) and no DEL: then no string decoded
    from it can hold a character a name or an observation refuses."""
    # find(), not `in`: bytes.__contains__ first tries its argument as an int and clears the
    # TypeError, about 0.4 µs a call; per line that was a third of reading a million entities.
    return data.find(b"\\") < 0 and data.find(b"\x7f") < 0


def _clean(record: EntityLine | RelationLine) -> bool:
    names = (
        (record.name, record.entityType)
        if isinstance(record, EntityLine)
        else (record.from_entity, record.to, record.relationType)
    )
    if any(map(_BAD_NAME.search, names)):
        return False
    return not isinstance(record, EntityLine) or not any(map(_BAD_TEXT.search, record.observations))
