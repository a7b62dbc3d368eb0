"""Keyword search (contract §8.5), also graph_query's fallback for an entry that resolves to
nothing.

An entity matches when every query token is a prefix of some token of its name, its id or one
of its aliases. Rank: an entity whose name or alias equals the query (the §3.3 folding) first,
then more query tokens equal to whole tokens, then shorter names, then name. No typo
tolerance. A query without letters or digits matches only by that equality.

Most of the work is set algebra over the token index (C-level): the candidates are the
matches of the most selective query token, narrowed by the others; only the best group of the
ranking is ordered, and only as far as `limit`.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable

from projections.graph_family._entries import EntityEntry
from projections.graph_family._index import FamilyIndex
from projections.graph_family._tokens import tokens
from projections.naming import NameLookup, fold_name

__all__ = ["keyword_search"]

# A query token whose prefix spans more indexed tokens than this counts as unselective: it is
# checked candidate by candidate rather than by a union of its sets.
_WIDE = 64
# Above this many names a group is ordered by sorting rather than by a heap with a key.
_SORT_WHOLE = 2000


def keyword_search(
    index: FamilyIndex,
    lookup: NameLookup,
    query: str,
    *,
    keep: Callable[[EntityEntry], bool] | None = None,
    limit: int | None = None,
) -> tuple[list[str], int]:
    """The best `limit` (None: all) names `query` matches among those `keep` accepts, best
    first, and how many it matches in all."""
    wanted = list(dict.fromkeys(tokens(query)))
    folded = fold_name(query)
    exact = {*lookup.names_folded(folded), *lookup.names_with_alias(folded)}
    matched = _matches(index, wanted) if wanted else set(exact)
    if keep is not None:
        matched = {n for n in matched if (e := index.entry(n)) is not None and keep(e)}
    total = len(matched)
    room = total if limit is None else min(limit, total)
    best = sorted(exact & matched, key=_shorter_then_name)[:room]
    rest = matched.difference(best)
    if len(best) < room and rest:
        for group in _by_whole_tokens(index, wanted, rest):
            need = room - len(best)
            if need <= 0:
                break
            best += _first(group, need)
    return best, total


def _by_whole_tokens(index: FamilyIndex, wanted: list[str], names: set[str]) -> list[set[str]]:
    """`names` grouped by how many query tokens each has as a whole token, most first."""
    if len(wanted) == 1:
        whole = names & index.names_with_token(wanted[0])
        return [whole, names - whole]
    counts: Counter[str] = Counter()
    for token in wanted:
        counts.update(names & index.names_with_token(token))
    groups: dict[int, set[str]] = {}
    for name, count in counts.items():
        groups.setdefault(count, set()).add(name)
    groups[0] = names.difference(counts)
    return [groups[count] for count in sorted(groups, reverse=True)]


def _first(names: set[str], need: int) -> list[str]:
    """The `need` shortest names, ties by name."""
    if len(names) > _SORT_WHOLE:
        # Two C-level sorts beat a Python key per name on a large group.
        return sorted(sorted(names), key=len)[:need]
    return heapq.nsmallest(need, names, key=_shorter_then_name)


def _matches(index: FamilyIndex, wanted: list[str]) -> set[str]:
    # The query token with the fewest matches first (None: too wide to count cheaply).
    sizes = sorted(
        ((size is None, size or 0), token)
        for token in wanted
        for size in (index.prefix_size(token, _WIDE),)
    )
    matched = index.names_with_prefix(sizes[0][1])
    for (wide, _), token in sizes[1:]:
        if not matched:
            break
        if not wide:
            matched &= index.names_with_prefix(token)
        else:
            matched = {
                name
                for name in matched
                if (entry := index.entry(name)) is not None
                and any(t.startswith(token) for t in entry.tokens)
            }
    return matched


def _shorter_then_name(name: str) -> tuple[int, str]:
    return (len(name), name)
