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

from projections.graph_family._entries import EntityEntry
from projections.graph_family._index import FamilyIndex
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
    # Per loose query token, the indexed tokens one or more edits away. A fuzzy hit has at
    # least one of them (otherwise every token starts one of its tokens: a keyword hit), so
    # the candidates are their names: never the (possibly huge) prefix matches.
    near = {t: {k: d for k, d in index.tokens_near(t, most_edits(t)).items() if d} for t in loose}
    candidates: set[str] = set()
    for found_near in near.values():
        for token in found_near:
            candidates.update(index.names_with_token(token))
    strict = [t for t in wanted if not most_edits(t)]
    found: dict[str, int] = {}
    for name in candidates:
        entry = index.entry(name)
        if entry is None or (keep is not None and not keep(entry)):
            continue
        if strict and not all(any(t.startswith(s) for t in entry.tokens) for s in strict):
            continue
        edits = 0
        for token in loose:
            best = _edits(entry.tokens, token, near[token])
            if best is None:
                break
            edits += best
        else:
            if edits:
                found[name] = edits
    total = len(found)
    room = total if limit is None else min(limit, total)
    best_names = heapq.nsmallest(room, found, key=lambda name: (found[name], len(name), name))
    return best_names, total


def _edits(entity_tokens: frozenset[str], token: str, near: dict[str, int]) -> int | None:
    """The fewest edits between the query `token` and one of the entity's tokens (0 when it
    starts one: the keyword rule); None when none is near enough."""
    if any(t.startswith(token) for t in entity_tokens):
        return 0
    distances = [near[t] for t in entity_tokens if t in near]
    return min(distances) if distances else None
