"""Entity type filters of the read tools: a canonical type matches case-insensitively.

`person` asks for `Person`, and finds entities another family typed `person` too (their types
are kept as given); any other type is matched exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from projections.naming import CANONICAL_ENTITY_TYPES

__all__ = ["type_filter"]

_CANONICAL_FOLDS = frozenset(name.casefold() for name in CANONICAL_ENTITY_TYPES)


def type_filter(wanted: Iterable[str]) -> Callable[[str], bool]:
    """Whether an entity's type is one of `wanted` (canonical ones case-insensitively)."""
    exact = set()
    folded = set()
    for given in wanted:
        text = given.strip()
        if text.casefold() in _CANONICAL_FOLDS:
            folded.add(text.casefold())
        else:
            exact.add(text)

    def matches(entity_type: str) -> bool:
        return entity_type in exact or (bool(folded) and entity_type.casefold() in folded)

    return matches
