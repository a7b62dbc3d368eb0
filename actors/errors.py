"""Why a command was rejected: the errors decide raises, before anything is written.

The hierarchy::

    CommandRejectedError        a command was refused; nothing was written. `.message` is the
     |                          text the MCP edge shows as an isError tool result.
     +-- EntityNotFoundError    a command needs an alive entity that does not exist (`.name`);
                                message exactly `Entity with name {name} not found`, as the
                                official memory server words it.

Events never fail to apply; an exception while applying one is a bug, not a rejection.
"""

from __future__ import annotations

__all__ = ["CommandRejectedError", "EntityNotFoundError"]


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
