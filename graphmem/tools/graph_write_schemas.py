"""Definitions of the graph family's writing tools (contract §8.2-8.4, 8.15, 8.17, §9): names,
descriptions, input schemas that describe every argument, and annotations that tell the truth
(repeating relate, boost, weaken or audit changes weights or appends a line again: not
idempotent; delete removes, and repeating it changes nothing more)."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations, ToolDefinition
from graphmem.tools.memory_schemas import tool
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

__all__ = [
    "AUDIT_EVENTS",
    "GRAPH_AUDIT",
    "GRAPH_BOOST",
    "GRAPH_DELETE",
    "GRAPH_RELATE",
    "GRAPH_WEAKEN",
]

ADDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

AUDIT_EVENTS = (
    "run_start",
    "run_end",
    "transcript_start",
    "transcript_end",
    "transcript_skipped",
    "entity_created",
    "entity_resolved",
    "edge_created",
    "edge_modified",
    "merge_flagged",
    "contradiction_found",
    "ingest_start",
    "ingest_end",
    "decay_applied",
    "format_warning",
    "error",
)

_UNIT: Schema = {"type": "number", "minimum": 0, "maximum": 1}
_NUMBER: Schema = {"type": "number"}
_INTEGER: Schema = {"type": "integer", "minimum": 0}
_BOOLEAN: Schema = {"type": "boolean"}
_OPTIONAL_TIME: Schema = {"type": ["string", "null"], "description": "ISO 8601 UTC; null: not set"}
_WARNINGS = array(string(), "Adjustments made (clamped weights, kept types, dropped keys)")

# --- outputs (closed: every key an answer may carry is listed) ---

_EDGE_KEY: dict[str, Schema] = {
    "from": string("Source entity id"),
    "to": string("Target entity id"),
    "type": string("Relation type"),
}
_EDGE_OUT = obj(
    {**_EDGE_KEY, "weight": _NUMBER, "valid_at": _OPTIONAL_TIME, "invalid_at": _OPTIONAL_TIME},
    ["from", "to", "type", "weight", "valid_at", "invalid_at"],
)
_SUPERSEDED_OUT = obj(
    {**_EDGE_KEY, "invalid_at": string("When it stopped being current")},
    ["from", "to", "type", "invalid_at"],
)
# One schema for both modes: single answers action/edge/created_entities, batch the counts
# and details; both list what they superseded.
RELATE_OUTPUT = root(
    closed_copy(
        obj(
            {
                "action": {"enum": ["created", "strengthened"]},
                "edge": _EDGE_OUT,
                "created_entities": array(string()),
                "entities_created": _INTEGER,
                "entities_merged": _INTEGER,
                "edges_created": _INTEGER,
                "edges_strengthened": _INTEGER,
                "superseded": array(_SUPERSEDED_OUT),
                "details": array(
                    obj(
                        {
                            "entity": string(),
                            "id": string(),
                            "edge": string("<from name>→<TYPE>→<to name>"),
                            **_EDGE_KEY,
                            "action": {"enum": ["created", "merged", "strengthened"]},
                            "weight": _NUMBER,
                        },
                        ["action"],
                    )
                ),
                "warnings": _WARNINGS,
            },
            ["superseded"],
        )
    )
)
ADJUST_OUTPUT = root(
    closed_copy(
        obj(
            {
                "previous_weight": _NUMBER,
                "new_weight": _NUMBER,
                "edge": obj(_EDGE_KEY, ["from", "to", "type"]),
                "pruned": _BOOLEAN,
            },
            ["previous_weight", "new_weight", "edge"],
        )
    )
)
DELETE_OUTPUT = root(
    closed_copy(
        obj(
            {
                "deleted": _BOOLEAN,
                "found": _BOOLEAN,
                "entity_id": string(),
                "entity": obj(
                    {"id": string(), "name": string(), "type": string()}, ["id", "name", "type"]
                ),
                "edges_removed": _INTEGER,
            },
            ["deleted"],
        )
    )
)
AUDIT_OUTPUT = root(
    closed_copy(
        obj(
            {"logged": _BOOLEAN, "event": string(), "timestamp": string()},
            ["logged", "event", "timestamp"],
        )
    )
)
_TIME = string(
    "ISO 8601 time (a date alone is 00:00 UTC; no zone means UTC), e.g. 2025-01-01",
)
_PROPERTIES: Schema = {
    "type": "object",
    "description": "Free-form JSON values; a key set to null is removed; merged into existing",
}
_PROVENANCE: dict[str, Schema] = {
    "source_session": string("Session the fact came from"),
    "source_transcript": string("Transcript file the fact came from"),
    "source_type": string("How it was learned: conversation, ingest, manual, bootstrap ..."),
}
_EDGE_ENDS: dict[str, Schema] = {
    "from_name": string("Source entity: a name, alias or id"),
    "to_name": string("Target entity: a name, alias or id"),
    "relation": string("Relation type (normalised to UPPER_SNAKE, e.g. works on -> WORKS_ON)"),
}

_BATCH_ENTITY = obj(
    {
        "localId": string("Id of this item within the batch, used by relations' from/to"),
        "name": string("Entity name (resolved to an existing entity, else created)"),
        "type": string("Entity type: Person, Project, Preference, Concept, Decision, Fact ..."),
        "properties": {
            **_PROPERTIES,
            "description": "Entity properties; subtype, source_file, aliases and confidence "
            "set those attributes",
        },
        "confidence": {**_UNIT, "description": "Confidence input (max rule); new: default 0.5"},
    },
    ["localId", "name", "type"],
)
_BATCH_RELATION = obj(
    {
        "from": string("A localId of this batch, else an existing entity's name, alias or id"),
        "to": string("A localId of this batch, else an existing entity's name, alias or id"),
        "relation": string("Relation type (normalised to UPPER_SNAKE)"),
        "weight": {**_UNIT, "description": "Strength of belief, default 0.5"},
        "properties": _PROPERTIES,
        "evidence": string("Why the edge exists"),
        "valid_at": {**_TIME, "description": "When the fact became true; closes older ones"},
    },
    ["from", "to", "relation"],
)

GRAPH_RELATE = tool(
    "graph_relate",
    "Relate Entities",
    "Create or strengthen relationships, creating missing entities. Single mode: from_name, "
    "from_type, to_name, to_type, relation (+ weight, properties, evidence, valid_at, "
    "source_*). Batch mode: `batch` with entities [{localId, name, type}] and relations "
    "[{from, to, relation}], all or nothing. Re-asserting an edge keeps the higher weight or "
    "adds a small boost; valid_at closes the source's other current edges of that type.",
    obj(
        {
            **_EDGE_ENDS,
            "from_type": string("Type of the source if it is created"),
            "to_type": string("Type of the target if it is created"),
            "weight": {**_UNIT, "description": "Strength of belief, default 0.5 (clamped)"},
            "properties": _PROPERTIES,
            "evidence": string("Why the edge exists"),
            "valid_at": {**_TIME, "description": "When the fact became true (supersedes)"},
            **_PROVENANCE,
            "batch": obj(
                {
                    "entities": array(_BATCH_ENTITY, "Entities to resolve or create"),
                    "relations": array(_BATCH_RELATION, "Relations to create or strengthen"),
                    **_PROVENANCE,
                },
                description="Batch mode (instead of the single-mode fields)",
            ),
        }
    ),
    RELATE_OUTPUT,
    ADDS,
)


def _adjust(name: str, title: str, description: str, amount: str) -> ToolDefinition:
    return tool(
        name,
        title,
        description,
        obj(
            {
                **_EDGE_ENDS,
                "amount": {**_UNIT, "description": amount},
                "reason": string("Why; kept in the log (read_history shows it)"),
            },
            ["from_name", "to_name", "relation"],
        ),
        ADJUST_OUTPUT,
        ADDS,
    )


GRAPH_BOOST = _adjust(
    "graph_boost",
    "Boost Edge",
    "Increase an existing edge's weight (confirmation): weight = min(1, weight + amount).",
    "How much to add, default weights.boost_on_confirm (0.15)",
)
GRAPH_WEAKEN = _adjust(
    "graph_weaken",
    "Weaken Edge",
    "Decrease an existing edge's weight (correction): weight = max(0, weight - amount); "
    "`pruned` says whether the next prune removes it.",
    "How much to subtract, default weights.weaken_on_correct (0.3)",
)
GRAPH_DELETE = tool(
    "graph_delete",
    "Delete Entity",
    "Delete an entity and all its edges. Unknown: {deleted: false, found: false}.",
    obj(
        {
            "entity_id": string("The entity: an id, name or alias"),
            "id": string("Synonym of entity_id"),
            "reason": string("Why; kept in the log"),
        }
    ),
    DELETE_OUTPUT,
    REMOVES,
)
GRAPH_AUDIT = tool(
    "graph_audit",
    "Audit Event",
    "Append an event to the audit log (<graph home>/logs/dream-audit.jsonl) and graphmem's "
    "log; the server sets `event` and `timestamp`.",
    obj(
        {
            "event": {"type": "string", "enum": list(AUDIT_EVENTS), "description": "Event kind"},
            "data": {"type": "object", "description": "Event fields (at most 64 KB as JSON)"},
        },
        ["event"],
    ),
    AUDIT_OUTPUT,
    ADDS,
)
