"""Hooks: before/after subscribers around every operation (docs/architecture.md §5).

A hook is a callable taking a HookEvent. Before-hooks run inside the writer after a command is
decided and before anything is appended; they see the command and the events it would append,
and veto it by raising (HookVetoError's message reaches the caller; any other exception vetoes
too, so a broken policy fails closed). After-hooks run once the events are committed, before
the caller is answered; they see this process's committed events only, never a replay nor
another process's writes, and a failing after-hook is logged and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from actors.commands import (
    AddEdges,
    AddMetadata,
    AddNodes,
    AddObservations,
    Command,
    CommitTransaction,
    CreateEntities,
    CreateRelations,
    DeleteEdges,
    DeleteEntities,
    DeleteMetadata,
    DeleteNodes,
    DeleteObservations,
    DeleteRelations,
    MergeEntities,
    RegisterSchemas,
    SetNodeProperties,
    UpdateEdges,
    UpdateEntities,
    UpdateNodes,
    UpdateObservations,
    UpdateRelations,
)
from actors.errors import CommandRejectedError
from eventstore.events import AnyEvent, Envelope

__all__ = ["Hook", "HookEvent", "HookVetoError", "Hooks", "operation_of"]

log = structlog.get_logger(__name__)

Phase = Literal["before", "after"]

# Seed 000's operation names; the official family's commands map onto the same operations.
_OPERATIONS: dict[type[Any], str] = {
    AddNodes: "AddNodes",
    CreateEntities: "AddNodes",
    UpdateNodes: "UpdateNodes",
    UpdateEntities: "UpdateNodes",
    SetNodeProperties: "UpdateNodes",
    MergeEntities: "MergeNodes",
    DeleteNodes: "DeleteNodes",
    DeleteEntities: "DeleteNodes",
    AddEdges: "AddEdges",
    CreateRelations: "AddEdges",
    UpdateEdges: "UpdateEdges",
    UpdateRelations: "UpdateEdges",
    DeleteEdges: "DeleteEdges",
    DeleteRelations: "DeleteEdges",
    AddMetadata: "AddMetadata",
    AddObservations: "AddMetadata",
    UpdateObservations: "UpdateMetadata",
    DeleteMetadata: "DeleteMetadata",
    DeleteObservations: "DeleteMetadata",
    RegisterSchemas: "RegisterSchemas",
    CommitTransaction: "Commit",
}


def operation_of(command: Command) -> str:
    return _OPERATIONS.get(type(command), type(command).__name__)


@dataclass(frozen=True)
class HookEvent:
    """What a hook sees. `name` is the seed's event name (`beforeAddNodes`, `afterCommit`,
    `beforeSearch` ...): the phase followed by the operation."""

    phase: Phase
    operation: str
    command: Command | None = None
    # Before: the events the command would append. After: the events appended.
    events: tuple[AnyEvent, ...] = ()
    # After only: the committed envelopes (position, origin, stamp, transaction, cause).
    envelopes: tuple[Envelope, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.phase}{self.operation}"


Hook = Callable[[HookEvent], None]


class HookVetoError(CommandRejectedError):
    """A before-hook refused the operation; nothing was written."""


class Hooks:
    """The hooks of one process, shared by the actors that run them (thread-safe to change)."""

    def __init__(self, hooks: Iterable[Hook] = ()) -> None:
        self._lock = threading.Lock()
        self._items: tuple[Hook, ...] = tuple(hooks)

    def add(self, hook: Hook) -> None:
        with self._lock:
            self._items = (*self._items, hook)

    def remove(self, hook: Hook) -> None:
        with self._lock:
            self._items = tuple(h for h in self._items if h is not hook)

    @property
    def empty(self) -> bool:
        """No hook is registered (the writer then skips the hook calls altogether)."""
        return not self._items

    def before(
        self,
        operation: str,
        command: Command | None = None,
        events: Sequence[AnyEvent] = (),
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Run the before-hooks; raises HookVetoError if one refuses."""
        if not self._items:
            return
        event = HookEvent("before", operation, command, tuple(events), (), data or {})
        for hook in self._items:
            try:
                hook(event)
            except HookVetoError:
                raise
            except CommandRejectedError as rejection:
                raise HookVetoError(rejection.message) from rejection
            except Exception as error:
                log.exception("before_hook_failed", hook=repr(hook), hook_event=event.name)
                raise HookVetoError(
                    f"{event.name} hook {_hook_name(hook)} failed ({error!r}); nothing was "
                    "written. Fix or remove the hook, then retry."
                ) from error

    def after(
        self,
        operation: str,
        command: Command | None = None,
        envelopes: Sequence[Envelope] = (),
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Run the after-hooks; a failure is logged and never reaches the caller."""
        if not self._items:
            return
        event = HookEvent(
            "after",
            operation,
            command,
            tuple(e.event for e in envelopes),
            tuple(envelopes),
            data or {},
        )
        for hook in self._items:
            try:
                hook(event)
            except Exception:
                log.exception("after_hook_failed", hook=repr(hook), hook_event=event.name)


def _hook_name(hook: Hook) -> str:
    module = getattr(hook, "__module__", None)
    qualname = getattr(hook, "__qualname__", None) or repr(hook)
    return f"{module}:{qualname}" if module else qualname
