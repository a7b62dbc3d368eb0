"""Why a command was rejected: the errors decide raises, before anything is written.

The hierarchy::

    CommandRejectedError          a command was refused; nothing was written. `.message` is the
     |                            text the MCP edge shows as an isError tool result;
     |                            `.suggestions` what to try next (may be empty).
     +-- EntityNotFoundError      a command needs an alive entity that does not exist (`.name`);
     |                            message exactly `Entity with name {name} not found`, as the
     |                            official memory server words it.
     +-- EntityExistsError        a rename would land on an alive entity (`.name`).
     +-- MergeIntoItselfError     a merge names the same entity as source and target (`.name`).
     +-- ObservationNotFoundError an entity has no observation with that content (`.entity`,
     |                            `.content`).
     +-- RelationNotFoundError    no visible relation has that key (`.key`).
     +-- RelationExistsError      an edit would duplicate a visible relation (`.key`).
     +-- NothingToUpdateError     an update item asks for no change at all (`.name`).
     |
     |   the schema-driven family, worded like upstream MemoryMesh:
     +-- NodeNotFoundError        `Node not found: {name}` (`.name`).
     +-- NodeExistsError          `Node already exists: {name}. ...` (`.name`, `.node_type`).
     +-- TypedNodeNotFoundError   `{type} "{name}" not found`: no node of that type has that
     |                            name (`.node_type`, `.name`, `.actual_type` if another has).
     +-- EdgeNotFoundError        `Edge not found: A -> B (t)` (`.key`).
     +-- EdgeExistsError          `Edge already exists: A -> B (t)` (`.key`).
     +-- InvalidWeightError       `Edge weight must be between 0 and 1` (`.key`, `.weight`).
     +-- ConflictingWeightsError  an edge update gives both `weight` and `newWeight` (`.key`).
     +-- DuplicateItemError       one call lists the same node or edge twice (`.item`).
     +-- BlankFieldError          a name, type or edge type is empty (`.field`, `.item`).
     |
     |   the graph family (graph_*), worded per its contract:
     +-- GraphWriteRefusedError   a graph write's input is unusable: every problem listed
     |                            (`.problems`, batch items named by index).
     +-- AmbiguousReferenceError  a reference names several entities (`.reference`,
     |                            `.candidates`); writes refuse to guess.
     +-- GraphEntityNotFoundError boost/weaken named an entity that is not there
     |                            (`.reference`); graph_relate creates it.
     +-- GraphEdgeNotFoundError   boost/weaken named an edge that is not there (`.key`, the
                                  ends as given); graph_relate creates it.

A transaction re-raises the rejection of its failing step, its message prefixed with the step
(see `CommandRejectedError.in_step`).

Events never fail to apply; an exception while applying one is a bug, not a rejection.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousReferenceError",
    "BlankFieldError",
    "CommandRejectedError",
    "ConflictingWeightsError",
    "DuplicateItemError",
    "EdgeExistsError",
    "EdgeNotFoundError",
    "EntityExistsError",
    "EntityNotFoundError",
    "GraphEdgeNotFoundError",
    "GraphEntityNotFoundError",
    "GraphWriteRefusedError",
    "InvalidWeightError",
    "MergeIntoItselfError",
    "NodeExistsError",
    "NodeNotFoundError",
    "NothingToUpdateError",
    "ObservationNotFoundError",
    "RelationExistsError",
    "RelationNotFoundError",
    "TypedNodeNotFoundError",
    "edge_text",
]

RelationKey = tuple[str, str, str]


def _relation_text(key: RelationKey) -> str:
    return f"{key[0]} -[{key[2]}]-> {key[1]}"


def edge_text(key: RelationKey) -> str:
    """An edge as upstream MemoryMesh writes it in messages: `A -> B (t)`."""
    return f"{key[0]} -> {key[1]} ({key[2]})"


class CommandRejectedError(Exception):
    """A command was refused; nothing was written."""

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.unstepped = message
        self.suggestions: list[str] = [] if suggestions is None else suggestions

    def in_step(self, index: int, total: int, step: str) -> None:
        """Say which step of a transaction was refused (`index` counts from 1); `unstepped`
        keeps the message without it, for a tool whose steps are its own business."""
        self.unstepped = self.message
        message = f"Step {index} of {total} ({step}): {self.message}"
        if "Nothing was" not in message:
            message += (
                " Nothing was written." if message.endswith(".") else ". Nothing was written."
            )
        self.message = message
        self.args = (message,)

    def __str__(self) -> str:
        return self.message


class EntityNotFoundError(CommandRejectedError):
    """A command named an entity that is not alive."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Entity with name {name} not found")
        self.name = name


