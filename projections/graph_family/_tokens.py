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

_NONE: frozenset[str] = frozenset()

# Letters and digits of any script: \w without the underscore.
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The runs of letters and digits of `text` after NFKC and casefolding."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _TOKEN.findall(folded)


def entity_tokens(name: str, aliases: Iterable[str]) -> frozenset[str]:
    """What an entity is found by: the tokens of its name, its slug and its aliases (a slug's
    parts are its name's tokens, except the hashed slug of a name without any)."""
    found = set(tokens(name))
    if not found:
        # A name without letters or digits: its id is its hashed slug (`e-<hex>`).
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
        # Distinct tokens by length, for fuzzy matching: a token within edit distance k of
        # the query differs from it in length by at most k, so only those buckets are
        # scanned. The lists handed to rapidfuzz are cached per length, dropped when a token
        # of that length comes or goes.
        self._by_length: dict[int, set[str]] = {}
        self._length_lists: dict[int, list[str]] = {}

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
        for token in names:
            index._by_length.setdefault(len(token), set()).add(token)
        return index

    def add(self, name: str, found: Iterable[str]) -> None:
        for token in found:
            holders = self._names.get(token)
            if holders is None:
                self._names[token] = {name}
                self._sorted.add(token)
                self._by_length.setdefault(len(token), set()).add(token)
                self._length_lists.pop(len(token), None)
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
                self._by_length[len(token)].discard(token)
                self._length_lists.pop(len(token), None)

    def _prefixed(self, prefix: str) -> Iterator[str]:
        for token in self._sorted.irange(minimum=prefix):
            if not token.startswith(prefix):
                return
            yield token

    def names_with_token(self, token: str) -> frozenset[str] | set[str]:
        """The names indexed under exactly `token` (the index's own set: do not change it)."""
        return self._names.get(token, _NONE)

    def prefix_size(self, prefix: str, most_tokens: int) -> int | None:
        """How many (name, token) pairs `prefix` matches; None when it matches more than
        `most_tokens` distinct tokens (too wide to be worth counting)."""
        size = 0
        for seen, token in enumerate(self._prefixed(prefix)):
            if seen >= most_tokens:
                return None
            size += len(self._names[token])
        return size

    def names_with_prefix(self, prefix: str) -> set[str]:
        """Every name indexed under a token that starts with `prefix`."""
        found: set[str] = set()
        names = self._names
        for token in self._prefixed(prefix):
            found.update(names[token])
        return found

    def tokens_near(self, token: str, most_edits: int) -> dict[str, int]:
        """Indexed tokens within `most_edits` edits of `token` (optimal string alignment: an
        insertion, deletion, substitution or swap of neighbours is one edit), with their
        distance."""
        # Imported here: only fuzzy name matching (the graph family) uses it, and every server
        # imports this module (~4 MiB of RSS for a memory server that never calls it).
        from rapidfuzz import process  # noqa: PLC0415
        from rapidfuzz.distance import OSA  # noqa: PLC0415

        near: dict[str, int] = {}
        if most_edits <= 0:
            return {token: 0} if token in self._names else near
        size = len(token)
        for length in range(max(1, size - most_edits), size + most_edits + 1):
            choices = self._length_lists.get(length)
            if choices is None:
                bucket = self._by_length.get(length)
                if not bucket:
                    continue
                choices = self._length_lists[length] = sorted(bucket)
            for found, distance, _ in process.extract(
                token, choices, scorer=OSA.distance, score_cutoff=most_edits, limit=None
            ):
                near[found] = int(distance)
        return near
