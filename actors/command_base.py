"""CommandOf: the base of every command, typed by the result the writer answers it with."""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

__all__ = ["CommandOf"]

R_co = TypeVar("R_co", covariant=True)


class CommandOf(msgspec.Struct, Generic[R_co], frozen=True, rename="camel"):
    """A command the writer answers with an `R_co`: `GraphGateway.execute(CreateEntities(...))`
    is typed `CreateEntitiesResult`. Encoded names are the tools' camelCase wire names, so a
    tool's arguments convert straight into its command."""
