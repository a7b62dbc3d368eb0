"""graph_build_context's graph parts (contract §8.21): recent additions and top hubs.

- `recent_additions`: entities whose first_seen is within `recent_days` of now, newest first
  (then name); `entity_count` counts them all, `entities` lists the first `max_recent`;
  `edge_count` counts visible edges whose ingested_at is in the window.
- `top_hubs`: entities with at least 3 current edges of shown weight above 0.3, by that
  degree (descending), then id; at most `hub_count`.

Both rest on orderings the FamilyIndex keeps current with every event (first_seen,
ingested_at, hub degree), so a call costs a bisection and a short walk, after a write too.
"""

from __future__ import annotations

from typing import Any

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._entries import HUB_DEGREE, HUB_MIN_WEIGHT
from projections.graph_family._values import Reading
from projections.graph_time import DAY_MS, format_ms

__all__ = ["HUB_DEGREE", "HUB_MIN_WEIGHT", "recent_additions", "top_hubs"]


def recent_additions(
    graph: GraphProjection, *, now_ms: int, days: int, max_recent: int
) -> dict[str, Any]:
    index = family_index(graph)
    since = now_ms - days * DAY_MS
    count, newest_first = index.first_seen_between(since, now_ms)
    # Newest first, ties by name: each run of equal times is put back in name order.
    runs: list[list[tuple[int, str]]] = []
    for taken, item in enumerate(newest_first):
        if runs and runs[-1][0][0] == item[0]:
            runs[-1].append(item)
        elif taken >= max_recent:
            break
        else:
            runs.append([item])
    newest = [item for run in runs for item in reversed(run)]
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
    edge_count = index.ingested_between(since, now_ms)
    return {
        "days": days,
        "entity_count": count,
        "edge_count": edge_count,
        "entities": shown,
    }


def top_hubs(graph: GraphProjection, *, hub_count: int) -> list[dict[str, Any]]:
    index = family_index(graph)
    reading = Reading(graph)
    # Ids order ties, and an id need not sort like its name: every entity of the last degree
    # taken is considered before cutting.
    chosen: list[tuple[int, str, str]] = []
    for degree, name in index.hubs():
        if len(chosen) >= hub_count and -degree != chosen[-1][0]:
            break
        chosen.append((-degree, reading.entity_id(name), name))
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
