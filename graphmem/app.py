"""The composition root: opens the log, starts the actors, and stops everything on the way out."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pykka
import structlog

from actors.gateway import GraphGateway
from actors.graph_writer import GraphWriterActor, Subscribers
from actors.supervisor import SupervisorActor, SupervisorHandle
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from graphmem.config import Settings

log = structlog.get_logger(__name__)

STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class App:
    """What a running graphmem process holds."""

    settings: Settings
    event_log: EventLog
    supervisor: pykka.ActorRef[SupervisorActor]
    graph: GraphGateway


def start_actors(settings: Settings, event_log: EventLog) -> App:
    subscribers = Subscribers()
    supervisor = SupervisorActor.start()

    def graph_writer(handle: SupervisorHandle) -> pykka.ActorRef[GraphWriterActor]:
        return GraphWriterActor.start(event_log, subscribers, handle)

    supervisor.proxy().start_child("graph_writer", graph_writer).get(timeout=STOP_TIMEOUT * 6)
    return App(settings, event_log, supervisor, GraphGateway(supervisor, subscribers))


def stop_actors(app: App) -> None:
    with contextlib.suppress(pykka.ActorDeadError):  # already stopped
        app.supervisor.stop(block=True, timeout=STOP_TIMEOUT)
    # Anything started outside the supervisor (or left by a failed start) must not keep the
    # process alive: pykka's threads are not daemons.
    pykka.ActorRegistry.stop_all(block=True, timeout=STOP_TIMEOUT)


@contextmanager
def running(settings: Settings) -> Iterator[App]:
    """Open the data dir and run the actors for the duration of the block."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    event_log = LmdbEventLog.open(
        settings.data_dir, durability=settings.durability, node_id=settings.node_id
    )
    try:
        app = start_actors(settings, event_log)
        log.info(
            "graphmem_started",
            data_dir=str(settings.data_dir),
            node_id=event_log.node_id,
            durability=settings.durability.value,
        )
        try:
            yield app
        finally:
            stop_actors(app)
    finally:
        event_log.close()
        log.info("graphmem_stopped")
