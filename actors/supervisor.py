"""A small supervisor: starts named child actors and restarts one that fails.

pykka has no supervision: an exception in a tell kills the actor and nothing restarts it.
Children report their failure here; callers look children up by name on every use and never
keep an `ActorRef` across a restart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pykka
import structlog

log = structlog.get_logger(__name__)

ChildFactory = Callable[["SupervisorHandle"], "pykka.ActorRef[Any]"]


@dataclass(frozen=True)
class SupervisorHandle:
    """What a child keeps to report its failure: the supervisor and its own name."""

    supervisor: pykka.ActorRef[SupervisorActor]
    name: str

    def report_failure(self, error: BaseException | None) -> None:
        with contextlib.suppress(pykka.ActorDeadError):  # shutting down: nothing to restart
            self.supervisor.tell(_ChildFailed(self.name, repr(error)))


@dataclass(frozen=True)
class _ChildFailed:
    name: str
    error: str


@dataclass
class _Child:
    factory: ChildFactory
    ref: pykka.ActorRef[Any]
    restarts: int = 0


@dataclass
class _Children:
    by_name: dict[str, _Child] = field(default_factory=dict)


class SupervisorActor(pykka.ThreadingActor):
    """Owns the child actors: starts them, restarts them on failure, stops them last-first."""

    max_restarts = 10

    def __init__(self) -> None:
        super().__init__()
        self._children = _Children()

    def start_child(self, name: str, factory: ChildFactory) -> pykka.ActorRef[Any]:
        ref = factory(SupervisorHandle(self.actor_ref, name))
        self._children.by_name[name] = _Child(factory, ref)
        return ref

    def child(self, name: str) -> pykka.ActorRef[Any]:
        return self._children.by_name[name].ref

    def restarts(self, name: str) -> int:
        return self._children.by_name[name].restarts

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _ChildFailed):
            self._restart(message)
            return None
        return super().on_receive(message)

    def _restart(self, failure: _ChildFailed) -> None:
        child = self._children.by_name.get(failure.name)
        if child is None or child.ref.is_alive():
            return
        if child.restarts >= self.max_restarts:
            log.error("actor_restart_limit_reached", actor=failure.name, error=failure.error)
            return
        child.restarts += 1
        log.warning(
            "actor_restarted", actor=failure.name, error=failure.error, restarts=child.restarts
        )
        child.ref = child.factory(SupervisorHandle(self.actor_ref, failure.name))

    def on_stop(self) -> None:
        for name, child in reversed(list(self._children.by_name.items())):
            if child.ref.is_alive():
                try:
                    child.ref.stop(block=True, timeout=10)
                except pykka.Timeout:
                    # Asked to stop all the same (the stop is queued): whoever stops the
                    # process waits for the graph writer with its own bound (stop_actors).
                    log.info("actor_still_stopping", actor=name)
