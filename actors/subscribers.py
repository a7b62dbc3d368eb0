"""Subscribers: who hears of committed envelopes (hooks, notifications), and what they get."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from eventstore.events import Envelope

__all__ = ["Published", "Subscriber", "Subscribers"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Published:
    """Committed envelopes handed to subscribers; `local` is False for other processes' writes."""

    envelopes: Sequence[Envelope]
    local: bool


Subscriber = Callable[[Published], None]


class Subscribers:
    """The subscriber list, shared with every incarnation of the writer so restarts keep it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: tuple[Subscriber, ...] = ()

    def add(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._items = (*self._items, subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._items = tuple(s for s in self._items if s is not subscriber)

    def publish(self, envelopes: Sequence[Envelope], *, local: bool) -> None:
        if not envelopes:
            return
        published = Published(envelopes, local)
        for subscriber in self._items:
            try:
                subscriber(published)
            except Exception:  # a failing subscriber never affects the write
                log.exception("subscriber_failed", subscriber=repr(subscriber))
