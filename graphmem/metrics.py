"""The service's Prometheus metrics and its health: one registry per served process.

Counters and histograms are updated where things happen (a tool call, a group commit); the
figures that belong to the log and the read models are read at scrape time by a collector, so
they are never stale and cost nothing between scrapes. Tool names become label values only
when they name a tool: a client calling made-up names must not grow the registry without end.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from actors.subscribers import Published
from graphmem.app import App
from graphmem.replication.status import STATE_FILE, read_state
from projections.graph import GraphProjection

__all__ = ["CONTENT_TYPE", "Health", "ServiceMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNKNOWN_TOOL = "unknown"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_COMMIT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384)


@dataclass(frozen=True)
class Health:
    """Liveness is the process answering at all; readiness: the log reads and the writer
    answers with read models as far as the log (`lag` events behind; 0 when caught up)."""

    ready: bool
    log_position: int | None
    read_model_position: int | None
    problem: str | None = None

    @property
    def lag(self) -> int | None:
        if self.log_position is None or self.read_model_position is None:
            return None
        return max(self.log_position - self.read_model_position, 0)

    def to_json(self) -> dict[str, object]:
        return {
            "status": "ready" if self.ready else "not_ready",
            "live": True,
            "ready": self.ready,
            "log_position": self.log_position,
            "read_model_position": self.read_model_position,
            "read_model_lag": self.lag,
            "problem": self.problem,
        }


class ServiceMetrics:
    """What `/metrics` serves for `app`, and `/health`'s check."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.registry = CollectorRegistry(auto_describe=True)
        self.tool_calls = Counter(
            "graphmem_tool_calls",
            "Tool calls answered, by tool and outcome (ok or error).",
            ("tool", "outcome"),
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "graphmem_tool_call_seconds",
            "Time to answer a tool call, by tool.",
            ("tool",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.events_appended = Counter(
            "graphmem_events_appended",
            "Events this process appended to the log.",
            registry=self.registry,
        )
        self.commit_events = Histogram(
            "graphmem_group_commit_events",
            "Events per group commit of this process's writer.",
            buckets=_COMMIT_BUCKETS,
            registry=self.registry,
        )
        self.open_sessions: Callable[[], int] | None = None
        self.registry.register(_LogCollector(self))
        ProcessCollector(registry=self.registry)  # RSS, CPU, open files
        PlatformCollector(registry=self.registry)

    def tool_called(self, tool: str, known: bool, is_error: bool, seconds: float) -> None:
        name = tool if known else UNKNOWN_TOOL
        self.tool_calls.labels(name, "error" if is_error else "ok").inc()
        self.tool_seconds.labels(name).observe(seconds)

    def on_published(self, published: Published) -> None:
        """Writer subscriber: this process's group commits (other processes' are theirs)."""
        if published.local and published.envelopes:
            self.events_appended.inc(len(published.envelopes))
            self.commit_events.observe(len(published.envelopes))

    def health(self) -> Health:
        """Read the log's end and ask the writer for its read models' position (bounded)."""
        try:
            log_position = self.app.event_log.last_position()
        except Exception as problem:  # an edge: the answer is "not ready", with the reason
            return Health(False, None, None, f"the log cannot be read: {problem}")
        try:
            model_position = self.app.graph.query_models_blocking(
                lambda models: models.graph.position
            )
        except Exception as problem:
            # Say what to do: the raw error (an actor's urn) tells an operator nothing.
            return Health(
                False,
                log_position,
                None,
                f"the writer did not answer: {problem or type(problem).__name__}; the "
                "server's log (stderr) says why; restart the service if this persists",
            )
        return Health(True, log_position, model_position)

    def exposition(self) -> bytes:
        """The registry in Prometheus text format (blocking: run it off the event loop)."""
        return generate_latest(self.registry)


class _LogCollector(Collector):
    """The figures read at scrape time: log, checkpoints, read models, sessions."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # unchecked: these names are the collector's own

    def collect(self) -> Iterator[Metric]:
        app = self.metrics.app
        health = self.metrics.health()
        yield _gauge("graphmem_up", "1 when the log reads and the writer answers.", health.ready)
        if health.log_position is not None:
            yield _gauge("graphmem_log_position", "The log's last position.", health.log_position)
        if health.lag is not None:
            yield _gauge(
                "graphmem_read_model_lag_events",
                "Events in the log the read models have not folded yet.",
                health.lag,
            )
        data_file = os.path.join(str(app.settings.data_dir), "data.mdb")
        if os.path.isfile(data_file):
            yield _gauge(
                "graphmem_log_bytes", "Size of the log's file.", os.path.getsize(data_file)
            )
        newest = _newest_checkpoint(app)
        if newest is not None and health.log_position is not None:
            yield _gauge(
                "graphmem_checkpoint_age_events",
                "Events appended since the newest checkpoint (start-up replays them).",
                max(health.log_position - newest, 0),
            )
        if self.metrics.open_sessions is not None:
            yield _gauge(
                "graphmem_http_sessions_open",
                "HTTP sessions open now.",
                self.metrics.open_sessions(),
            )
        if app.embeddings is not None:
            yield _gauge(
                "graphmem_embedding_pending_entities",
                "Entities whose search vector may not be current yet (the embedding backlog).",
                app.embeddings.pending(),
            )
        if app.settings.replication.url is not None:
            yield from _replication(app)


def _replication(app: App) -> Iterator[Metric]:
    """Per origin, what this node holds (the log's frontiers) and how far behind the hub it
    is, from the state the link last wrote (replication.json): a scrape never waits on the hub."""
    try:
        received = app.event_log.origins()
        node = app.event_log.node_id
    except Exception:  # a figure, not a verdict: `graphmem replication status` tells more
        return
    state = read_state(app.settings.data_dir / STATE_FILE) or {}
    raw_holds = state.get("hub_holds")
    hub_holds = (
        {str(k): int(v) for k, v in raw_holds.items()} if isinstance(raw_holds, dict) else {}
    )
    held = GaugeMetricFamily(
        "graphmem_replication_received_seq",
        "Per origin, the last of its events this node holds (the log's frontier).",
        labels=("origin",),
    )
    lag = GaugeMetricFamily(
        "graphmem_replication_lag_events",
        "Per origin, events the hub holds that this node has not received yet "
        "(for this node's own origin: its events the hub does not hold yet).",
        labels=("origin",),
    )
    for origin in sorted(set(received) | set(hub_holds)):
        held.add_metric((origin,), float(received.get(origin, 0)))
        if origin == node:
            to_send = state.get("to_send")
            if isinstance(to_send, int):
                lag.add_metric((origin,), float(to_send))
        elif origin in hub_holds:
            lag.add_metric((origin,), float(max(hub_holds[origin] - received.get(origin, 0), 0)))
    yield held
    yield lag
    yield _gauge(
        "graphmem_replication_hub_reachable",
        "1 when the replication link last reached the hub (0 before it ever has).",
        bool(state.get("connected")),
    )


def _newest_checkpoint(app: App) -> int | None:
    try:
        entries = app.event_log.checkpoints.entries(GraphProjection.name)
    except Exception:  # a figure, not a verdict: `graphmem check` judges checkpoints
        return None
    usable = [e.position for e in entries if e.problem is None]
    return max(usable, default=0)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=float(value))
