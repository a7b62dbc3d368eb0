"""The graph family's properties rules (contract §3.6): merging, reserved keys, and the entity
keys that mean an attribute. Pure; the graph tools' decide functions call these.

Upstream applied properties last, so a caller could overwrite `id`, `tenant_id` or the
counters; here reserved keys are dropped with a warning and the meaningful ones become the
attributes they name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from projections.naming import fold_name

__all__ = [
    "RESERVED_EDGE_KEYS",
    "RESERVED_ENTITY_KEYS",
    "EdgeProperties",
    "EntityProperties",
    "edge_properties",
    "entity_properties",
    "merge_properties",
]

RESERVED_ENTITY_KEYS = frozenset(
    {
        "id",
        "name",
        "type",
        "embedding",
        "first_seen",
        "last_seen",
        "times_mentioned",
        "last_decayed",
        "tenant_id",
        "observations",
    }
)
RESERVED_EDGE_KEYS = frozenset(
    {
        "weight",
        "effective_weight",
        "valid_at",
        "invalid_at",
        "ingested_at",
        "last_confirmed",
        "source_session",
        "source_transcript",
        "source_type",
        "evidence",
        "tenant_id",
    }
)
# Entity keys that set an attribute instead of a property.
_STRING_ATTRIBUTES = ("subtype", "source_file")
CONFIDENCE_NOTE = "confidence_note"


def merge_properties(current: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A write's merge: keys given replace those present, a key given as null is removed,
    the others stay."""
    merged = dict(current)
    for key, value in given.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class EdgeProperties:
    """An edge write's properties with the reserved keys taken out, and why."""

    properties: dict[str, Any]
    warnings: tuple[str, ...] = ()


def edge_properties(given: Mapping[str, Any]) -> EdgeProperties:
    """`given` without the keys that belong to dedicated arguments (each dropped, warned)."""
    kept = {k: v for k, v in given.items() if k not in RESERVED_EDGE_KEYS}
    dropped = [k for k in given if k in RESERVED_EDGE_KEYS]
    return EdgeProperties(kept, tuple(_reserved(key, "argument of its own") for key in dropped))


@dataclass(frozen=True)
class EntityProperties:
    """An entity write's properties split into the attributes they set and the rest.

    `set_attributes` holds subtype/source_file given as strings, `cleared` those given as
    null; `aliases` are to be added; `confidence` is an input to the max rule (§4.2)."""

    properties: dict[str, Any]
    set_attributes: dict[str, str] = field(default_factory=dict)
    cleared: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    confidence: float | None = None
    warnings: tuple[str, ...] = ()


def entity_properties(given: Mapping[str, Any]) -> EntityProperties:
    """Split an entity write's `properties` per §3.6 (the remaining ones still to be merged)."""
    kept: dict[str, Any] = {}
    set_attributes: dict[str, str] = {}
    cleared: list[str] = []
    aliases: tuple[str, ...] = ()
    confidence: float | None = None
    warnings: list[str] = []
    for key, value in given.items():
        if key in RESERVED_ENTITY_KEYS:
            warnings.append(_reserved(key, "attribute graphmem keeps itself"))
        elif key in _STRING_ATTRIBUTES:
            if value is None:
                cleared.append(key)
            elif isinstance(value, str):
                set_attributes[key] = value
            else:
                warnings.append(f"property {key!r} must be a string (or null to clear it); dropped")
        elif key == "aliases":
            names = [value] if isinstance(value, str) else value
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                # Distinct under the name folding (§3.5); the first spelling is kept.
                distinct: dict[str, str] = {}
                for name in names:
                    if name.strip():
                        distinct.setdefault(fold_name(name), name.strip())
                aliases = tuple(distinct.values())
            else:
                warnings.append("property 'aliases' must be a string or a list of strings; dropped")
        elif key == "confidence":
            if _is_unit_number(value):
                confidence = float(value)
            else:
                kept[CONFIDENCE_NOTE] = value
                warnings.append(
                    f"property 'confidence' is not a number in [0, 1]; kept as {CONFIDENCE_NOTE!r}"
                )
        else:
            kept[key] = value
    return EntityProperties(
        kept, set_attributes, tuple(cleared), aliases, confidence, tuple(warnings)
    )


def _is_unit_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False  # bool is an int to Python, never a confidence to a user
    # An int too large for a float is compared as an int (isfinite would overflow).
    return (isinstance(value, int) or math.isfinite(value)) and 0 <= value <= 1


def _reserved(key: str, owner: str) -> str:
    return f"property {key!r} is reserved (an {owner}); dropped"
