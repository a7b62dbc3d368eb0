"""The graph family's naming rules: slugs and ids, name resolution, type and relation spelling.

Pure functions over strings and a `NameLookup` (what the read model answers about live
entities); no state of their own except `NameIndex`, a plain in-memory lookup. The rules
are the contract's (graph-memory §3.3-3.5), restated in docs/design-notes.md "Graph family":

- `slug`: NFKC, casefold, every run of characters that are not letters or digits (Unicode
  categories L and N, with the combining marks that follow them) becomes one `-`, `-`
  stripped at both ends; an empty result becomes `e-` + 10 hex digits of the name's SHA-256.
  Letters of every script survive (`東京`, `zoë`), unlike upstream's `[a-z0-9]`, which gave
  every CJK name the same empty id.
- `resolve`: exact name, then the folded name (NFKC + casefold + whitespace runs collapsed),
  then an alias, then the slug; the first step that matches anything wins, and more than one
  match there is an ambiguity the caller handles (writes refuse, reads use all).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

__all__ = [
    "CANONICAL_ENTITY_TYPES",
    "NEVER_SUPERSEDE_RELATION_TYPES",
    "SYMMETRIC_RELATION_TYPES",
    "EntityTypeError",
    "MatchStep",
    "NameIndex",
    "NameLookup",
    "RelationTypeError",
    "Resolution",
    "entity_id",
    "fold_name",
    "is_type_name",
    "normalise_entity_type",
    "normalise_relation_type",
    "relation_lookup_candidates",
    "resolve",
    "slug",
]

CANONICAL_ENTITY_TYPES = (
    "Person",
    "Project",
    "Preference",
    "Concept",
    "Decision",
    "Fact",
    "Event",
    "Object",
    "Reasoning",
)
_CANONICAL_BY_FOLD = {name.casefold(): name for name in CANONICAL_ENTITY_TYPES}
MAX_TYPE_CHARS = 64

# Direction carries no meaning: B KNOWS A is the edge A KNOWS B.
SYMMETRIC_RELATION_TYPES = frozenset(
    {"KNOWS", "COLLABORATES_WITH", "FAMILY_OF", "ALIAS_OF", "CONTRADICTS", "RELATED_TO"}
)
# One source holds many targets at once: a dated write never closes the siblings.
NEVER_SUPERSEDE_RELATION_TYPES = frozenset(
    {
        "FAMILY_OF",
        "KNOWS",
        "COLLABORATES_WITH",
        "MENTOR_OF",
        "ALIAS_OF",
        "CONTRADICTS",
        "RELATED_TO",
    }
)

_RELATION_TYPE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_RELATION_SEPARATORS = re.compile(r"[\s-]+")
_WHITESPACE = re.compile(r"\s+")
_EMPTY_SLUG_PREFIX = "e-"
_EMPTY_SLUG_HEX_DIGITS = 10


class EntityTypeError(ValueError):
    """An entity type that is neither canonical nor a plain type name; says what is allowed."""


class RelationTypeError(ValueError):
    """A relation name that does not normalise to an UPPER_SNAKE type; says what is allowed."""


# --- slugs, folding, ids --------------------------------------------------------------------


def _is_letter_or_digit(char: str) -> bool:
    return unicodedata.category(char)[0] in "LN"


def slug(name: str) -> str:
    """The lookup key of a name: lower-case letters and digits of any script joined by `-`.

    NFKC is applied again after casefolding: casefolding can leave a sequence NFKC would
    still change, and the slug of a slug must be itself (ids are matched as references).
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    parts: list[str] = []
    run: list[str] = []
    for char in folded:
        # A combining mark belongs to the letter before it (the vowel signs of हिन्दी, the
        # dot İ folds to): the contract's letters-and-digits rule alone cut such words apart.
        if _is_letter_or_digit(char) or (run and unicodedata.category(char)[0] == "M"):
            run.append(char)
        elif run:
            parts.append("".join(run))
            run = []
    if run:
        parts.append("".join(run))
    if parts:
        return "-".join(parts)
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return _EMPTY_SLUG_PREFIX + digest[:_EMPTY_SLUG_HEX_DIGITS]


