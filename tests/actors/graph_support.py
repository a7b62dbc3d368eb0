"""Deciding the graph family's commands into a projection at chosen wall times (unit tests)."""

from __future__ import annotations

from collections.abc import Sequence

from actors.commands import Command, CommandResult
from actors.decide import decide
from eventstore.events import AnyEvent
from eventstore.hlc import stamp_of
from projections.graph import GraphProjection
from tests.helpers import stamp

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def run_at(graph: GraphProjection, command: Command, now_ms: int = T0) -> CommandResult:
    """Decide `command` at `now_ms`, stamp its events at that time after the graph's position
    and apply them (as the writer does); a rejection leaves the graph untouched."""
    decision = decide(graph, command, now_ms=now_ms)
    start = graph.position + 1
    graph.apply_all(stamp(decision.events, start_seq=start, hlc=stamp_of(now_ms, start)))
    return decision.result


def apply_at(graph: GraphProjection, events: Sequence[AnyEvent], at: int) -> None:
    """Append `events` as one transaction stamped at wall time `at` after the graph's position."""
    start = graph.position + 1
    graph.apply_all(stamp(events, start_seq=start, hlc=stamp_of(at, start)))
