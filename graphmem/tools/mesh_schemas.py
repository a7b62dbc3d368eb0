"""Definitions of the mesh family's static tools, as MemoryMesh has them: names, titles,
descriptions, annotations and input schemas.

The schemas advertise the seed's argument shapes; where upstream MemoryMesh takes another
shape (add_metadata, delete_metadata, update_edges' newWeight and repointing fields) the schema
also admits it, so a client that validates arguments before sending never refuses either. No
output schema is declared, as upstream: the answer is MemoryMesh's `{data, actionTaken,
timestamp}` envelope, whose data differs per tool.
"""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations, ToolDefinition
from graphmem.tools.memory_schemas import AS_OF, DELETE, READ, WRITE, tool
from graphmem.tools.schema import Schema, array, obj, string

__all__ = [
    "ADD_EDGES",
    "ADD_METADATA",
    "ADD_NODES",
    "DELETE_EDGES",
    "DELETE_METADATA",
    "DELETE_NODES",
    "OPEN_NODES",
    "READ_GRAPH",
    "SEARCH_NODES",
    "UPDATE_EDGES",
    "UPDATE_NODES",
]

# update_nodes replaces a whole metadata list and a repointed edge leaves its old key:
# destructive. Repeating a call is not a no-op either (each weight update averages again).
UPDATE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def _weight(description: str) -> Schema:
    return {"type": "number", "minimum": 0, "maximum": 1, "description": description}


METADATA_ENTRIES = array(
    string(), 'Metadata entries, each a "Key: Value" string (e.g. "Role: Wizard")'
)
NODE = obj(
    {
        "name": string("The unique name of the node"),
        "nodeType": string("The type of the node (e.g. person, project, npc)"),
        "metadata": METADATA_ENTRIES,
    },
    ["name", "nodeType", "metadata"],
)
NODE_UPDATE = obj(
    {
        "name": string("The name of the node to update"),
        "nodeType": string("The new type; omit to keep the type"),
        "metadata": array(
            string(),
            "The new metadata, replacing the whole list; omit to keep the metadata "
            "(use add_metadata / delete_metadata to change single entries)",
        ),
    },
    ["name"],
)
EDGE_KEY_PROPERTIES: dict[str, Schema] = {
    "from": string("The name of the node where the edge starts"),
    "to": string("The name of the node where the edge ends"),
    "edgeType": string("The type of the edge (e.g. knows, located_in), in active voice"),
}
EDGE = obj(
    {
        **EDGE_KEY_PROPERTIES,
        "weight": _weight("Confidence or strength of the edge, 0 to 1; omit for 1"),
    },
    ["from", "to", "edgeType"],
)
EDGE_UPDATE = obj(
    {
        **EDGE_KEY_PROPERTIES,
        "weight": _weight(
            "New evidence for the edge, 0 to 1: the stored weight becomes the average of the "
            "current weight and this one, (current + weight) / 2"
        ),
        "newWeight": _weight("A weight, 0 to 1, replacing the current one outright"),
        "newFrom": string("Repoint the edge to start at this existing node"),
        "newTo": string("Repoint the edge to end at this existing node"),
        "newEdgeType": string("Change the edge's type to this one"),
    },
    ["from", "to", "edgeType"],
)
EDGE_KEY = obj(dict(EDGE_KEY_PROPERTIES), ["from", "to", "edgeType"])
NODE_NAME = string("The name of the node")
# Upstream MemoryMesh's add_metadata item: {nodeName, contents}.
UPSTREAM_METADATA_ITEM = obj(
    {"nodeName": NODE_NAME, "contents": METADATA_ENTRIES}, ["nodeName", "contents"]
)
UPSTREAM_DELETION = obj(
    {"nodeName": NODE_NAME, "metadata": METADATA_ENTRIES}, ["nodeName", "metadata"]
)


def _tool(
    name: str,
    title: str,
    description: str,
    input_schema: Schema,
    annotations: ToolAnnotations,
) -> ToolDefinition:
    return tool(name, title, description, input_schema, None, annotations)


