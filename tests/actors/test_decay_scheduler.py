"""DecaySchedulerActor driven by its Tick message over a real writer and log whose clock the
test moves (no sleeps: every ask is bounded, and the timer is off)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pykka
import pytest
from structlog.testing import capture_logs

from actors.bridge import BlockingReply
from actors.decay_scheduler import (
    RETRY_MS,
    DecaySchedulerActor,
    Tick,
    TickOutcome,
    first_event_time,
)
from actors.family_index_progress import FamilyIndexProgress
from actors.graph_commands import GraphRelate
from actors.graph_maintenance import decay_command
from actors.graph_tunables import Decay
from actors.graph_writer import BuildFamilyIndex, Execute
from eventstore.events import Cause, DecayApplied
from eventstore.hlc import HybridLogicalClock
from eventstore.memory_log import InMemoryEventLog
from projections.graph import GraphProjection
from projections.graph_family import FamilyIndexBuild, family_index, family_index_built
from tests.actors.graph_support import DAY, T0
from tests.actors.writer_support import WAIT, Writer

DECAY = Decay()


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


class Graph:
    """The scheduler's view of the writer (GraphGateway's blocking calls); `fail` makes the
    next runs raise, as a stopped writer would."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.fail = 0
        self.fail_query = 0
        self.causes: list[Cause | None] = []

    def execute_blocking(self, command: Any, cause: Cause | None = None) -> Any:
        if self.fail:
            self.fail -= 1
            raise TimeoutError("the writer did not answer")
        self.causes.append(cause)
        reply: BlockingReply[Any] = BlockingReply()
        self.writer.ref.tell(Execute(command, cause, reply))
        return reply.wait(WAIT)

    def query_blocking(self, query: Callable[[GraphProjection], Any]) -> Any:
        if self.fail_query:
            self.fail_query -= 1
            raise TimeoutError("the writer did not answer")
        return self.writer.ask(query)


class Setup:
    def __init__(self) -> None:
        self.clock = Clock(T0)
        self.log = InMemoryEventLog(clock=HybridLogicalClock(self.clock))
        self.progress = FamilyIndexProgress()  # the writer's family index build, readable here
        self.writer = Writer(self.log, family_index=self.progress)
        self.graph = Graph(self.writer)
        self.schedulers: list[pykka.ActorRef[DecaySchedulerActor]] = []

    def scheduler(
        self, period_ms: int = DAY, cold_wait_ms: int = 0
    ) -> pykka.ActorRef[DecaySchedulerActor]:
        ref = DecaySchedulerActor.start(
            self.graph,
            lambda: decay_command(DECAY),
            period_ms,
            self.clock,
            lambda: first_event_time(self.log),
            timer=False,
            cold_wait_ms=cold_wait_ms,
        )
        self.schedulers.append(ref)
        return ref

    def runs(self) -> list[DecayApplied]:
        runs: list[DecayApplied] = self.writer.ask(lambda g: g.decay_runs())
        return runs

    def restart_writer(self) -> None:
        """A new writer on the same log, as at a start: no index built yet."""
        self.writer.stop()
        self.progress = FamilyIndexProgress()
        self.writer = self.graph.writer = Writer(self.log, family_index=self.progress)

    def seed(self) -> None:
        self.writer.run(
            GraphRelate(
                from_name="Alice",
                from_type="Person",
                to_name="Atlas",
                to_type="Project",
                relation="WORKS_ON",
                weight=0.8,
            )
        )


def tick(ref: pykka.ActorRef[DecaySchedulerActor]) -> TickOutcome:
    outcome: TickOutcome = ref.ask(Tick(), timeout=WAIT)
    return outcome


@pytest.fixture
def setup() -> Iterator[Setup]:
    made = Setup()
    yield made
    for ref in made.schedulers:
        ref.stop(block=True, timeout=WAIT)
    made.writer.stop()


def test_an_empty_log_is_never_due_and_a_young_graph_waits_a_period_from_its_first_event(
    setup: Setup,
) -> None:
    ref = setup.scheduler()
    assert tick(ref) == TickOutcome(ran=False, due_at=None)
    setup.seed()
    assert tick(ref) == TickOutcome(ran=False, due_at=T0 + DAY)
    assert setup.runs() == []


def test_a_due_run_runs_once_and_the_next_is_due_a_period_after_it(setup: Setup) -> None:
    setup.seed()
    ref = setup.scheduler()
    setup.clock.ms = T0 + DAY
    outcome = tick(ref)
    assert outcome.ran and outcome.due_at == T0 + 2 * DAY
    assert (outcome.nodes_decayed, outcome.edges_decayed) == (2, 1)
    assert [run.at for run in setup.runs()] == [T0 + DAY]
    assert setup.graph.causes == [Cause(tool="graph_decay", client="decay_scheduler")]
    assert not tick(ref).ran  # the same moment: not due
    setup.clock.ms = T0 + 2 * DAY
    assert tick(ref).ran
    assert len(setup.runs()) == 2


def test_ticks_queued_behind_a_run_never_start_a_second_one(setup: Setup) -> None:
    setup.seed()
    ref = setup.scheduler()
    setup.clock.ms = T0 + 3 * DAY
    for _ in range(5):
        ref.tell(Tick())
    tick(ref)  # answered after the five: the mailbox is handled in order
    assert len(setup.runs()) == 1


