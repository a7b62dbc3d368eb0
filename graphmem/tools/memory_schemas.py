"""The official memory server's nine tool definitions: names, titles, descriptions, annotations
and schemas exactly as `@modelcontextprotocol/server-memory` publishes them (the recording in
tests/fixtures/official-memory-wire-fixture.json holds them to it), with the main-branch
changes we follow, the optional paging inputs of read_graph and search_nodes, and the optional
`as_of` of the three read tools (README, "Deliberate differences")."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations, ToolDefinition, ToolExecution
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

ENTITY = obj(
    {
        "name": string("The name of the entity"),
        "entityType": string("The type of the entity"),
        "observations": array(
            string(), "An array of observation contents associated with the entity"
        ),
    },
    ["name", "entityType", "observations"],
)
RELATION = obj(
    {
        "from": string("The name of the entity where the relation starts"),
        "to": string("The name of the entity where the relation ends"),
        "relationType": string("The type of the relation"),
    },
    ["from", "to", "relationType"],
)
# As-of reads (extension): optional, like paging, so without it the answer is the official one.
AS_OF: Schema = {
    "type": ["integer", "string"],
    "minimum": 0,
    "description": "Answer as the graph was at this point of its history: a log position "
    "(0 = before the first write) or an ISO-8601 time (e.g. 2026-03-01T12:00:00Z; without a "
    "zone, UTC; a date alone, the start of that day); omit for the graph as it is now",
}
AS_OF_OUTPUT = obj(
    {"position": {"type": "integer"}, "time": {"type": ["string", "null"]}},
    ["position", "time"],
)
GRAPH_OUTPUT = root(
    closed_copy(
        obj(
            {
                "entities": array(ENTITY),
                "relations": array(RELATION),
                # Only in an as-of answer: the log position read and its event's time.
                "asOf": AS_OF_OUTPUT,
            },
            ["entities", "relations"],
        )
    )
)
STATUS_OUTPUT = root(
    closed_copy(obj({"success": {"type": "boolean"}, "message": string()}, ["success", "message"]))
)

# Paging (extension, as server-noonien 1.1 has it): optional, so without them the answer is the
# official one, byte for byte.
LIMIT = {
    "type": "integer",
    "minimum": 1,
    "description": "The most entities to return, in name order; omit for all of them",
}
ENTITY_OFFSET = {
    "type": "integer",
    "minimum": 0,
    "description": "How many entities (in name order) to skip before the page; omit for none",
}
MATCH_OFFSET = {
    "type": "integer",
    "minimum": 0,
    "description": "How many matches (in name order) to skip before the page; omit for none",
}
ENTITY_TYPE_FILTER = string("Only entities of this exact type; omit to match every type")

WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
FORBIDDEN_TASKS = ToolExecution(task_support="forbidden")


def tool(  # noqa: PLR0917 - one positional per field of the official table
    name: str,
    title: str,
    description: str,
    input_schema: Schema,
    output_schema: Schema | None,
    annotations: ToolAnnotations,
) -> ToolDefinition:
    """A static tool's definition; with `output_schema` None it declares none."""
    return ToolDefinition(
        name=name,
        title=title,
        description=description,
        input_schema=root(input_schema),
        output_schema=output_schema,
        annotations=annotations,
        execution=FORBIDDEN_TASKS,
    )


CREATE_ENTITIES = tool(
    "create_entities",
    "Create Entities",
    "Create multiple new entities in the knowledge graph",
    obj({"entities": array(ENTITY)}, ["entities"]),
    root(
        closed_copy(
            obj(
                {
                    "entities": array(ENTITY),
                    # Main branch: names that already existed and were left as they are.
                    "skipped": array(string()),
                },
                ["entities"],
            )
        )
    ),
    WRITE,
)
CREATE_RELATIONS = tool(
    "create_relations",
    "Create Relations",
    "Create multiple new relations between entities in the knowledge graph. "
    "Relations should be in active voice",
    obj({"relations": array(RELATION)}, ["relations"]),
    root(closed_copy(obj({"relations": array(RELATION)}, ["relations"]))),
    WRITE,
)
ADD_OBSERVATIONS = tool(
    "add_observations",
    "Add Observations",
    "Add new observations to existing entities in the knowledge graph",
    obj(
        {
            "observations": array(
                obj(
                    {
                        "entityName": string("The name of the entity to add the observations to"),
                        "contents": array(string(), "An array of observation contents to add"),
                    },
                    ["entityName", "contents"],
                )
            )
        },
        ["observations"],
    ),
    root(
        closed_copy(
            obj(
                {
                    "results": array(
                        obj(
                            {"entityName": string(), "addedObservations": array(string())},
                            ["entityName", "addedObservations"],
                        )
                    )
                },
                ["results"],
            )
        )
    ),
    WRITE,
)
DELETE_ENTITIES = tool(
    "delete_entities",
    "Delete Entities",
    "Delete multiple entities and their associated relations from the knowledge graph",
    obj({"entityNames": array(string(), "An array of entity names to delete")}, ["entityNames"]),
    STATUS_OUTPUT,
    DELETE,
)
DELETE_OBSERVATIONS = tool(
    "delete_observations",
    "Delete Observations",
    "Delete specific observations from entities in the knowledge graph",
    obj(
        {
            "deletions": array(
                obj(
                    {
                        "entityName": string("The name of the entity containing the observations"),
                        "observations": array(string(), "An array of observations to delete"),
                    },
                    ["entityName", "observations"],
                )
            )
        },
        ["deletions"],
    ),
    STATUS_OUTPUT,
    DELETE,
)
DELETE_RELATIONS = tool(
    "delete_relations",
    "Delete Relations",
    "Delete multiple relations from the knowledge graph",
    obj({"relations": array(RELATION, "An array of relations to delete")}, ["relations"]),
    STATUS_OUTPUT,
    DELETE,
)
READ_GRAPH = tool(
    "read_graph",
    "Read Graph",
    "Read the entire knowledge graph",
    obj({"limit": LIMIT, "offset": ENTITY_OFFSET, "as_of": AS_OF}),
    GRAPH_OUTPUT,
    READ,
)
SEARCH_NODES = tool(
    "search_nodes",
    "Search Nodes",
    "Search for nodes in the knowledge graph based on a query",
    obj(
        {
            "query": string(
                "The search query to match against entity names, types, and observation content",
                maxLength=2048,
            ),
            "entityType": ENTITY_TYPE_FILTER,
            "limit": LIMIT,
            "offset": MATCH_OFFSET,
            "as_of": AS_OF,
        },
        ["query"],
    ),
    GRAPH_OUTPUT,
    READ,
)
OPEN_NODES = tool(
    "open_nodes",
    "Open Nodes",
    "Open specific nodes in the knowledge graph by their names",
    obj(
        {"names": array(string(), "An array of entity names to retrieve"), "as_of": AS_OF},
        ["names"],
    ),
    GRAPH_OUTPUT,
    READ,
)