ADD_NODES = _tool(
    "add_nodes",
    "Add Nodes",
    "Add new nodes to the knowledge graph. Each node has a unique name, a type and metadata "
    'entries ("Key: Value" strings). A name that already exists is refused, and then no node '
    "of the call is added.",
    obj({"nodes": array(NODE, "The nodes to add")}, ["nodes"]),
    WRITE,
)
UPDATE_NODES = _tool(
    "update_nodes",
    "Update Nodes",
    "Update existing nodes: change a node's type and/or replace its whole metadata list. "
    "Every node must exist; otherwise nothing of the call is changed.",
    obj({"nodes": array(NODE_UPDATE, "The nodes to update")}, ["nodes"]),
    UPDATE,
)
DELETE_NODES = _tool(
    "delete_nodes",
    "Delete Nodes",
    "Delete nodes and every edge connected to them. Names that do not exist are ignored.",
    obj({"nodeNames": array(string(), "The names of the nodes to delete")}, ["nodeNames"]),
    DELETE,
)
ADD_EDGES = _tool(
    "add_edges",
    "Add Edges",
    "Add directed edges between existing nodes, each with an optional weight from 0 to 1 "
    "(confidence; 1 when omitted). An edge is identified by (from, to, edgeType): one that "
    "already exists, appears twice in the call, or names a missing node is refused, and then "
    "no edge of the call is added.",
    obj({"edges": array(EDGE, "The edges to add")}, ["edges"]),
    WRITE,
)
UPDATE_EDGES = _tool(
    "update_edges",
    "Update Edges",
    "Update existing edges. `weight` is new evidence averaged with the current weight, "
    "(current + weight) / 2; `newWeight` replaces the weight; newFrom, newTo and newEdgeType "
    "repoint or retype the edge. Every edge must exist; otherwise nothing is changed.",
    obj({"edges": array(EDGE_UPDATE, "The edges to update")}, ["edges"]),
    UPDATE,
)
DELETE_EDGES = _tool(
    "delete_edges",
    "Delete Edges",
    "Delete edges by exact (from, to, edgeType). Edges that do not exist are ignored.",
    obj({"edges": array(EDGE_KEY, "The edges to delete")}, ["edges"]),
    DELETE,
)
ADD_METADATA = _tool(
    "add_metadata",
    "Add Metadata",
    'Add metadata entries ("Key: Value" strings) to an existing node; entries it already has '
    'are not added again. Give {"nodeName": ..., "metadata": [...]}; the form '
    '{"metadata": [{"nodeName": ..., "contents": [...]}, ...]} adds to several nodes at once.',
    obj(
        {
            "nodeName": string("The name of the node to add the entries to"),
            "metadata": {
                "type": "array",
                "description": "The entries to add (strings), or one {nodeName, contents} "
                "object per node when nodeName is omitted",
                "items": {"anyOf": [string(), UPSTREAM_METADATA_ITEM]},
            },
        },
        ["metadata"],
    ),
    WRITE,
)
DELETE_METADATA = _tool(
    "delete_metadata",
    "Delete Metadata",
    "Delete metadata entries (exact strings) from an existing node; entries it does not have "
    'are ignored. Give {"nodeName": ..., "metadata": [...]}; the form '
    '{"deletions": [{"nodeName": ..., "metadata": [...]}, ...]} deletes from several nodes.',
    obj(
        {
            "nodeName": string("The name of the node to delete the entries from"),
            "metadata": array(string(), "The entries to delete"),
            "deletions": array(
                UPSTREAM_DELETION, "Entries to delete per node (instead of nodeName/metadata)"
            ),
        }
    ),
    DELETE,
)
READ_GRAPH = _tool(
    "read_graph",
    "Read Graph",
    "Read the whole knowledge graph: every node and every edge.",
    obj({"as_of": AS_OF}),
    READ,
)
SEARCH_NODES = _tool(
    "search_nodes",
    "Search Nodes",
    "Find nodes whose name, type or a metadata entry contains the query (case-insensitive), "
    "with their immediate neighbours and every edge touching a match.",
    obj(
        {
            "query": string(
                "The text to look for in node names, types and metadata", maxLength=2048
            ),
            "as_of": AS_OF,
        },
        ["query"],
    ),
    READ,
)
OPEN_NODES = _tool(
    "open_nodes",
    "Open Nodes",
    "Open nodes by their exact names, with their immediate neighbours and every edge touching "
    "them. Names that do not exist are reported in actionTaken.",
    obj({"names": array(string(), "The names of the nodes to open"), "as_of": AS_OF}, ["names"]),
    READ,
)
