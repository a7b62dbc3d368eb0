"""Why a command was rejected: the errors decide raises, before anything is written.

The hierarchy::

    CommandRejectedError          a command was refused; nothing was written. `.message` is the
     |                            text the MCP edge shows as an isError tool result.
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

Events never fail to apply; an exception while applying one is a bug, not a rejection.
"""

from __future__ import annotations

__all__ = [
    "CommandRejectedError",
    "EntityExistsError",
    "EntityNotFoundError",
    "MergeIntoItselfError",
    "NothingToUpdateError",
    "ObservationNotFoundError",
    "RelationExistsError",
    "RelationNotFoundError",
]

RelationKey = tuple[str, str, str]


def _relation_text(key: RelationKey) -> str:
    return f"{key[0]} -[{key[2]}]-> {key[1]}"


class CommandRejectedError(Exception):
    """A command was refused; nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class EntityNotFoundError(CommandRejectedError):
    """A command named an entity that is not alive."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Entity with name {name} not found")
        self.name = name

    def __reduce__(self) -> tuple[type[EntityNotFoundError], tuple[str]]:
        return (type(self), (self.name,))


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

    def __reduce__(self) -> tuple[type[EntityExistsError], tuple[str, str]]:
        return (type(self), (self.name, self.renamed))


class MergeIntoItselfError(CommandRejectedError):
    """A merge named one entity as both its source and its target."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Cannot merge {name} into itself. Nothing was changed; name two different entities."
        )
        self.name = name

    def __reduce__(self) -> tuple[type[MergeIntoItselfError], tuple[str]]:
        return (type(self), (self.name,))


class ObservationNotFoundError(CommandRejectedError):
    """An entity has no observation with the content a command names."""

    def __init__(self, entity: str, content: str) -> None:
        super().__init__(
            f"Entity {entity} has no observation {content!r}. Nothing was changed. Read its "
            "current observations with open_nodes; to add a new one use add_observations."
        )
        self.entity = entity
        self.content = content

    def __reduce__(self) -> tuple[type[ObservationNotFoundError], tuple[str, str]]:
        return (type(self), (self.entity, self.content))


class RelationNotFoundError(CommandRejectedError):
    """No visible relation has the key a command names."""

    def __init__(self, key: RelationKey) -> None:
        super().__init__(
            f"Relation {_relation_text(key)} not found. Nothing was changed. Read the "
            "relations with open_nodes; to add a new one use create_relations."
        )
        self.key = key

    def __reduce__(self) -> tuple[type[RelationNotFoundError], tuple[RelationKey]]:
        return (type(self), (self.key,))


class RelationExistsError(CommandRejectedError):
    """An edit would turn a relation into one that is already there."""

    def __init__(self, key: RelationKey, edited: RelationKey) -> None:
        super().__init__(
            f"Cannot change {_relation_text(edited)} into {_relation_text(key)}: that relation "
            "already exists. Nothing was changed; to drop the old one use delete_relations."
        )
        self.key = key
        self.edited = edited

    def __reduce__(self) -> tuple[type[RelationExistsError], tuple[RelationKey, RelationKey]]:
        return (type(self), (self.key, self.edited))


class NothingToUpdateError(CommandRejectedError):
    """An update item names an element but no change to make to it."""

    def __init__(self, name: str, fields: str) -> None:
        super().__init__(
            f"The update of {name} asks for no change. Nothing was changed; give {fields}."
        )
        self.name = name
        self.fields = fields

    def __reduce__(self) -> tuple[type[NothingToUpdateError], tuple[str, str]]:
        return (type(self), (self.name, self.fields))
