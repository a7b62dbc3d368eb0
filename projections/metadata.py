"""Metadata entries of the schema-driven family: "Key: Value" strings on a node (MemoryMesh's).

A node's metadata is its entity's observations; an entry is structured when it has a key before
its first colon. Keys are compared by their normalized form, so "Current Location",
"currentLocation" and "current_location" name one property: entries written by the seed's Title
Case rule and by upstream MemoryMesh's raw property names are found alike.
"""

from __future__ import annotations

import re

__all__ = ["display_name", "format_entry", "normalize_key", "parse_entry"]

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
    return f"{display_name(property_name)}: {value}"
