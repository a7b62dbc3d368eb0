"""Decision: what deciding one command produced — the events to append and the answer."""

from __future__ import annotations

import msgspec

from actors.commands import Command, CommandResult
from eventstore.events import AnyEvent

__all__ = ["Decision"]


class Decision(msgspec.Struct, frozen=True):
    """The events to append (possibly none) and the result to answer with once they are.

    `steps` splits the events by the command that decided them, for hooks: a transaction
    lists each step's; empty means all of `events` belong to the command decided.
    """

    events: list[AnyEvent]
    result: CommandResult
    steps: tuple[tuple[Command, list[AnyEvent]], ...] = ()
