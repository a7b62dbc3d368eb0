"""`graphmem check`: verify every event and checkpoint in the data dir, and say what to do."""

from __future__ import annotations

from typing import TextIO

from eventstore.lmdb_log import LmdbEventLog
from eventstore.verify import LogReport, verify_log
from graphmem.config import Settings
from graphmem.faults import damaged_advice

__all__ = ["run_check", "summarize"]

SHOWN_PROBLEMS = 100


def run_check(settings: Settings, out: TextIO, err: TextIO) -> int:
    """Verify the data dir's log: one line per problem on `out`, the verdict and what to do
    on `err` (exit code 1); when all is sound, one line on `out` (exit code 0)."""
    if not (settings.data_dir / "data.mdb").is_file():
        where = settings.data_dir
        err.write(f"graphmem check: no graphmem log in {where} (set GRAPHMEM_DIR or --data-dir)\n")
        return 1
    with LmdbEventLog.open(
        settings.data_dir, durability=settings.durability, clock=settings.hybrid_clock()
    ) as event_log:
        report = verify_log(event_log)
    if report.sound:
        out.write(f"graphmem check: {summarize(report)}\n")
        return 0
    for problem in report.problems[:SHOWN_PROBLEMS]:
        out.write(f"{problem.where}: {problem.what}\n")
    if len(report.problems) > SHOWN_PROBLEMS:
        out.write(f"... and {len(report.problems) - SHOWN_PROBLEMS} more\n")
    err.write(f"graphmem check: {_verdict(report)}\n")
    return 1


def summarize(report: LogReport) -> str:
    checkpoints = len(report.checkpoints)
    events = (
        f"{report.events} events (positions 1-{report.last_position}) from "
        f"{len(report.origins)} node(s)"
        if report.events
        else "no events yet"
    )
    return (
        f"the log in {report.path} is sound: {events}, {checkpoints} "
        f"checkpoint{'' if checkpoints == 1 else 's'}, all verified"
    )


def _verdict(report: LogReport) -> str:
    """What is damaged, and what to do about the worst of it."""
    damaged = report.damaged_positions
    other = len(report.problems) - len(damaged)
    bad_checkpoints = sum(1 for c in report.checkpoints if c.problem is not None)
    if damaged:
        first = min(damaged)
        return (
            f"the log in {report.path} is damaged: {len(damaged)} event(s), the first at "
            f"position {first} (of {report.last_position}); {damaged_advice(first, checked=True)}"
        )
    if other > bad_checkpoints:
        return (
            f"the log in {report.path} is damaged: its index or counters disagree with its "
            f"{report.events} events, which all read back; restore the data dir from a backup, "
            "or save the graph with `graphmem export -o FILE` and import FILE into a new data dir"
        )
    return (
        f"{bad_checkpoints} checkpoint(s) in {report.path} are damaged; its {report.events} "
        "events are sound. Start-up skips a damaged checkpoint and folds the log instead; "
        "`graphmem rebuild` saves fresh ones"
    )
