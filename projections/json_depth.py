"""How deeply a JSON text nests, found on its bytes before any parser recurses into it.

msgspec, the standard library's json and pydantic all recurse once per level: a 2 KB line
nested a thousand deep raises RecursionError out of the parser (or out of whatever walks the
value next). The scan here is linear and runs in C for all but the brackets themselves, so a
line is measured before it is parsed and a line too deep is refused with an error instead.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NESTING", "nesting_exceeds"]

MAX_NESTING = 100
"""Deepest nesting of arrays and objects a JSON-RPC line may have, counting the message itself.
A tool call's arguments sit three levels in and a memory tool's deepest value three more; a
schema nests deeper, but nowhere near this."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
# Without escapes a string has no quote inside, so a failed match (an unterminated string)
# happens at most once, at the last quote: the pass stays linear on any input.
_STRING = re.compile(rb'"[^"]*"')
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_RUN = re.compile(rb"\[+|\]+")
# Each pass removes every innermost pair, lowering the deepest nesting by one: a few passes
# collapse the wide, shallow lines real calls send before the loop below counts what remains.
_COLLAPSE_PASSES = 4


def nesting_exceeds(line: bytes, limit: int = MAX_NESTING) -> bool:
    """True when arrays and objects outside strings nest deeper than `limit` in `line`.

    Not a validator: a malformed line is measured as far as its brackets go, and the parser
    refuses it afterwards.
    """
    if line.count(b"[") + line.count(b"{") <= limit:  # the usual case: two memchr-speed counts
        return False
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", line)).translate(_OPEN_AS_SQUARE, _NOT_A_BRACKET)
    passes = 0
    while passes < _COLLAPSE_PASSES and b"[]" in brackets:
        brackets = brackets.replace(b"[]", b"")
        passes += 1
    if passes > limit:  # each pass peeled one level off the deepest part
        return True
    if passes < _COLLAPSE_PASSES:  # nothing left to collapse: what remains never closes
        return brackets.count(b"[") > limit - passes
    depth = 0
    for run in _RUN.finditer(brackets):
        size = run.end() - run.start()
        if brackets[run.start()] == 0x5B:  # "["
            depth += size
            if depth > limit - passes:
                return True
        else:
            depth = max(depth - size, 0)
    return False
