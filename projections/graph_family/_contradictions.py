"""graph_contradictions (contract §8.6): the CONTRADICTS edges, unresolved unless their
`resolved` property is `true`, newest `detected_date` first.

`detected_date` is read as a time (an absent or unparseable one counts as, and is shown as, the
edge's `ingested_at`); ties by node_a's id, then node_b's. node_a is the edge's source, node_b
its target, each `{id, type, name, content}` where content is the entity's `content` property,
else its name.
"""

from __future__ import annotations

from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._index import FamilyIndex, family_index
from projections.graph_family._values import EdgeFacts, Reading
from projections.graph_time import TimeFormatError, format_ms, parse_time

__all__ = ["graph_contradictions"]


def graph_contradictions(graph: GraphProjection, *, include_resolved: bool) -> dict[str, Any]:
    """The answer object; kept by the index until a contradiction or one of its ends changes
    (a call then costs nothing however many there are)."""
    index = family_index(graph)
    kept = index.contradiction_answers.get(include_resolved)
    if kept is None:
        kept, ends = _contradictions(graph, index, include_resolved=include_resolved)
        index.remember_contradictions(include_resolved, kept, ends)
    return dict(kept)  # the caller may add keys; the list is never changed


def _contradictions(
    graph: GraphProjection, index: FamilyIndex, *, include_resolved: bool
) -> tuple[dict[str, Any], set[str]]:
    reading = Reading(graph)
    found: list[tuple[int, str, str, dict[str, Any]]] = []
    ends: set[str] = set()
    for key in index.contradiction_keys():
        ends.update(key[:2])
        facts = reading.edge(key)
        if facts is None:
            continue
        resolved = facts.view.properties.get("resolved") is True
        if resolved and not include_resolved:
            continue
        detected = _detected_ms(facts)
        node_a = _node(reading, key[0])
        node_b = _node(reading, key[1])
        description = facts.view.properties.get("description")
        item = {
            "node_a": node_a,
            "node_b": node_b,
            "description": description,
            "detected_date": format_ms(detected),
            "resolved": resolved,
        }
        found.append((-detected, node_a["id"], node_b["id"], item))
    found.sort(key=lambda entry: entry[:3])
    contradictions = [entry[3] for entry in found]
    return {"contradictions": contradictions, "count": len(contradictions)}, ends


def _detected_ms(facts: EdgeFacts) -> int:
    given = facts.view.properties.get("detected_date")
    if isinstance(given, str):
        try:
            return parse_time(given, "detected_date")
        except TimeFormatError:
            pass
    return facts.details.ingested_at


def _node(reading: Reading, name: str) -> dict[str, Any]:
    content = reading.attrs(name).properties.get("content")
    return {
        "id": reading.entity_id(name),
        "type": reading.entity_type(name),
        "name": name,
        "content": content if content is not None else name,
    }
