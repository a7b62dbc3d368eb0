"""The composition root: opens the log, starts the actors, and stops everything on the way out."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pykka
import structlog

from actors.bridge import BlockingReply
from actors.decay_scheduler import DecaySchedulerActor, first_event_time
from actors.family_index_progress import FamilyIndexProgress
from actors.gateway import GraphGateway
from actors.graph_maintenance import decay_command
from actors.graph_writer import GraphWriterActor
from actors.hooks import Hooks
from actors.replicator import ReplicatorActor
from actors.schema_registry import SchemaRegistryActor
from actors.search_handover import SearchHandover
from actors.stopping import Stopping
from actors.subscribers import Subscribers
from actors.supervisor import SupervisorActor, SupervisorHandle
from actors.time_travel import TimeTravel
from actors.transaction_coordinator import TransactionCoordinatorActor, TransactionGateway
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from graphmem.config import Settings, SettingsError, replica_token_problem
from graphmem.cypher import available as cypher_available
from graphmem.cypher.service import CypherService
from graphmem.data_log import open_event_log
from graphmem.graph_config import load_tunables
from graphmem.hook_loader import load_hooks
from graphmem.replication.status import STATE_FILE, redact
from graphmem.tools.catalog import STATIC_TOOL_NAMES
from graphmem.version import graphmem_version

if TYPE_CHECKING:
    # Imported by start_embeddings, for the graph family only: the embeddings load numpy
    # (~15 MiB, 0.2-0.4 s), which a memory or schema server never uses.
    from graphmem.embedding.service import EmbeddingService

log = structlog.get_logger(__name__)

STOP_TIMEOUT = 10.0
# How long a stop lets the graph writer's checkpoint save run before it is abandoned (a final
# one that would not fit, going by the last save, is skipped): the log is the truth, and the
# next start folds what a skipped checkpoint would have held.
STOP_SAVE_BUDGET = 10.0
# Beyond what is left of the stop's budget and one whole checkpoint save (Stopping.writer_limit):
# the graph writer's other stop work (its last group commit, answering what is queued).
WRITER_STOP_GRACE = 30.0
# How long the graph writer may take to load the log at start-up (a refold of a long log
# when no checkpoint fits): generous, but bounded, and a writer that dies says so at once.
LOAD_TIMEOUT = 1800.0
# graph_cypher: past the engine's own timeout by this much, the worker is killed (issue 19:
# 5 s and 7 s).
CYPHER_KILL_MARGIN_SECONDS = 2.0


@dataclass(frozen=True)
class App:
    """What a running graphmem process holds."""

    settings: Settings
    event_log: EventLog
    supervisor: pykka.ActorRef[SupervisorActor]
    graph: GraphGateway
    transactions: TransactionGateway
    hooks: Hooks
    time_travel: TimeTravel | None = None
    # The graph family's embeddings (graph_search, graph_reembed): served processes only.
    embeddings: EmbeddingService | None = None
    # graph_cypher's projection (the `cypher` extra): served processes only.
    cypher: CypherService | None = None
    # Asked by stop_actors before anything stops: the writer's checkpoints give way to it.
    stopping: Stopping = field(default_factory=Stopping)


def start_actors(
    settings: Settings,
    event_log: EventLog,
    *,
    load_schemas: bool = False,
    hooks: Hooks | None = None,
    serve_stale: bool = False,
    schedule_decay: bool = False,
    replicate: bool = False,
    bulk_load: bool = False,
    search_handover: SearchHandover | None = None,
    graph_images: bool = False,
) -> App:
    """Start the actors under one supervisor. The schema registry (loading and watching schema
    files) starts only with `load_schemas`: the server wants it; one-shot commands such as
    import and export, and most tests, do not. `serve_stale` (the server's choice too): after
    an upgrade, answer from an earlier version's checkpoints while the read models are
    rebuilt in the background (GraphWriterActor); one-shot commands refold first instead.
    `schedule_decay` (the server's choice): when the graph family is served, start the
    DecaySchedulerActor unless GRAPHMEM_DECAY_SCHEDULE=off or decay.schedule_hours is 0.
    `bulk_load` (graphmem import's choice): a writer tuned for loading, not searching.
    `search_handover`: a stdio server whose early reads build a search index for the writer
    to adopt (actors.search_handover). `graph_images` (the server's and import's choice, if
    the settings allow): the graph's read image kept beside the log and served from
    (actors.graph_images)."""
    hooks = hooks if hooks is not None else Hooks(load_hooks(settings.hooks))
    subscribers = Subscribers()
    stopping = Stopping()
    family_index = FamilyIndexProgress()  # written by the writer (any restart), read by tools
    supervisor = SupervisorActor.start()
    start = supervisor.proxy().start_child
    loaded: BlockingReply[None] = BlockingReply()
    try:

        def graph_writer(handle: SupervisorHandle) -> pykka.ActorRef[GraphWriterActor]:
            return GraphWriterActor.start(
                event_log,
                subscribers,
                handle,
                hooks,
                checkpoint_every=settings.checkpoint_every or None,
                serve_stale=serve_stale,
                ready=loaded,
                stopping=stopping,
                family_index=family_index,
                bulk_load=bulk_load,
                search_handover=search_handover,
                images=graph_images and settings.graph_image,
                image_idle=settings.graph_image_idle or None,
                image_compact_at=settings.graph_image_compact,
            )

        writer = start("graph_writer", graph_writer).get(timeout=STOP_TIMEOUT * 6)
        _wait_loaded(writer, loaded)
        graph = GraphGateway(supervisor, subscribers, family_index=family_index)

        def coordinator(handle: SupervisorHandle) -> pykka.ActorRef[TransactionCoordinatorActor]:
            return TransactionCoordinatorActor.start(graph, hooks)

        coordinator_ref = start("transaction_coordinator", coordinator).get(timeout=STOP_TIMEOUT)
        if load_schemas:

            def registry(handle: SupervisorHandle) -> pykka.ActorRef[SchemaRegistryActor]:
                return SchemaRegistryActor.start(
                    settings.schema_folders,
                    graph,
                    STATIC_TOOL_NAMES,
                    settings.watch_schemas,
                    handle,
                    limits=settings.schema_limits,
                    retire_from=settings.retired_schema_folders,
                )

            registry_ref = start("schema_registry", registry).get(timeout=STOP_TIMEOUT)
            # Answered once the start-up scan is done: the first tools/list sees the schemas.
            registry_ref.proxy().problems().get(timeout=STOP_TIMEOUT * 6)
        if schedule_decay:
            _start_decay_scheduler(settings, event_log, graph, start)
        if replicate and settings.replication.url is not None:
            _start_replicator(settings, event_log, graph, start)
    except BaseException:
        pykka.ActorRegistry.stop_all(block=True, timeout=STOP_TIMEOUT)
        raise
    transactions = TransactionGateway(coordinator_ref, hooks)
    return App(
        settings,
        event_log,
        supervisor,
        graph,
        transactions,
        hooks,
        TimeTravel(event_log),
        stopping=stopping,
    )


def _start_decay_scheduler(
    settings: Settings, event_log: EventLog, graph: GraphGateway, start: Any
) -> None:
    if "graph" not in settings.tools or not settings.graph.decay_schedule:
        return
    decay = load_tunables(settings.graph_home).tunables.decay
    if decay.schedule_hours <= 0:
        return
    clock = settings.graph.wall_clock()

    def scheduler(handle: SupervisorHandle) -> pykka.ActorRef[DecaySchedulerActor]:
        return DecaySchedulerActor.start(
            graph,
            lambda: decay_command(decay),
            round(decay.schedule_hours * 3_600_000),
            clock,
            lambda: first_event_time(event_log),
        )

    start("decay_scheduler", scheduler).get(timeout=STOP_TIMEOUT)
    log.info("decay_scheduler_started", every_hours=decay.schedule_hours)


def _start_replicator(
    settings: Settings, event_log: EventLog, graph: GraphGateway, start: Any
) -> None:
    """The replicator and its NATS link (imported only here: a node that does not replicate
    never imports nats-py). A node id that cannot name a stream is logged, not fatal: local
    service goes on, as with an unreachable hub."""
    if (problem := replica_token_problem(event_log.node_id)) is not None:
        log.error("replication_not_started", reason=problem)
        return
    try:  # nats-py only now
        from graphmem.replication.nats_link import NatsLink  # noqa: PLC0415
        from graphmem.replication.process_link import ProcessLink  # noqa: PLC0415
    except ImportError as missing:
        log.error(
            "replication_not_started",
            reason=f"{missing}: pip install 'graphmem[replication]'",
        )
        return
    state_file = settings.data_dir / STATE_FILE
    link: NatsLink | ProcessLink
    if isinstance(event_log, LmdbEventLog):  # the sender process opens the data dir's log
        link = ProcessLink(
            settings.replication,
            event_log,
            state_file,
            discover_every=settings.replication.discover_seconds,
            # The server's own level (set up before the stack: GRAPHMEM_LOG_LEVEL or serve's).
            log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
        )
    else:  # a log in memory: one process can read it
        link = NatsLink(
            settings.replication,
            event_log,
            state_file,
            discover_every=settings.replication.discover_seconds,
        )

    def replicator(handle: SupervisorHandle) -> pykka.ActorRef[ReplicatorActor]:
        return ReplicatorActor.start(graph, link, event_log.node_id)

    start("replicator", replicator).get(timeout=STOP_TIMEOUT)
    log.info(
        "replicator_started",
        hub=redact(settings.replication.url or ""),
        group=settings.replication.group,
        node_id=event_log.node_id,
    )


def _wait_loaded(writer: pykka.ActorRef[GraphWriterActor], loaded: BlockingReply[None]) -> None:
    """Wait until the writer has loaded the log: re-raises why it could not (a damaged log),
    so that start-up refuses rather than serving a graph that cannot answer."""
    deadline = time.monotonic() + LOAD_TIMEOUT
    while True:
        try:
            loaded.wait(1.0)
            return
        except TimeoutError:
            if not writer.is_alive():
                raise RuntimeError("the graph writer stopped while loading the log") from None
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the graph writer did not load the log within {LOAD_TIMEOUT:g} s"
                ) from None


def stop_actors(app: App) -> bool:
    """Stop every actor, the graph writer last. True once the writer has really stopped: only
    then may the log be closed (closed under a writer still saving a checkpoint, the save
    failed with "the log is closed"). The stop is asked first (App.stopping), so a checkpoint
    save in progress is abandoned and a final one skipped rather than run past STOP_SAVE_BUDGET;
    the wait for the writer is bounded by Stopping.writer_limit. False (logged) if the writer
    is still running after it: the caller leaves the log open (LMDB needs no close to be
    consistent; every acknowledged write is committed)."""
    app.stopping.ask(STOP_SAVE_BUDGET)
    supervisor_stopped = app.supervisor.stop(block=False)
    limit = app.stopping.writer_limit(WRITER_STOP_GRACE)
    # Not pykka's actor_stopped: it is set before on_stop (the final checkpoint) runs.
    if not app.stopping.writer_stopped.wait(limit):
        log.error("graph_writer_still_running", waited_seconds=round(limit, 3))
        return False
    # The supervisor's own stop ends once the writer's has (its on_stop waits for it).
    with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
        supervisor_stopped.get(timeout=STOP_TIMEOUT)
    # Anything started outside the supervisor (or left by a failed start) must not keep the
    # process alive: pykka's threads are not daemons.
    try:
        pykka.ActorRegistry.stop_all(block=True, timeout=STOP_TIMEOUT)
    except pykka.Timeout:
        log.error("actors_still_running", waited_seconds=STOP_TIMEOUT)
    return True


def start_embeddings(app: App) -> App:
    """The embedding service of a server whose profile serves the graph family: its worker
    subscribes to the writer and scans every entity (vectors from the cache when known)."""
    settings = app.settings
    if "graph" not in settings.tools:
        return app
    from graphmem.embedding.embedders import EmbedderUnavailableError  # noqa: PLC0415
    from graphmem.embedding.loader import load_embedder  # noqa: PLC0415
    from graphmem.embedding.service import EmbeddingService  # noqa: PLC0415

    try:
        embedder = load_embedder(settings.graph.embedder)
    except EmbedderUnavailableError as problem:
        raise SettingsError(str(problem)) from None
    service = EmbeddingService.in_data_dir(
        embedder,
        lambda query: app.graph.query_models_blocking(lambda models: query(models.graph)),
        settings.data_dir,
    )
    service.start(app.graph.subscribe)
    log.info("embeddings_started", embedder=embedder.name, cache=str(service.cache.path))
    return replace(app, embeddings=service)


def start_cypher(app: App, *, warm: bool) -> App:
    """graph_cypher's service, when the profile serves the graph family and the `cypher` extra
    is installed. Its worker is built at once with `warm`, else at the first query."""
    settings = app.settings
    if "graph" not in settings.tools or not cypher_available():
        return app
    timeout_ms = load_tunables(settings.graph_home).tunables.query.cypher_timeout_ms
    time_travel = app.time_travel
    read_at = (
        None
        if time_travel is None
        else lambda position, query: time_travel.query(
            position, lambda models: query(models.graph), keep=False
        )
    )
    service = CypherService(
        lambda query: app.graph.query_models_blocking(lambda models: query(models.graph)),
        read_at=read_at,
        timeout_ms=timeout_ms,
        kill_seconds=timeout_ms / 1000 + CYPHER_KILL_MARGIN_SECONDS,
    )
    service.start(app.graph.subscribe)
    if warm:
        service.warm()
    log.info("cypher_started", timeout_ms=timeout_ms, warm=warm)
    return replace(app, cypher=service)


@contextmanager
def running(
    settings: Settings,
    *,
    load_schemas: bool = True,
    serve_stale: bool = False,
    schedule_decay: bool = False,
    embed: bool = False,
    replicate: bool = False,
    bulk_load: bool = False,
    search_handover: SearchHandover | None = None,
    graph_images: bool = False,
) -> Iterator[App]:
    """Open the data dir and run the actors for the duration of the block (see start_actors);
    with `embed` (a server), the graph family's embedding service too."""
    event_log = open_event_log(settings)
    stopped = True  # whether the writer has stopped: only then is the log closed
    try:
        app = start_actors(
            settings,
            event_log,
            load_schemas=load_schemas,
            serve_stale=serve_stale,
            schedule_decay=schedule_decay,
            replicate=replicate,
            bulk_load=bulk_load,
            search_handover=search_handover,
            graph_images=graph_images,
        )
        try:
            if embed:
                app = start_embeddings(app)
                app = start_cypher(app, warm=False)
        except BaseException:
            stopped = stop_actors(app)
            raise
        log.info(
            "graphmem_started",
            version=graphmem_version(),
            data_dir=str(settings.data_dir),
            node_id=event_log.node_id,
            durability=settings.durability.value,
            tools=",".join(settings.tools),
        )
        try:
            yield app
        finally:
            if app.cypher is not None:
                app.cypher.stop()
            if app.embeddings is not None:
                app.embeddings.stop()
            stopped = stop_actors(app)
    finally:
        if stopped:
            event_log.close()
            log.info("graphmem_stopped")
        else:
            log.error("log_left_open", reason="the graph writer did not stop in time")
