"""What a tool error may say to a caller: no internal names, and only tools that exist.

A mesh-style error (the mesh and schema families) is read by a model that acts on it, so it
must not carry the wire's "MCP error -32602: Input validation error" prefix, and a suggestion
naming a tool this server does not expose (`update_hobbit` for a type with no schema,
`add_nodes` without the mesh family) is dropped rather than sent the caller down a dead end.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence

from graphmem.tools.base import INVALID_ARGUMENTS_PREFIX

__all__ = ["closest_tools", "existing_suggestions", "public_message"]

# A tool name as suggestions write them: a verb, an underscore, then the rest (add_npc,
# search_nodes); a placeholder such as `add_<type>` is no tool name and is kept.
_TOOL_NAME = re.compile(
    r"\b(?:add|update|delete|search|open|read|create|check|graph)_[A-Za-z0-9_]+\b(?!<)"
)
_FALLBACK = "Fix what the error names and call the tool again; nothing was written."


def public_message(tool: str, message: str) -> str:
    """`message` without the wire-level prefix: "Invalid arguments for <tool>: ..."."""
    prefix = f"{INVALID_ARGUMENTS_PREFIX} {tool}: "
    if message.startswith(prefix):
        return f"Invalid arguments for {tool}: {message[len(prefix) :]}"
    return message


def existing_suggestions(suggestions: Sequence[str], exists: Callable[[str], bool]) -> list[str]:
    """The suggestions whose every tool name is a tool the caller can call; when none is left,
    one that names no tool."""
    kept = [s for s in suggestions if all(exists(t) for t in _TOOL_NAME.findall(s))]
    if suggestions and not kept:
        return [_FALLBACK]
    return kept


def closest_tools(name: str, names: Iterable[str], count: int = 3) -> list[str]:
    """The tool names most like `name` (a misspelling, a type with no schema), best first."""
    # The whole names must be close (0.7: "serch_nodes" finds search_nodes, "add_npcs"
    # add_npc) and so must what follows the verb (0.7), or "add_dragon" would find add_person
    # (0.7 on the whole name, 0.5 on "dragon" against "person"): a wrong lead.
    scored = [
        (difflib.SequenceMatcher(None, name, other).ratio(), other)
        for other in names
        if _close(_rest(name), _rest(other), 0.7)
    ]
    close = sorted((s for s in scored if s[0] >= 0.7), key=lambda s: -s[0])
    return [other for _, other in close[:count]]


def _rest(name: str) -> str:
    return name.partition("_")[2] or name


def _close(a: str, b: str, cutoff: float) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() >= cutoff
