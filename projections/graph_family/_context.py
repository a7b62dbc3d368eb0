"""graph_build_context's graph parts (contract §8.21): recent additions and top hubs.

- `recent_additions`: entities whose first_seen is within `recent_days` of now, newest first
  (then name); `entity_count` counts them all, `entities` lists the first `max_recent`;
  `edge_count` counts visible edges whose ingested_at is in the window.
- `top_hubs`: entities with at least 3 current edges of shown weight above 0.3, by that
  degree (descending), then id; at most `hub_count`.

Both rest on orderings of the whole graph (first_seen, ingested_at, hub degree) that the
FamilyIndex keeps until the graph next changes, so a call costs a bisection and a short walk.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Any

from eventstore.hlc import ms_of
from projections.graph import GraphProjection
from projections.graph_family._index import FamilyIndex, family_index
from projections.graph_family._values import Reading
from projections.graph_time import DAY_MS, format_ms

__all__ = ["HUB_MIN_DEGREE", "HUB_MIN_WEIGHT", "recent_additions", "top_hubs"]

HUB_MIN_DEGREE = 3
HUB_MIN_WEIGHT = 0.3


def _by_first_seen(index: FamilyIndex) -> list[tuple[int, str]]:
    """(first_seen, name) of every alive entity, ascending."""
    return sorted((ms_of(entry.created[0]), entry.name) for entry in index.entries())


def _ingested(index: FamilyIndex) -> list[int]:
    return sorted(entry.ingested_at for entry in index.relation_entries().values())


def recent_additions(
    graph: GraphProjection, *, now_ms: int, days: int, max_recent: int
) -> dict[str, Any]:
    index = family_index(graph)
    since = now_ms - days * DAY_MS
    entities: list[tuple[int, str]] = index.derived(("first_seen",), lambda: _by_first_seen(index))
    ingested: list[int] = index.derived(("ingested_at",), lambda: _ingested(index))
    start = bisect_left(entities, (since, ""))
    end = bisect_right(entities, (now_ms, "\U0010ffff"))
    window = entities[start:end]
    # Newest first, ties by name: runs of equal times taken from the end, each in name order.
    newest: list[tuple[int, str]] = []
    stop = len(window)
    while stop > 0 and len(newest) < max_recent:
        first = stop - 1
        while first > 0 and window[first - 1][0] == window[stop - 1][0]:
            first -= 1
        newest.extend(window[first:stop])
        stop = first
    reading = Reading(graph)
    shown = [
        {
            "id": reading.entity_id(name),
            "name": name,
            "type": reading.entity_type(name),
            "first_seen": format_ms(first_seen),
            "confidence": reading.confidence(name),
        }
        for first_seen, name in newest[:max_recent]
    ]
    edge_count = bisect_right(ingested, now_ms) - bisect_left(ingested, since)
    return {
        "days": days,
        "entity_count": len(window),
        "edge_count": edge_count,
        "entities": shown,
    }


def _hub_degrees(index: FamilyIndex) -> list[tuple[int, str]]:
    degree: Counter[str] = Counter()
    for (source, target, _), entry in index.relation_entries().items():
        if entry.current and entry.shown > HUB_MIN_WEIGHT:
            degree[source] += 1
            if target != source:
                degree[target] += 1
    return sorted(((-d, name) for name, d in degree.items() if d >= HUB_MIN_DEGREE))


def top_hubs(graph: GraphProjection, *, hub_count: int) -> list[dict[str, Any]]:
    index = family_index(graph)
    ranked: list[tuple[int, str]] = index.derived(("hubs",), lambda: _hub_degrees(index))
    reading = Reading(graph)
    # Ids order ties; an id differs from the slug only for names sharing one, so every entity
    # of the last degree taken is considered before cutting.
    chosen: list[tuple[int, str, str]] = []
    for negated, name in ranked:
        if len(chosen) >= hub_count and negated != chosen[-1][0]:
            break
        chosen.append((negated, reading.entity_id(name), name))
    chosen.sort()
    return [
        {
            "id": entity_id,
            "name": name,
            "type": reading.entity_type(name),
            "degree": -negated,
            "confidence": reading.confidence(name),
        }
        for negated, entity_id, name in chosen[:hub_count]
    ]
