"""DecaySchedulerActor: runs graph_decay on a schedule, beside the writer (contract §6).

Each `Tick` asks whether a run is due: the last run's time comes from the log (the newest
DecayApplied, whoever appended it: this actor, a graph_decay call, another node), never from
memory, so a restart runs at once only if a run is due, and a manual run postpones the next
scheduled one. A graph that never decayed counts from its first event. Ticks are handled one at
a time, so a run never starts while another is in progress; a tick queued behind a run finds
it no longer due. A timer tells the next tick when the next run falls due (at most an hour
ahead, so a changed wall clock is noticed). Each run logs one canonical line with its counts
and duration. Decay values are derived from the newest run alone, so how often this runs
never changes a value, only when it shows.

A run needs the graph family's index, and building it on a large graph takes seconds of the
writer (and of the interpreter's lock): a run due at start-up that built it held the first
answers back and kept a stop waiting past its timeout. So a due run waits until a read has
built the index (the first graph read builds it anyway), rechecking every few seconds, and
then costs a fraction of a second; only after `cold_wait_ms` with no such read does it build
the index itself. The wait is logged once (`decay_run_waits_for_index`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pykka
import structlog

from actors.graph_maintenance import GraphDecay, GraphDecayResult
from actors.tally import tallying
from eventstore.events import Cause
from eventstore.hlc import ms_of
from eventstore.log import EventLog
from projections.graph import GraphProjection
from projections.graph_decay import newest_run
from projections.graph_family import FamilyIndexBuildingError, family_index_built

__all__ = ["DecaySchedulerActor", "Tick", "TickOutcome", "first_event_time"]

log = structlog.get_logger(__name__)
# A due run that met the family index being built is tried again this much later.
RETRY_MS = 60_000

CAUSE = Cause(tool="graph_decay", client="decay_scheduler")
MAX_SLEEP_S = 3600.0
MIN_SLEEP_S = 1.0
# How often a due run waiting for the family index looks again, and how long it waits at most.
INDEX_RECHECK_MS = 2_000
COLD_WAIT_MS = 3_600_000
ASK_TIMEOUT = 600.0  # a whole-graph run on a large graph, bounded


@dataclass(frozen=True)
class Tick:
    """Check whether a run is due, run it if so, and set the timer for the next check."""


@dataclass(frozen=True)
class TickOutcome:
    ran: bool
    due_at: int | None  # when the next run falls due (None: the log is empty)
    nodes_decayed: int = 0
    edges_decayed: int = 0
    waiting: bool = False  # due, but waiting for a read to build the family index


T = TypeVar("T")


class DecayGraph(Protocol):
    """What the scheduler needs of the graph: GraphGateway's blocking calls."""

    def execute_blocking(self, command: GraphDecay, cause: Cause | None = None) -> Any: ...

    def query_blocking(self, query: Callable[[GraphProjection], T]) -> T: ...


def _schedule_facts(graph: GraphProjection) -> tuple[int | None, bool]:
    """The last run's time (None: never ran) and whether the family index is built."""
    run = newest_run(graph.decay_runs())
    return None if run is None else run.at, family_index_built(graph)


class DecaySchedulerActor(pykka.ThreadingActor):
    """Scheduled decay runs (see the module docstring). `first_event_ms` reads the log's first
    event time (None: empty); `clock` is the family's wall clock (offset included). With
    `timer` False nothing ticks by itself, not even at start: the caller sends every Tick.
    `cold_wait_ms`: how long after the start a due run waits for a read to build the family
    index before building it itself (0: never waits)."""

    def __init__(
        self,
        graph: DecayGraph,
        command: Callable[[], GraphDecay],
        period_ms: int,
        clock: Callable[[], int],
        first_event_ms: Callable[[], int | None],
        *,
        timer: bool = True,
        cold_wait_ms: int = COLD_WAIT_MS,
    ) -> None:
        super().__init__()
        assert period_ms > 0, "a scheduler that is off is not started"
        self._graph = graph
        self._command = command
        self._period_ms = period_ms
        self._clock = clock
        self._first_event_ms = first_event_ms
        self._use_timer = timer
        self._timer: threading.Timer | None = None
        self._wait_until = clock() + cold_wait_ms
        self._told_waiting = False

    def on_start(self) -> None:
        if self._use_timer:  # without it (tests), every tick is the caller's
            self.actor_ref.tell(Tick())

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, Tick):
            return self._tick()
        return None

    def _tick(self) -> TickOutcome:
        now = self._clock()
        try:
            outcome = self._check(now)
        except FamilyIndexBuildingError as building:
            # A served process builds the family index in the background after start-up:
            # try again soon, not a whole period later.
            log.info("decay_scheduled_run_deferred", reason=str(building))
            outcome = TickOutcome(ran=False, due_at=now + min(self._period_ms, RETRY_MS))
        except Exception:  # the edge of a background job: log it, try again at the next tick
            log.exception("decay_scheduled_run_failed")
            outcome = TickOutcome(ran=False, due_at=now + self._period_ms)
        self._set_timer(now + INDEX_RECHECK_MS if outcome.waiting else outcome.due_at)
        return outcome

    def _check(self, now: int) -> TickOutcome:
        reference, indexed = self._graph.query_blocking(_schedule_facts)
        if reference is None:
            reference = self._first_event_ms()
        due_at = None if reference is None else reference + self._period_ms
        if due_at is None or now < due_at:
            return TickOutcome(ran=False, due_at=due_at)
        if indexed or now >= self._wait_until:
            return self._run()
        if not self._told_waiting:
            self._told_waiting = True
            log.info("decay_run_waits_for_index", due_at=due_at, until=self._wait_until)
        return TickOutcome(ran=False, due_at=due_at, waiting=True)

    def _run(self) -> TickOutcome:
        started = time.perf_counter()
        with tallying() as tally:
            result = self._graph.execute_blocking(self._command(), CAUSE)
        assert isinstance(result, GraphDecayResult)
        report = result.report
        log.info(
            "decay_scheduled_run",
            at=report.at,
            nodes_decayed=report.nodes_decayed,
            edges_decayed=report.edges_decayed,
            nodes_flagged_for_pruning=report.nodes_flagged,
            edges_below_threshold=report.edges_below,
            ms=round((time.perf_counter() - started) * 1000, 3),
            events=tally.events,
        )
        return TickOutcome(
            ran=True,
            due_at=report.at + self._period_ms,
            nodes_decayed=report.nodes_decayed,
            edges_decayed=report.edges_decayed,
        )

    def _set_timer(self, due_at: int | None) -> None:
        if not self._use_timer:
            return
        if self._timer is not None:
            self._timer.cancel()
        wait_ms = self._period_ms if due_at is None else due_at - self._clock()
        delay = min(MAX_SLEEP_S, max(MIN_SLEEP_S, wait_ms / 1000))
        timer = threading.Timer(delay, self._tell_tick)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _tell_tick(self) -> None:
        # Stopped while the timer ran out: nothing to do.
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(Tick())


def first_event_time(event_log: EventLog) -> int | None:
    """The wall time of the log's first event (None: the log is empty)."""
    for envelope in event_log.read_from(1):
        return ms_of(envelope.hlc)
    return None
