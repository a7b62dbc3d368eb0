"""Definitions of graph_decay and graph_prune (contract §8.9, §8.10, §9): names, descriptions,
input schemas and annotations (both remove or lower values, and repeating one at the same point
changes nothing more: destructive and idempotent)."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations
from graphmem.tools.memory_schemas import tool
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

__all__ = ["GRAPH_DECAY", "GRAPH_PRUNE"]

REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
_UNIT: Schema = {"type": "number", "minimum": 0, "maximum": 1}
_NUMBER: Schema = {"type": "number"}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_BOOLEAN: Schema = {"type": "boolean"}
_EDGE_KEY: dict[str, Schema] = {
    "from": string("Source entity id"),
    "to": string("Target entity id"),
    "type": string("Relation type"),
}

DECAY_OUTPUT = root(
    closed_copy(
        obj(
            {
                "nodes_decayed": _COUNT,
                "edges_decayed": _COUNT,
                "nodes_flagged_for_pruning": _COUNT,
                "edges_below_threshold": _COUNT,
                "dry_run": _BOOLEAN,
                "at": string("The run's time (ISO 8601 UTC)"),
                "details": array(
                    obj(
                        {
                            "id": string(),
                            "type": string(),
                            "name": string(),
                            "old_confidence": _NUMBER,
                            "new_confidence": _NUMBER,
                        },
                        ["id", "type", "name", "old_confidence", "new_confidence"],
                    ),
                    "At most 100, largest drop first, then name",
                ),
                "edge_details": array(
                    obj(
                        {**_EDGE_KEY, "old_weight": _NUMBER, "new_weight": _NUMBER},
                        ["from", "to", "type", "old_weight", "new_weight"],
                    ),
                    "At most 100, largest drop first",
                ),
            },
            [
                "nodes_decayed",
                "edges_decayed",
                "nodes_flagged_for_pruning",
                "edges_below_threshold",
                "dry_run",
                "at",
                "details",
                "edge_details",
            ],
        )
    )
)

GRAPH_DECAY = tool(
    "graph_decay",
    "Apply Decay",
    "Let unconfirmed knowledge fade: every entity's confidence and edge's weight decays from "
    "its last real touch at its type's daily rate (floor 0.01; subtype `rule` exempt). One "
    "run is one event; running again the same day changes nothing. `dry_run` previews, and "
    "with `at` previews a future time. Reports counts, flags for pruning and the largest drops.",
    obj(
        {
            "dry_run": {**_BOOLEAN, "description": "Preview only: nothing is written"},
            "at": string(
                "Only with dry_run: preview decay as it would be at this ISO 8601 time "
                "(not before now)"
            ),
        }
    ),
    DECAY_OUTPUT,
    REMOVES,
)

_PRUNED_EDGE = obj({**_EDGE_KEY, "weight": _NUMBER}, ["from", "to", "type", "weight"])
PRUNE_OUTPUT = root(
    closed_copy(
        obj(
            {
                "mode": {"enum": ["preview", "executed"]},
                "nodes_to_prune": array(
                    obj(
                        {
                            "id": string(),
                            "type": string(),
                            "name": string(),
                            "confidence": _NUMBER,
                            "last_seen": string(),
                            "edge_count": _COUNT,
                            "reason": {"enum": ["low_confidence", "orphan"]},
                        },
                        ["id", "type", "name", "confidence", "last_seen", "edge_count", "reason"],
                    )
                ),
                "edges_to_prune": array(_PRUNED_EDGE),
                "node_count": _COUNT,
                "edge_count": _COUNT,
                "nodes_pruned": _COUNT,
                "edges_pruned": _COUNT,
                "details": array(
                    obj(
                        {
                            "action": {"enum": ["deleted_edge", "deleted_node"]},
                            **_EDGE_KEY,
                            "id": string(),
                        },
                        ["action"],
                    )
                ),
            },
            ["mode"],
        )
    )
)

GRAPH_PRUNE = tool(
    "graph_prune",
    "Prune Graph",
    "Remove what decay left below the thresholds: edges under edge_threshold, entities under "
    "node_threshold with no edge at or above it, and (include_orphans) entities without edges "
    "last seen more than max_age_days ago; rule entities and their edges never. `preview` "
    "(default) lists; `execute` removes exactly what a preview now would list, in one step. "
    "Removed elements stay in the history (as_of, read_history); re-creating brings them back.",
    obj(
        {
            "mode": {"enum": ["preview", "execute"], "description": "Default preview"},
            "node_threshold": {**_UNIT, "description": "Default decay.prune_node_threshold"},
            "edge_threshold": {**_UNIT, "description": "Default decay.prune_edge_threshold"},
            "include_orphans": {**_BOOLEAN, "description": "Default true"},
            "max_age_days": {
                "type": "number",
                "minimum": 0,
                "description": "Orphans last seen more than this many days ago; default "
                "decay.prune_orphan_days (30)",
            },
        }
    ),
    PRUNE_OUTPUT,
    REMOVES,
)
