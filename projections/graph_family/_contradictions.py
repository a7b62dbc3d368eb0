"""graph_contradictions (contract §8.6): the CONTRADICTS edges, unresolved unless their
`resolved` property is `true`, newest `detected_date` first.

`detected_date` is read as a time (an absent or unparseable one counts as, and is shown as, the
edge's `ingested_at`); ties by node_a's id, then node_b's. node_a is the edge's source, node_b
its target, each `{id, type, name, content}` where content is the entity's `content` property,
else its name.
"""

from __future__ import annotations

from typing import Any

from projections.graph import GraphProjection, RelationKey
from projections.graph_family._build import family_index
from projections.graph_family._index import FamilyIndex
from projections.graph_family._values import EdgeFacts, Reading
from projections.graph_time import TimeFormatError, format_ms, parse_time

__all__ = ["graph_contradictions"]


def graph_contradictions(graph: GraphProjection, *, include_resolved: bool) -> dict[str, Any]:
    """The answer object. The index keeps it until a contradiction or one of its ends changes,
    and keeps each edge's item until that edge or one of its ends changes, so after a write
    only the items it touched are rebuilt (then all are sorted again)."""
    index = family_index(graph)
    kept = index.contradiction_answers.get(include_resolved)
    if kept is None:
        kept = _contradictions(graph, index, include_resolved=include_resolved)
        index.remember_contradictions(include_resolved, kept)
    return dict(kept)  # the caller may add keys; the list is never changed


# An item as kept: (sort key, resolved, the output object).
_Item = tuple[tuple[int, str, str], bool, dict[str, Any]]


def _contradictions(
    graph: GraphProjection, index: FamilyIndex, *, include_resolved: bool
) -> dict[str, Any]:
    reading: Reading | None = None
    found: list[_Item] = []
    for key in index.contradiction_keys():
        item: _Item | None = index.contradiction_item(key)
        if item is None:
            if reading is None:
                reading = Reading(graph)
            item = _item(reading, key)
            if item is None:
                continue
            index.remember_contradiction_item(key, item)
        if item[1] and not include_resolved:
            continue
        found.append(item)
    found.sort(key=lambda entry: entry[0])
    contradictions = [entry[2] for entry in found]
    return {"contradictions": contradictions, "count": len(contradictions)}


def _item(reading: Reading, key: RelationKey) -> _Item | None:
    facts = reading.edge(key)
    if facts is None:
        return None
    resolved = facts.view.properties.get("resolved") is True
    detected = _detected_ms(facts)
    node_a = _node(reading, key[0])
    node_b = _node(reading, key[1])
    output = {
        "node_a": node_a,
        "node_b": node_b,
        "description": facts.view.properties.get("description"),
        "detected_date": format_ms(detected),
        "resolved": resolved,
    }
    return (-detected, node_a["id"], node_b["id"]), resolved, output


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
