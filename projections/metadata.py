"""Metadata entries of the schema-driven family: "Key: Value" strings on a node (MemoryMesh's).

A node's metadata is its entity's observations; an entry is structured when it has a key before
its first colon. New entries spell the key as the schema does (`currentLocation: Rivendell`, as
MemoryMesh stores it). Keys are compared by their normalized form, so "Current Location" (what
graphmem stored before), "currentLocation" and "current_location" name one property.
"""

from __future__ import annotations

import re

__all__ = ["display_name", "format_entry", "key_spellings", "normalize_key", "parse_entry"]

_SEPARATORS = re.compile(r"[\s_\-]+")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def parse_entry(entry: str) -> tuple[str, str] | None:
    """(key, value) split on the first colon and stripped; None when there is no key."""
    key, sep, value = entry.partition(":")
    key = key.strip()
    if not sep or not key:
        return None
    return key, value.strip()


def normalize_key(key: str) -> str:
    """The form keys are compared in: lower case, without spaces, underscores or hyphens."""
    return _SEPARATORS.sub("", key).lower()


def display_name(property_name: str) -> str:
    """camelCase or snake_case to Title Case words: currentLocation -> Current Location."""
    words = _SEPARATORS.split(_CAMEL_BOUNDARY.sub(" ", property_name).strip())
    return " ".join(word[:1].upper() + word[1:] for word in words if word)


def format_entry(property_name: str, value: str) -> str:
    """The stored entry: the key exactly as the schema (or the caller) spells it."""
    return f"{property_name}: {value}"


def key_spellings(text: str) -> list[str]:
    """`text` and the other spellings of the key it starts with (the part before its first
    colon, or all of it): Title Case words, camelCase and snake_case. A search for
    "currentLocation" thus also finds the "Current Location: X" an older graphmem stored."""
    key, sep, rest = text.partition(":")
    words = display_name(key).split(" ")
    if len(words) < 2:
        return [text]
    camel = words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:])
    forms = (" ".join(words), camel, "_".join(w.lower() for w in words))
    return list(dict.fromkeys([text, *(f"{form}{sep}{rest}" for form in forms)]))