class EntityExistsError(CommandRejectedError):
    """A rename would land on a name that an alive entity already has."""

    def __init__(self, name: str, renamed: str) -> None:
        super().__init__(
            f"Cannot rename {renamed} to {name}: an entity with name {name} already exists. "
            f"Nothing was changed. To combine the two, call merge_entities with "
            f"from={renamed} and into={name}; otherwise pick another name."
        )
        self.name = name
        self.renamed = renamed


class MergeIntoItselfError(CommandRejectedError):
    """A merge named one entity as both its source and its target."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Cannot merge {name} into itself. Nothing was changed; name two different entities."
        )
        self.name = name


class ObservationNotFoundError(CommandRejectedError):
    """An entity has no observation with the content a command names."""

    def __init__(self, entity: str, content: str) -> None:
        super().__init__(
            f"Entity {entity} has no observation {content!r}. Nothing was changed. Read its "
            "current observations with open_nodes; to add a new one use add_observations."
        )
        self.entity = entity
        self.content = content


class RelationNotFoundError(CommandRejectedError):
    """No visible relation has the key a command names."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(
            f"Relation {_relation_text(key)} not found. Nothing was changed. Read the "
            "relations with open_nodes; to add a new one use create_relations."
        )
        self.key = key


class RelationExistsError(CommandRejectedError):
    """An edit would turn a relation into one that is already there."""

    def __init__(self, key: RelationKey, edited: RelationKey) -> None:
        super().__init__(
            f"Cannot change {_relation_text(edited)} into {_relation_text(key)}: that relation "
            "already exists. Nothing was changed; to drop the old one use delete_relations."
        )
        self.key = key
        self.edited = edited


class NothingToUpdateError(CommandRejectedError):
    """An update item names an element but no change to make to it."""

    def __init__(self, name: str, fields: str) -> None:
        super().__init__(
            f"The update of {name} asks for no change. Nothing was changed; give {fields}."
        )
        self.name = name
        self.fields = fields


# --- the schema-driven family (MemoryMesh) -----------------------------------------------------


class NodeNotFoundError(CommandRejectedError):
    """A command named a node that does not exist."""

    def __init__(self, name: str) -> None:
        # Tool names only in the suggestions: the edge keeps those naming tools that exist.
        super().__init__(
            f"Node not found: {name}. Nothing was written; create the node first, or look up "
            "its exact name.",
            [
                f'Create "{name}" first with an add_<type> tool',
                f'Create "{name}" first with add_nodes',
                "Look up the exact name with search_nodes",
            ],
        )
        self.name = name


class NodeExistsError(CommandRejectedError):
    """A command would create a node whose name an existing node (of any type) has."""

    def __init__(self, name: str, node_type: str | None = None) -> None:
        updates = ["update_nodes"] if node_type is None else [f"update_{node_type}", "update_nodes"]
        super().__init__(
            f"Node already exists: {name}. Consider updating existing node. Nothing was "
            "written; update it instead, or pick another name.",
            [*(f'Update "{name}" with {tool}' for tool in updates), "Pick a name no node has"],
        )
        self.name = name
        self.node_type = node_type


class TypedNodeNotFoundError(CommandRejectedError):
    """A typed tool (update_<type>, delete_<type>) named no node of its type."""

    def __init__(self, node_type: str, name: str, actual_type: str | None = None) -> None:
        # Tool names only in the suggestions: the edge keeps those naming tools that exist
        # (a type with no schema has no update_<type>).
        if actual_type is None:
            hint = f"look up its exact name, or create it as a {node_type}"
            suggestions = [
                "Look up the exact name with search_nodes",
                f'Create "{name}" with add_{node_type}',
            ]
        else:
            hint = f'"{name}" is a {actual_type}, not a {node_type}'
            suggestions = [
                f'Use update_{actual_type} or delete_{actual_type} for "{name}"',
                f'Change "{name}" with update_nodes, or delete it with delete_nodes',
                f'Change the metadata of "{name}" with add_metadata and delete_metadata',
            ]
        super().__init__(
            f'{node_type} "{name}" not found. Nothing was written; {hint}.', suggestions
        )
        self.node_type = node_type
        self.name = name
        self.actual_type = actual_type