def test_a_restarted_scheduler_takes_the_last_run_from_the_log_not_from_memory(
    setup: Setup,
) -> None:
    setup.seed()
    first = setup.scheduler()
    setup.clock.ms = T0 + DAY
    assert tick(first).ran
    first.stop(block=True, timeout=WAIT)
    setup.clock.ms = T0 + DAY + DAY // 2
    second = setup.scheduler()
    assert tick(second) == TickOutcome(ran=False, due_at=T0 + 2 * DAY)
    # A run on demand counts too: it postpones the scheduled one.
    setup.writer.run(decay_command(DECAY))
    assert tick(second).due_at == T0 + DAY + DAY // 2 + DAY
    setup.clock.ms = T0 + 3 * DAY
    assert tick(second).ran
    assert [run.at for run in setup.runs()] == [T0 + DAY, T0 + DAY + DAY // 2, T0 + 3 * DAY]


def test_each_run_logs_one_canonical_line_with_its_counts_and_duration(setup: Setup) -> None:
    setup.seed()
    ref = setup.scheduler()
    setup.clock.ms = T0 + 30 * DAY
    with capture_logs() as logs:
        tick(ref)
        tick(ref)
    lines = [line for line in logs if line["event"] == "decay_scheduled_run"]
    assert len(lines) == 1
    line = lines[0]
    assert (line["nodes_decayed"], line["edges_decayed"], line["at"]) == (2, 1, T0 + 30 * DAY)
    assert line["nodes_flagged_for_pruning"] == 0 and line["edges_below_threshold"] == 0
    assert line["ms"] >= 0


def test_a_failed_run_is_logged_and_the_next_tick_runs_it(setup: Setup) -> None:
    setup.seed()
    ref = setup.scheduler()
    setup.clock.ms = T0 + 2 * DAY
    setup.graph.fail = 1
    with capture_logs() as logs:
        outcome = tick(ref)
    assert not outcome.ran
    assert any(line["event"] == "decay_scheduled_run_failed" for line in logs)
    assert ref.is_alive()
    assert tick(ref).ran
    assert len(setup.runs()) == 1


def test_a_failed_look_up_of_the_last_run_is_logged_and_the_actor_lives_on(setup: Setup) -> None:
    setup.seed()
    ref = setup.scheduler()
    setup.clock.ms = T0 + 2 * DAY
    setup.graph.fail_query = 1
    with capture_logs() as logs:
        assert not tick(ref).ran
    assert any(line["event"] == "decay_scheduled_run_failed" for line in logs)
    assert tick(ref).ran


def test_a_due_run_waits_until_a_read_has_built_the_family_index_then_runs(setup: Setup) -> None:
    setup.seed()
    setup.restart_writer()
    ref = setup.scheduler(cold_wait_ms=10 * DAY)
    setup.clock.ms = T0 + 2 * DAY
    with capture_logs() as logs:
        first, second = tick(ref), tick(ref)
    assert first == second == TickOutcome(ran=False, due_at=T0 + DAY, waiting=True)
    events = [line["event"] for line in logs if line["event"].startswith("decay_")]
    assert events == ["decay_run_waits_for_index"]  # logged once
    assert setup.runs() == []
    assert not setup.writer.ask(family_index_built)  # the wait built nothing
    setup.writer.ask(lambda graph: family_index(graph).entity_count)  # a graph read
    assert tick(ref).ran
    assert [run.at for run in setup.runs()] == [T0 + 2 * DAY]


def test_a_due_run_builds_the_index_itself_once_the_cold_wait_is_over(setup: Setup) -> None:
    setup.seed()
    setup.restart_writer()
    hour = DAY // 24
    setup.clock.ms = T0 + DAY  # due as the scheduler starts
    ref = setup.scheduler(cold_wait_ms=hour)
    setup.clock.ms = T0 + DAY + hour - 1
    assert tick(ref).waiting
    setup.clock.ms = T0 + DAY + hour
    assert tick(ref).ran
    assert setup.writer.ask(family_index_built)


def test_a_due_run_that_meets_the_family_index_being_built_is_tried_again_soon(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A served process builds the family index in the background after start-up: a due run
    # meeting it is refused (nothing appended) and retried a minute later, not a period later.
    gate = threading.Event()
    original = FamilyIndexBuild.step

    def held(build: FamilyIndexBuild, budget: int) -> Any:
        return original(build, budget) if gate.is_set() else False

    monkeypatch.setattr(FamilyIndexBuild, "step", held)
    setup.seed()
    ref = setup.scheduler()
    setup.writer.ref.tell(BuildFamilyIndex())
    setup.clock.ms = T0 + 2 * DAY
    with capture_logs() as logs:
        outcome = tick(ref)
    assert not outcome.ran and outcome.due_at == T0 + 2 * DAY + RETRY_MS
    assert [line["event"] for line in logs if line["log_level"] == "error"] == []
    assert setup.runs() == []
    gate.set()
    # The last step's entries are assembled into the index on a thread of their own.
    assert setup.progress.wait_built(WAIT)
    assert tick(ref).ran
    assert len(setup.runs()) == 1
