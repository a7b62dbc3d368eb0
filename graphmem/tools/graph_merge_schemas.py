"""Definitions of graph_merge and graph_unmerge (contract §8.13, §8.11, §9): names,
descriptions, input schemas describing every argument, closed output schemas, and the
annotations the contract gives them (they remove an entity or edges: destructive; repeating
one does something else or is refused: not idempotent)."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations
from graphmem.tools.memory_schemas import tool
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

__all__ = ["GRAPH_MERGE", "GRAPH_UNMERGE"]

SPLITS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

_COUNT: Schema = {"type": "integer", "minimum": 0}
_BOOLEAN: Schema = {"type": "boolean"}
_WARNINGS = array(string(), "Adjustments made (aliases or property keys dropped)")
_PROPERTIES: Schema = {
    "type": "object",
    "description": "Properties of the new entity (subtype, source_file, aliases and confidence "
    "set those attributes)",
}

MERGE_OUTPUT = root(
    closed_copy(
        obj(
            {
                "source": obj(
                    {
                        "id": string("The source's id before the merge"),
                        "name": string(),
                        "deleted": _BOOLEAN,
                    },
                    ["id", "name", "deleted"],
                ),
                "target": obj({"id": string(), "name": string()}, ["id", "name"]),
                "edges_added": _COUNT,
                "edges_consolidated": _COUNT,
                "self_loops_dropped": _COUNT,
                "properties_adopted": array(string(), "Source property keys the target lacked"),
                "dry_run": _BOOLEAN,
                "audit_logged": _BOOLEAN,
                "warnings": _WARNINGS,
            },
            [
                "source",
                "target",
                "edges_added",
                "edges_consolidated",
                "self_loops_dropped",
                "properties_adopted",
                "dry_run",
                "audit_logged",
            ],
        )
    )
)
UNMERGE_OUTPUT = root(
    closed_copy(
        obj(
            {
                "original": obj(
                    {
                        "id": string(),
                        "name": string(),
                        "remaining_edges": {**_COUNT, "description": "Edges it kept"},
                    },
                    ["id", "name", "remaining_edges"],
                ),
                "new_entity": obj(
                    {
                        "id": string(),
                        "name": string(),
                        "type": string(),
                        "moved_edges": {**_COUNT, "description": "Edges moved onto it"},
                    },
                    ["id", "name", "type", "moved_edges"],
                ),
                "audit_logged": _BOOLEAN,
                "warnings": _WARNINGS,
            },
            ["original", "new_entity", "audit_logged"],
        )
    )
)

GRAPH_MERGE = tool(
    "graph_merge",
    "Merge Entities",
    "Fold a duplicate (source) into the entity it duplicates (target): edges between the two "
    "are dropped, the source's other edges move to the target (an edge the target already has "
    "keeps the higher weight), the target adopts the source's name as an alias and the "
    "property keys it lacks, and the source is deleted. dry_run reports the exact counts "
    "without writing. Recorded in <graph home>/logs/merge-audit.jsonl and the history.",
    obj(
        {
            "source_id": string("The duplicate to fold in and delete: an id, name or alias"),
            "target_id": string("The entity that absorbs it: an id, name or alias"),
            "reason": string("Why they are one entity; kept in the audit file and the log"),
            "dry_run": {**_BOOLEAN, "description": "Only report what would happen (default false)"},
        },
        ["source_id", "target_id", "reason"],
    ),
    MERGE_OUTPUT,
    SPLITS,
)

_EDGE_TO_MOVE = obj(
    {
        "other_entity_id": string("The edge's other end: an id, name or alias"),
        "relation_type": string("The edge's relation type (as stored, or its UPPER_SNAKE form)"),
        "direction": {
            "enum": ["in", "out"],
            "description": "out: entity -[type]-> other; in: other -[type]-> entity",
        },
    },
    ["other_entity_id", "relation_type", "direction"],
)

GRAPH_UNMERGE = tool(
    "graph_unmerge",
    "Split Entity",
    "Split a wrongly merged entity: create new_entity_name and move the listed edges onto it "
    "with every attribute kept (weight, validity, times, provenance, evidence). An edge that "
    "is not there refuses the whole call. The name may be one the entity holds as an alias "
    "(as a merge leaves it): the alias goes back. Recorded in <graph home>/logs/"
    "merge-audit.jsonl and the history.",
    obj(
        {
            "entity_id": string("The entity to split: an id, name or alias"),
            "new_entity_name": string("Name of the new entity (no existing entity may have it)"),
            "new_entity_type": string("Type of the new entity: Person, Project, Concept ..."),
            "edges_to_move": array(_EDGE_TO_MOVE, "The edges to move (may be empty)"),
            "reason": string("Why; kept in the audit file and the log"),
            "properties": _PROPERTIES,
        },
        ["entity_id", "new_entity_name", "new_entity_type", "edges_to_move", "reason"],
    ),
    UNMERGE_OUTPUT,
    SPLITS,
)
