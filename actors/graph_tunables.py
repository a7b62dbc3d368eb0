"""The graph family's tunables (weights, decay, query defaults, affinity, dream) and their merge.

Pure: `merge_tunables(document)` takes the decoded `config.json` (any JSON value) and returns
the tunables with every usable override applied over the defaults, plus one warning per key it
could not use as given. A bad key never costs the user their other overrides (upstream drops
the whole file on any error): a value of the wrong kind keeps that key's default, a number
outside its range is clamped into it, an unknown key is ignored; each says so by key path.
Reading the file is graphmem.graph_config's job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from projections.naming import is_type_name

__all__ = [
    "DEFAULT_RATE_KEY",
    "Affinity",
    "Decay",
    "Dream",
    "Query",
    "Tunables",
    "Weights",
    "merge_tunables",
]

# The rate of every entity type without its own entry in decay.rates.
DEFAULT_RATE_KEY = "default"
# Sections upstream's config.json carries that mean nothing here; ignored without a warning so
# an upstream home can be pointed at as it is.
IGNORED_SECTIONS = frozenset({"neo4j"})


@dataclass(frozen=True)
class Range:
    """The numbers a tunable accepts: a finite number (a whole one if `whole`) in [low, high]."""

    low: float
    high: float
    whole: bool = False

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} in [{self.low:g}, {self.high:g}]"


UNIT = Range(0.0, 1.0)
_BIG = 1e9


def _tunable(default: float, within: Range = UNIT) -> Any:
    return field(default=default, metadata={"range": within})


@dataclass(frozen=True)
class Weights:
    """Edge weights: the re-assert and boost/weaken amounts, and guidance for clients."""

    explicit_statement: float = _tunable(0.7)
    inferred: float = _tunable(0.3)
    from_memory_file: float = _tunable(0.5)
    boost_on_confirm: float = _tunable(0.15)
    boost_on_mention: float = _tunable(0.05)
    weaken_on_correct: float = _tunable(0.3)
    project_context_boost: float = _tunable(0.10)


_DEFAULT_RATES = {
    "person": 0.998,
    "project": 0.995,
    "preference": 0.999,
    "concept": 0.999,
    "decision": 0.997,
    "fact": 0.996,
    "event": 0.993,
    "object": 0.996,
    "reasoning": 0.996,
    DEFAULT_RATE_KEY: 0.996,
}


@dataclass(frozen=True)
class Decay:
    """Daily decay rates, the floor, and the prune and staleness thresholds."""

    # Casefolded type name -> daily rate; types match case-insensitively.
    rates: Mapping[str, float] = field(default_factory=lambda: MappingProxyType(_DEFAULT_RATES))
    edge_rate: float = _tunable(0.997)
    floor: float = _tunable(0.01)
    prune_node_threshold: float = _tunable(0.1)
    prune_edge_threshold: float = _tunable(0.05)
    prune_orphan_days: float = _tunable(30.0, Range(0, 36_500))
    stale_confidence: float = _tunable(0.2)
    stale_days: float = _tunable(90.0, Range(0, 36_500))
    # The decay scheduler's period (graphmem's own); 0: no scheduled runs.
    schedule_hours: float = _tunable(24.0, Range(0, 87_600))

    def rate_for(self, entity_type: str) -> float:
        """The daily rate of an entity type (case-insensitive), else the default rate."""
        rates = self.rates
        return rates.get(entity_type.casefold(), rates[DEFAULT_RATE_KEY])


@dataclass(frozen=True)
class Query:
    """graph_query's defaults."""

    default_max_hops: int = _tunable(2, Range(0, 4, whole=True))
    default_min_weight: float = _tunable(0.3)
    default_limit: int = _tunable(20, Range(1, 200, whole=True))
    cypher_timeout_ms: int = _tunable(5000, Range(1, 3_600_000, whole=True))


@dataclass(frozen=True)
class Affinity:
    """Effective-weight multipliers for edges near the project in context (a ranking score)."""

    hop_1_multiplier: float = _tunable(1.3, Range(0, 10))
    hop_2_multiplier: float = _tunable(1.15, Range(0, 10))


