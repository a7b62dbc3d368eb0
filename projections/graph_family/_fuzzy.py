"""Fuzzy name matching: what the keyword search (§8.5) cannot find because of a typo or a
spelling variant ("Postgress" -> "PostgreSQL").

The keyword search keeps its rules (prefix tokens, no typo tolerance); this is the tier after
it. A query token of 5 to 7 characters may be one edit away from a token of the entity's name,
id or aliases, one of 8 or more two edits (optimal string alignment: insertion, deletion,
substitution, or a swap of neighbours); shorter tokens must still start one of its tokens, as
a typo in a 3-letter word is as likely another word. Every query token must match, at least
one of them only fuzzily (otherwise the keyword search found the entity already). So
`Annabel` (7 characters, 3 edits from `anna`) still finds no `Anna`.

Rank: fewer edits in all first, then shorter names, then name. The distinct indexed tokens
are matched by rapidfuzz (C, bit-parallel) within the length buckets the edit budget allows.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from projections.graph_family._index import EntityEntry, FamilyIndex
from projections.graph_family._tokens import tokens

__all__ = ["fuzzy_search", "most_edits"]


def most_edits(token: str) -> int:
    """The edits a query token may be away from an indexed token."""
    if len(token) >= 8:
        return 2
    if len(token) >= 5:
        return 1
    return 0


def fuzzy_search(
    index: FamilyIndex,
    query: str,
    *,
    keep: Callable[[EntityEntry], bool] | None = None,
    limit: int | None = None,
) -> tuple[list[str], int]:
    """The best `limit` (None: all) names `query` matches fuzzily but not as keywords, among
    those `keep` accepts, best first, and how many it matches so in all."""
    wanted = list(dict.fromkeys(tokens(query)))
    loose = [t for t in wanted if most_edits(t)]
    if not loose:
        return [], 0
    edits: dict[str, int] | None = None
    for token in sorted(loose, key=len, reverse=True):  # the longest is the most selective
        near = _names_near(index, token)
        if edits is None:
            edits = near
        else:
            edits = {name: edits[name] + d for name, d in near.items() if name in edits}
        if not edits:
            return [], 0
    assert edits is not None
    strict = [t for t in wanted if not most_edits(t)]
    found: dict[str, int] = {}
    for name, distance in edits.items():
        entry = index.entry(name)
        if entry is None or (keep is not None and not keep(entry)):
            continue
        if strict and not all(any(t.startswith(s) for t in entry.tokens) for s in strict):
            continue
        if distance == 0:
            continue  # every token starts one of its tokens: the keyword search's own hit
        found[name] = distance
    total = len(found)
    room = total if limit is None else min(limit, total)
    best = heapq.nsmallest(room, found, key=lambda name: (found[name], len(name), name))
    return best, total


def _names_near(index: FamilyIndex, token: str) -> dict[str, int]:
    """Name -> the fewest edits between `token` and one of its tokens (a token it starts
    counts as 0: the keyword rule)."""
    near: dict[str, int] = dict.fromkeys(index.names_with_prefix(token), 0)
    for found, distance in sorted(index.tokens_near(token, most_edits(token)).items()):
        for name in index.names_with_token(found):
            if distance < near.get(name, distance + 1):
                near[name] = distance
    return near