def fold_name(name: str) -> str:
    """The form two names are "the same name" in (resolution steps 2 and 3, alias distinctness):
    NFKC, casefold, runs of whitespace collapsed to one space, trimmed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return _WHITESPACE.sub(" ", folded).strip()


class NameLookup(Protocol):
    """What name resolution asks the graph about live entities (the read model answers)."""

    def has_name(self, name: str) -> bool:
        """Whether a live entity has exactly this name."""
        ...

    def names_folded(self, folded: str) -> Sequence[str]:
        """Live entities whose fold_name is `folded`."""
        ...

    def names_with_alias(self, folded: str) -> Sequence[str]:
        """Live entities with an alias whose fold_name is `folded`."""
        ...

    def names_with_slug(self, key: str) -> Sequence[str]:
        """Live entities whose slug is `key`."""
        ...


def entity_id(name: str, lookup: NameLookup) -> str:
    """The id shown for a live entity: its slug, unless another live entity shares the slug,
    in which case each of them is known by its exact name."""
    key = slug(name)
    sharing = lookup.names_with_slug(key)
    return key if len(sharing) <= 1 else name


# --- resolution -----------------------------------------------------------------------------


class MatchStep(StrEnum):
    """Which step of resolution matched (the order is the order of resolve's steps)."""

    EXACT = "exact"
    FOLDED = "folded"
    ALIAS = "alias"
    SLUG = "slug"


@dataclass(frozen=True)
class Resolution:
    """The live entities a reference names, and the step that found them (None: none did)."""

    reference: str
    names: tuple[str, ...] = ()
    step: MatchStep | None = None

    @property
    def found(self) -> bool:
        return bool(self.names)

    @property
    def ambiguous(self) -> bool:
        return len(self.names) > 1


def resolve(reference: str, lookup: NameLookup) -> Resolution:
    """The entities `reference` (a name, an alias or an id) names: the first step that matches
    wins; its matches in name order, so a read that uses them all is deterministic."""
    if lookup.has_name(reference):
        return Resolution(reference, (reference,), MatchStep.EXACT)
    folded = fold_name(reference)
    for step, names in (
        (MatchStep.FOLDED, lookup.names_folded(folded)),
        (MatchStep.ALIAS, lookup.names_with_alias(folded)),
    ):
        if names:
            return Resolution(reference, tuple(sorted(set(names))), step)
    by_slug = lookup.names_with_slug(slug(reference))
    if by_slug:
        return Resolution(reference, tuple(sorted(set(by_slug))), MatchStep.SLUG)
    return Resolution(reference)


class NameIndex:
    """A NameLookup over names and aliases kept in dicts (tests, and a model for the fold's)."""

    def __init__(self, entities: Iterable[tuple[str, Iterable[str]]] = ()) -> None:
        self._aliases: dict[str, tuple[str, ...]] = {}
        self._folded: dict[str, set[str]] = {}
        self._by_alias: dict[str, set[str]] = {}
        self._slugs: dict[str, set[str]] = {}
        for name, aliases in entities:
            self.add(name, aliases)

    def add(self, name: str, aliases: Iterable[str] = ()) -> None:
        """Index a live entity (again, replacing its aliases if it was indexed)."""
        self.remove(name)
        self._aliases[name] = tuple(aliases)
        self._folded.setdefault(fold_name(name), set()).add(name)
        self._slugs.setdefault(slug(name), set()).add(name)
        for alias in self._aliases[name]:
            self._by_alias.setdefault(fold_name(alias), set()).add(name)

    def remove(self, name: str) -> None:
        """Forget an entity (deleted); nothing if it was not indexed."""
        aliases = self._aliases.pop(name, None)
        if aliases is None:
            return
        _discard(self._folded, fold_name(name), name)
        _discard(self._slugs, slug(name), name)
        for alias in aliases:
            _discard(self._by_alias, fold_name(alias), name)

    def has_name(self, name: str) -> bool:
        return name in self._aliases

    def names_folded(self, folded: str) -> Sequence[str]:
        return sorted(self._folded.get(folded, ()))

    def names_with_alias(self, folded: str) -> Sequence[str]:
        return sorted(self._by_alias.get(folded, ()))

    def names_with_slug(self, key: str) -> Sequence[str]:
        return sorted(self._slugs.get(key, ()))


def _discard(index: dict[str, set[str]], key: str, name: str) -> None:
    names = index.get(key)
    if names is not None:
        names.discard(name)
        if not names:
            del index[key]


# --- types ----------------------------------------------------------------------------------


def is_type_name(text: str) -> bool:
    """1-64 letters (of any script), digits and `_`, starting with a letter."""
    return (
        0 < len(text) <= MAX_TYPE_CHARS
        and unicodedata.category(text[0])[0] == "L"
        and all(char == "_" or _is_letter_or_digit(char) for char in text)
    )


def normalise_entity_type(raw: str) -> str:
    """A canonical type in its canonical case (`person` -> `Person`), else the trimmed type if
    it is a plain type name; EntityTypeError otherwise."""
    text = raw.strip()
    canonical = _CANONICAL_BY_FOLD.get(text.casefold())
    if canonical is not None:
        return canonical
    if is_type_name(text):
        return text
    raise EntityTypeError(
        f"entity type {raw!r} is not usable: use one of {', '.join(CANONICAL_ENTITY_TYPES)}, "
        f"or 1-{MAX_TYPE_CHARS} letters, digits and _ starting with a letter"
    )


def normalise_relation_type(raw: str) -> str:
    """The one spelling of a relation for writes: trimmed, upper-cased, runs of spaces and `-`
    turned into `_` (`works on` -> `WORKS_ON`); RelationTypeError if that is not UPPER_SNAKE."""
    text = _RELATION_SEPARATORS.sub("_", raw.strip().upper())
    if _RELATION_TYPE.fullmatch(text) is None:
        raise RelationTypeError(
            f"relation {raw!r} is not usable: after upper-casing and turning spaces and - into "
            f"_, it must be a letter then up to 63 letters A-Z, digits or _ (e.g. WORKS_ON)"
        )
    return text


def relation_lookup_candidates(raw: str) -> tuple[str, ...]:
    """The relation types a lookup tries, in order: the string as given (so edges written by
    other families, such as `knows`, stay reachable), then its write spelling if it has one."""
    try:
        normalised = normalise_relation_type(raw)
    except RelationTypeError:
        return (raw,)
    return (raw,) if normalised == raw else (raw, normalised)
