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

import msgspec

from graphmem.limits import InputLimits

__all__ = ["EntityLine", "RelationLine", "plain_record", "unescaped_text"]

_LIMITS = InputLimits()
# What the tolerant reader refuses in a name (single-line) or an observation (tabs and line
# breaks allowed), lone surrogates included: the same sets as graphmem.memory_file's checks.
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_BAD_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class EntityLine(msgspec.Struct, tag_field="type", tag="entity", forbid_unknown_fields=True):
    """`{"type":"entity","name":…,"entityType":…,"observations":[…]}`, nothing else."""

    name: str
    entityType: str  # the file's own field name
    observations: list[str]


class RelationLine(msgspec.Struct, tag_field="type", tag="relation", forbid_unknown_fields=True):
    """`{"type":"relation","from":…,"to":…,"relationType":…}`, nothing else."""

    from_entity: str = msgspec.field(name="from")
    to: str
    relationType: str  # the file's own field name


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
    # can hold a refused character only through an escape or as DEL; and no string is longer
    # than the line.
    suspect = len(raw) > _LIMITS.max_name_chars or not (unescaped or unescaped_text(raw))
    return None if suspect and not _clean(record) else record


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
    for name in names:
        if len(name) > _LIMITS.max_name_chars or _BAD_NAME.search(name):
            return False
    if isinstance(record, EntityLine):
        for text in record.observations:
            if len(text) > _LIMITS.max_content_chars or _BAD_TEXT.search(text):
                return False
    return True
