"""The graph family's node and edge output objects (contract §3.1, §3.2), with decayed values.

A `Reading` is one read of one projection: it takes the newest decay run once, and caches what
it looks up per entity (attributes, id), so a traversal touching an entity from many edges
pays once. Confidence and weight are shown decayed (projections.graph_decay): an entity at its
type's rate from its last_seen, an edge at the run's edge rate from its last_confirmed; an
entity of subtype `rule`, and every edge touching one, never decays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from eventstore.events import DecayApplied
from eventstore.hlc import ms_of
from projections.graph import EntityAttributes, GraphProjection, RelationDetails, RelationView
from projections.graph_decay import EXEMPT_SUBTYPE, decayed, entity_rate, newest_run
from projections.graph_time import format_ms
from projections.naming import slug

__all__ = ["EdgeFacts", "Reading", "decayed_confidence", "decayed_weight", "rounded"]

_DECIMALS = 6
# A name's slug never changes, and computing one walks its characters in Python: reads that
# show many ids (export, contradictions) reuse them across calls.
_slug = functools.lru_cache(maxsize=1 << 17)(slug)
RelationKey = tuple[str, str, str]


def rounded(value: float) -> float:
    return round(value, _DECIMALS)


def decayed_confidence(
    confidence: float, last_seen: int, entity_type: str, run: DecayApplied | None, *, rule: bool
) -> float:
    """The confidence shown: the stored one after the newest run, unless exempt (`rule`)."""
    if run is None or rule:
        return confidence
    return decayed(confidence, last_seen, run, entity_rate(run, entity_type))


def decayed_weight(
    weight: float, last_confirmed: int, run: DecayApplied | None, *, exempt: bool
) -> float:
    """The weight shown: the stored one after the newest run at its edge rate (none: no
    decay), unless the edge touches a rule entity."""
    if exempt or run is None or run.edge_rate is None:
        return weight
    return decayed(weight, last_confirmed, run, run.edge_rate)


@dataclass(frozen=True, slots=True)
class EdgeFacts:
    """A visible relation as a read sees it: its view, details and decayed weight."""

    view: RelationView
    details: RelationDetails
    weight: float

    @property
    def key(self) -> RelationKey:
        view = self.view
        return (view.from_entity, view.to_entity, view.relation_type)

    @property
    def current(self) -> bool:
        return self.view.invalid_at is None


class Reading:
    """One read of `graph`: decayed values and output objects, cached per entity."""

    def __init__(self, graph: GraphProjection) -> None:
        self.graph = graph
        self.lookup = graph.name_lookup()
        self.run = newest_run(graph.decay_runs())
        self._attrs: dict[str, EntityAttributes] = {}
        self._ids: dict[str, str] = {}

    def attrs(self, name: str) -> EntityAttributes:
        found = self._attrs.get(name)
        if found is None:
            attrs = self.graph.entity_attributes(name)
            assert attrs is not None, "read only for alive entities"
            found = self._attrs[name] = attrs
        return found

    def entity_id(self, name: str) -> str:
        """`naming.entity_id`: the slug, unless several live entities share it."""
        found = self._ids.get(name)
        if found is None:
            key = _slug(name)
            sharing = self.lookup.names_with_slug(key)
            found = self._ids[name] = key if len(sharing) <= 1 else name
        return found

    def entity_type(self, name: str) -> str:
        return self.graph.entity_type(name) or ""

    def confidence(self, name: str) -> float:
        attrs = self.attrs(name)
        return decayed_confidence(
            attrs.confidence,
            attrs.last_seen,
            self.entity_type(name),
            self.run,
            rule=attrs.subtype == EXEMPT_SUBTYPE,
        )

    def is_rule(self, name: str) -> bool:
        return self.attrs(name).subtype == EXEMPT_SUBTYPE

    def edge(self, key: RelationKey) -> EdgeFacts | None:
        """The visible relation with this key, as read now; None if not visible."""
        view = self.graph.relation(*key)
        details = self.graph.relation_details(*key)
        if view is None or details is None:
            return None
        exempt = self.is_rule(key[0]) or self.is_rule(key[1])
        weight = decayed_weight(view.weight, details.last_confirmed, self.run, exempt=exempt)
        return EdgeFacts(view, details, weight)

    def first_seen(self, name: str) -> int:
        created = self.graph.creation_key(name)
        assert created is not None, "read only for alive entities"
        return ms_of(created[0])

    def node(self, name: str) -> dict[str, Any]:
        """The node output object (§3.1) of an alive entity."""
        attrs = self.attrs(name)
        return {
            "id": self.entity_id(name),
            "type": self.entity_type(name),
            "name": name,
            "subtype": attrs.subtype,
            "confidence": self.confidence(name),
            "times_mentioned": attrs.times_mentioned,
            "first_seen": format_ms(self.first_seen(name)),
            "last_seen": format_ms(attrs.last_seen),
            "source_file": attrs.source_file,
            "aliases": list(attrs.aliases),
            "properties": dict(attrs.properties),
            "observations": self.graph.observations(name),
        }

    def edge_value(self, facts: EdgeFacts, multiplier: float = 1.0) -> dict[str, Any]:
        """The edge output object (§3.2); `effective_weight` is the weight times `multiplier`
        (project affinity: a ranking score, never capped or stored)."""
        view, details = facts.view, facts.details
        return {
            "from": self.entity_id(view.from_entity),
            "to": self.entity_id(view.to_entity),
            "type": view.relation_type,
            "weight": facts.weight,
            "effective_weight": rounded(facts.weight * multiplier),
            "valid_at": format_ms(view.valid_at),
            "invalid_at": format_ms(view.invalid_at),
            "ingested_at": format_ms(details.ingested_at),
            "last_confirmed": format_ms(details.last_confirmed),
            "source_session": view.source_session,
            "source_transcript": view.source_transcript,
            "source_type": view.source_type,
            "evidence": details.evidence,
            "properties": dict(view.properties),
        }
