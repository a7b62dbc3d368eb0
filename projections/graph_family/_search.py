"""Keyword search (contract §8.5), also graph_query's fallback for an entry that resolves to
nothing.

An entity matches when every query token is a prefix of some token of its name, its id or one
of its aliases. Rank: an entity whose name or alias equals the query (the §3.3 folding) first,
then more query tokens equal to whole tokens, then shorter names, then name. No typo
tolerance. A query without letters or digits matches only by that equality.
"""

from __future__ import annotations

from projections.graph_family._index import EntityEntry, FamilyIndex
from projections.graph_family._tokens import tokens
from projections.naming import NameLookup, fold_name

__all__ = ["keyword_search"]


def keyword_search(index: FamilyIndex, lookup: NameLookup, query: str) -> list[str]:
    """The names of the entities `query` matches, best first."""
    wanted = list(dict.fromkeys(tokens(query)))
    folded = fold_name(query)
    if not wanted:
        names = {*lookup.names_folded(folded), *lookup.names_with_alias(folded)}
        return sorted(names, key=lambda n: (len(n), n))
    # The longest token is usually the most selective: its matches are the candidates, which
    # are then checked against the other tokens by their own token sets.
    ordered = sorted(wanted, key=len, reverse=True)
    entries: list[EntityEntry] = []
    for name in index.names_with_prefix(ordered[0]):
        entry = index.entry(name)
        if entry is not None and all(
            any(token.startswith(q) for token in entry.tokens) for q in ordered[1:]
        ):
            entries.append(entry)

    def rank(entry: EntityEntry) -> tuple[int, int, int, str]:
        whole = sum(1 for q in wanted if q in entry.tokens)
        return (0 if folded in entry.folded else 1, -whole, len(entry.name), entry.name)

    entries.sort(key=rank)
    return [entry.name for entry in entries]
