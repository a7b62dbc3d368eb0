"""Keyword tokens (contract §8.5) and a prefix index over them.

A text's tokens are the runs of letters and digits of its NFKC-casefolded form. An entity is
indexed under the tokens of its name, its slug (which its id shares, or is its name) and its
aliases; a query token matches every indexed token it is a prefix of, found by bisecting the
sorted distinct tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from sortedcontainers import SortedList

from projections.naming import slug

__all__ = ["TokenIndex", "entity_tokens", "tokens"]

# Letters and digits of any script: \w without the underscore.
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The runs of letters and digits of `text` after NFKC and casefolding."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _TOKEN.findall(folded)


def entity_tokens(name: str, aliases: Iterable[str]) -> frozenset[str]:
    """What an entity is found by: the tokens of its name, its slug and its aliases."""
    found = set(tokens(name))
    found.update(slug(name).split("-"))
    for alias in aliases:
        found.update(tokens(alias))
    found.discard("")
    return frozenset(found)


class TokenIndex:
    """Token -> the names indexed under it, with the distinct tokens kept sorted."""

    def __init__(self) -> None:
        self._sorted: SortedList[str] = SortedList()
        self._names: dict[str, set[str]] = {}

    @classmethod
    def of(cls, entries: Iterable[tuple[str, frozenset[str]]]) -> TokenIndex:
        index = cls()
        names = index._names
        for name, found in entries:
            for token in found:
                holders = names.get(token)
                if holders is None:
                    names[token] = {name}
                else:
                    holders.add(name)
        index._sorted = SortedList(names)
        return index

    def add(self, name: str, found: Iterable[str]) -> None:
        for token in found:
            holders = self._names.get(token)
            if holders is None:
                self._names[token] = {name}
                self._sorted.add(token)
            else:
                holders.add(name)

    def remove(self, name: str, found: Iterable[str]) -> None:
        for token in found:
            holders = self._names.get(token)
            if holders is None:
                continue
            holders.discard(name)
            if not holders:
                del self._names[token]
                self._sorted.remove(token)

    def _prefixed(self, prefix: str) -> Iterator[str]:
        for token in self._sorted.irange(minimum=prefix):
            if not token.startswith(prefix):
                return
            yield token

    def names_with_prefix(self, prefix: str) -> set[str]:
        """Every name indexed under a token that starts with `prefix`."""
        found: set[str] = set()
        names = self._names
        for token in self._prefixed(prefix):
            found.update(names[token])
        return found