@dataclass(frozen=True)
class Dream:
    """Read by the external transcript processor; graphmem only serves them back."""

    cooldown_hours: float = _tunable(4.0, Range(0, _BIG))
    max_transcripts_per_run: int = _tunable(10, Range(1, _BIG, whole=True))
    chunk_size_lines: int = _tunable(500, Range(1, _BIG, whole=True))


@dataclass(frozen=True)
class Tunables:
    """Every tunable of the graph family, at the contract's defaults unless overridden."""

    weights: Weights = field(default_factory=Weights)
    decay: Decay = field(default_factory=Decay)
    query: Query = field(default_factory=Query)
    affinity: Affinity = field(default_factory=Affinity)
    dream: Dream = field(default_factory=Dream)


def merge_tunables(document: Any) -> tuple[Tunables, list[str]]:
    """`document` (a decoded config.json) deep-merged over the defaults, and a warning for
    each key that was not used as given, naming it by its dotted path."""
    warnings: list[str] = []
    defaults = Tunables()
    if not isinstance(document, dict):
        warnings.append(
            f"the document is {_kind(document)}, not an object of sections; "
            "every tunable keeps its default"
        )
        return defaults, warnings
    sections: dict[str, Any] = {}
    for name, value in document.items():
        if name in IGNORED_SECTIONS:
            continue
        current = getattr(defaults, name, None) if name in _SECTIONS else None
        if current is None:
            warnings.append(_unknown(name, _SECTIONS))
        elif not isinstance(value, dict):
            warnings.append(
                f"{name} is {_kind(value)}, not an object; its tunables keep their defaults"
            )
        else:
            sections[name] = _merge_section(name, current, value, warnings)
    return replace(defaults, **sections), warnings


_SECTIONS = tuple(f.name for f in fields(Tunables))


def _merge_section(path: str, section: Any, overrides: dict[str, Any], warnings: list[str]) -> Any:
    known = {f.name: f for f in fields(section)}
    changes: dict[str, Any] = {}
    for name, value in overrides.items():
        spec = known.get(name)
        where = f"{path}.{name}"
        if spec is None:
            warnings.append(_unknown(where, tuple(known)))
        elif name == "rates":
            changes[name] = _merge_rates(where, section.rates, value, warnings)
        else:
            number = _number(where, value, spec.metadata["range"], warnings)
            if number is not None:
                changes[name] = number
    return replace(section, **changes)


def _merge_rates(
    path: str, rates: Mapping[str, float], overrides: Any, warnings: list[str]
) -> Mapping[str, float]:
    if not isinstance(overrides, dict):
        warnings.append(
            f"{path} is {_kind(overrides)}, not an object; the rates keep their defaults"
        )
        return rates
    merged = dict(rates)
    for name, value in overrides.items():
        where = f"{path}.{name}"
        if not is_type_name(name):
            warnings.append(
                f"{where}: {name!r} is not an entity type name (a letter, then letters, "
                "digits or _, at most 64 in all); ignored"
            )
            continue
        number = _number(where, value, UNIT, warnings)
        if number is not None:
            merged[name.casefold()] = number
    return MappingProxyType(merged)


def _number(path: str, value: Any, within: Range, warnings: list[str]) -> float | int | None:
    """`value` as the tunable's number (clamped into its range), or None to keep the default."""
    # bool is an int to Python, never a number to a user; an int may be too large for a float,
    # so it is compared as an int.
    if isinstance(value, bool) or not isinstance(value, int | float):
        usable = False
    elif isinstance(value, float):
        usable = math.isfinite(value) and (value.is_integer() or not within.whole)
    else:
        usable = True
    if not usable:
        warnings.append(
            f"{path} is {_kind(value)}; it must be {within.describe()}, so it keeps its default"
        )
        return None
    inside = min(max(value, within.low), within.high)
    number = int(inside) if within.whole else float(inside)
    if inside != value:
        warnings.append(
            f"{path} = {_shown(value)} is outside [{within.low:g}, {within.high:g}]; "
            f"clamped to {number!r}"
        )
    return number


def _shown(value: float) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]}"


def _unknown(path: str, known: tuple[str, ...]) -> str:
    return f"{path} is not a tunable (known here: {', '.join(known)}); ignored"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"the number {_shown(value)}"