class EdgeNotFoundError(CommandRejectedError):
    """No visible edge has the key a command names."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(
            f"Edge not found: {edge_text(key)}. Nothing was written; add it with add_edges, "
            "or read the node's edges with open_nodes.",
            ["Add the edge with add_edges", f'Read the edges of "{key[0]}" with open_nodes'],
        )
        self.key = key


class EdgeExistsError(CommandRejectedError):
    """A command would create (or repoint an edge onto) an edge that is already there."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(
            f"Edge already exists: {edge_text(key)}. Nothing was written; change its weight "
            "with update_edges, or remove it first with delete_edges.",
            ["Change the weight with update_edges", "Remove the edge first with delete_edges"],
        )
        self.key = key


class InvalidWeightError(CommandRejectedError):
    """An edge weight is not a number from 0 to 1."""

    def __init__(self, key: RelationKey, weight: float) -> None:
        super().__init__(
            f"Edge weight must be between 0 and 1 (got {weight} for {edge_text(key)}). "
            "Nothing was written; give a weight from 0 (no confidence) to 1 (certain).",
            ["Give a weight from 0 to 1, or leave it out for 1.0"],
        )
        self.key = key
        self.weight = weight


class ConflictingWeightsError(CommandRejectedError):
    """An edge update gives new evidence (`weight`) and a replacement (`newWeight`) at once."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(
            f"The update of {edge_text(key)} gives both weight and newWeight. Nothing was "
            "written; give weight (new evidence, averaged with the current weight) or "
            "newWeight (replaces it), not both.",
            ["Give weight to average with the current weight", "Give newWeight to replace it"],
        )
        self.key = key


class DuplicateItemError(CommandRejectedError):
    """One call lists the same node or edge twice (`item` says which, e.g. `Node X`)."""

    def __init__(self, item: str) -> None:
        super().__init__(
            f"{item} is listed more than once in this call. Nothing was written; list it once.",
            ["List each node or edge once per call"],
        )
        self.item = item


class BlankFieldError(CommandRejectedError):
    """A name, node type or edge type is empty (`item` says where)."""

    def __init__(self, field: str, item: str) -> None:
        super().__init__(
            f"{field} must not be empty ({item}). Nothing was written; give a non-empty {field}.",
            [f"Give a non-empty {field}"],
        )
        self.field = field
        self.item = item


# --- the graph family -----------------------------------------------------------------------


class GraphWriteRefusedError(CommandRejectedError):
    """A graph write's input is unusable; every problem found is listed."""

    def __init__(self, tool: str, problems: list[str]) -> None:
        listed = "; ".join(problems)
        super().__init__(f"{tool} refused, nothing was written: {listed}")
        self.problems = problems


class AmbiguousReferenceError(CommandRejectedError):
    """A write named an entity by a reference that matches several."""

    def __init__(self, reference: str, candidates: tuple[str, ...]) -> None:
        super().__init__(ambiguity_text(reference, candidates) + "; nothing was written.")
        self.reference = reference
        self.candidates = candidates


def ambiguity_text(reference: str, candidates: tuple[str, ...]) -> str:
    names = ", ".join(repr(name) for name in candidates)
    count = len(candidates)
    return f"{reference!r} is ambiguous: it names {count} entities ({names}); use one exact name"


class GraphEntityNotFoundError(CommandRejectedError):
    """boost/weaken named an entity that does not exist."""

    def __init__(self, reference: str) -> None:
        super().__init__(f"Entity not found: {reference}; create it and the edge with graph_relate")
        self.reference = reference


class GraphEdgeNotFoundError(CommandRejectedError):
    """boost/weaken named an edge that does not exist."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(f"Edge not found: {_relation_text(key)}; create it with graph_relate")
        self.key = key
