"""Definitions of the memory family's extension tools (edit, merge, conflicts), beside the
official nine: argument shapes as server-noonien 1.1 publishes them."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations
from graphmem.tools.memory_schemas import AS_OF, AS_OF_OUTPUT, LIMIT, READ, RELATION, tool
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

# Edits replace what was there: destructive, and repeating one is not a no-op in general (the
# old element is gone, so the second call is refused).
EDIT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

BOOLEAN: Schema = {"type": "boolean"}
COUNT: Schema = {"type": "integer", "minimum": 0}


def _results(item: Schema) -> Schema:
    return root(closed_copy(obj({"results": array(item)}, ["results"])))


UPDATE_ENTITIES = tool(
    "update_entities",
    "Update Entities",
    "Rename existing entities and/or change their entity type, keeping their observations and "
    "relations (relations are repointed to the new name). Prefer this to delete_entities "
    "followed by create_entities, which loses the observations and relations. Renaming onto a "
    "name that already exists is refused (use merge_entities to combine two entities). The "
    "whole call is applied or, if any item is refused, nothing is.",
    obj(
        {
            "entities": array(
                obj(
                    {
                        "name": string("The current name of the entity"),
                        "newName": string("The new name; omit to keep the name"),
                        "newEntityType": string("The new entity type; omit to keep the type"),
                    },
                    ["name"],
                ),
                "The entities to update",
            )
        },
        ["entities"],
    ),
    _results(
        obj(
            {
                "name": string(),
                "newName": string(),
                "entityType": string(),
                "renamed": BOOLEAN,
                "retyped": BOOLEAN,
                "movedObservations": COUNT,
                "movedRelations": array(RELATION),
            },
            [
                "name",
                "newName",
                "entityType",
                "renamed",
                "retyped",
                "movedObservations",
                "movedRelations",
            ],
        )
    ),
    EDIT,
)

UPDATE_OBSERVATIONS = tool(
    "update_observations",
    "Update Observations",
    "Replace observation contents on existing entities in place. Prefer this to "
    "delete_observations followed by add_observations: one atomic call. Every occurrence of "
    "the old content is removed and the new content is added once (not again if the entity "
    "already has it). An unknown entity or old content is refused, and then nothing changes.",
    obj(
        {
            "updates": array(
                obj(
                    {
                        "entityName": string("The name of the entity holding the observation"),
                        "oldContent": string("The observation content to replace, exactly"),
                        "newContent": string("The content to put in its place"),
                    },
                    ["entityName", "oldContent", "newContent"],
                ),
                "The replacements to make, in order",
            )
        },
        ["updates"],
    ),
    _results(
        obj(
            {
                "entityName": string(),
                "oldContent": string(),
                "newContent": string(),
                "removed": COUNT,
                "added": BOOLEAN,
            },
            ["entityName", "oldContent", "newContent", "removed", "added"],
        )
    ),
    EDIT,
)

UPDATE_RELATIONS = tool(
    "update_relations",
    "Update Relations",
    "Change the type of existing relations and/or repoint their endpoints. Prefer this to "
    "delete_relations followed by create_relations: one atomic call. Omitted fields keep their "
    "value; new endpoints must be existing entities; the result must not duplicate a relation "
    "that already exists. If any item is refused, nothing changes.",
    obj(
        {
            "relations": array(
                obj(
                    {
                        "from": string("The name of the entity where the relation starts"),
                        "to": string("The name of the entity where the relation ends"),
                        "relationType": string("The type of the relation"),
                        "newFrom": string("The new start entity; omit to keep it"),
                        "newTo": string("The new end entity; omit to keep it"),
                        "newRelationType": string("The new relation type; omit to keep it"),
                    },
                    ["from", "to", "relationType"],
                ),
                "The relations to change, each named by its current from, to and relationType",
            )
        },
        ["relations"],
    ),
    _results(
        obj(
            {"before": RELATION, "after": RELATION, "changed": BOOLEAN},
            ["before", "after", "changed"],
        )
    ),
    EDIT,
)

MERGE_ENTITIES = tool(
    "merge_entities",
    "Merge Entities",
    "Merge an entity into another: the target gets the observations it lacks and the merged "
    "entity's relations (repointed; duplicates and links between the two are dropped), then "
    "the merged entity is deleted. Prefer this to deleting one entity and re-adding its "
    "observations and relations to the other, and use it to combine duplicates (including one "
    "a rename refused or a concurrent rename left behind). Merging an entity into itself or a "
    "missing entity is refused, and then nothing changes.",
    obj(
        {
            "merges": array(
                obj(
                    {
                        "from": string("The entity to merge away (it is deleted)"),
                        "into": string("The entity that receives its observations and relations"),
                    },
                    ["from", "into"],
                ),
                "The merges to make, in order",
            )
        },
        ["merges"],
    ),
    _results(
        obj(
            {
                "from": string(),
                "into": string(),
                "movedObservations": array(string()),
                "movedRelations": array(RELATION),
                "droppedRelations": array(RELATION),
            },
            ["from", "into", "movedObservations", "movedRelations", "droppedRelations"],
        )
    ),
    EDIT,
)

_WRITE = obj(
    {
        "node": string("The node (origin) that wrote it"),
        "time": string("When, from the write's hybrid clock (UTC, ISO 8601)"),
        "hlc": {"type": "integer"},
        "seq": {"type": "integer"},
        "event": string("What the write was (EntityCreated, ObservationDeleted, ...)"),
    },
    ["node", "time", "hlc", "seq", "event"],
)

_CONFLICTS_OUTPUT = closed_copy(
    obj(
        {
            "conflicts": array(
                obj(
                    {
                        "element": {"enum": ["entity", "observation", "relation"]},
                        "entityName": string(),
                        "observation": string(),
                        "relation": RELATION,
                        "writes": array(_WRITE),
                        "kept": _WRITE,
                        "current": _WRITE,
                        "why": string("Why the kept write is current: last-writer-wins"),
                    },
                    ["element", "writes", "kept"],
                )
            ),
            "counts": obj({"replica_writes": COUNT, "superseded": COUNT, "contradictions": COUNT}),
        },
        ["conflicts"],
    )
)
# The one conflict view's other sections (view: "all"): the graph family's item shapes, each
# with `kind`, `current` and `why` (see projections.graph_family's conflict view).
_VIEW_ITEM: Schema = {
    "type": "object",
    "properties": {"kind": {"enum": ["superseded", "contradiction"]}, "why": string()},
    "required": ["kind", "current", "why"],
}
_CONFLICTS_OUTPUT["properties"] |= {
    "superseded": array(_VIEW_ITEM),
    "contradictions": array(_VIEW_ITEM),
    "asOf": AS_OF_OUTPUT,
}

READ_CONFLICTS = tool(
    "read_conflicts",
    "Read Conflicts",
    "Call this when a write may have been superseded by another machine, or before trusting an "
    "edit: it lists the elements (entities, observations, relations) more than one node has "
    "written, with each node's latest write and time, and which write the graph kept "
    "(last-writer-wins), most recent first, so the resolution is visible instead of silent. "
    'With view "all", the answer is the one conflict view: beside those, the edges superseded '
    "by a newer valid_at (with the edge that superseded them) and the CONTRADICTS edges, each "
    "item saying which side is current and why.",
    obj(
        {
            "entityName": string(
                "Only conflicts about this entity, its observations or its relations"
            ),
            "limit": {**LIMIT, "description": "The most conflicts to return; omit for all"},
            "view": {
                "type": "string",
                "enum": ["replicas", "all"],
                "default": "replicas",
                "description": "replicas: the list of replica conflicts (the answer's text is "
                "that list); all: an object with conflicts, superseded, contradictions and "
                "counts (each list newest first, at most limit long, default 50; counts are "
                "complete)",
            },
            "as_of": AS_OF,
        }
    ),
    root(_CONFLICTS_OUTPUT),
    READ,
)
