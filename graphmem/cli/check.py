"""`graphmem check`: verify every event and checkpoint in the data dir, and say what to do."""

from __future__ import annotations

import argparse
import sys

from eventstore.verify import LogReport, verify_log
from graphmem.cli.command import CliError, Subparsers
from graphmem.cli.data_dir import open_log
from graphmem.config import Settings
from graphmem.faults import damaged_advice

__all__ = ["add_parsers", "run_check", "summarize", "verdict"]

SHOWN_PROBLEMS = 100


def add_parsers(subparsers: Subparsers) -> None:
    """Register `check`."""
    check = subparsers.add_parser(
        "check",
        help="verify every event and checkpoint in the data dir",
        description="Read the whole log and every checkpoint and verify them: each event "
        "decodes and sits at its own position, positions run without gaps, each node's "
        "sequence numbers, transactions and clock stamps run in order, the per-node index "
        "matches the log, and each checkpoint's header and checksum hold. Prints one line "
        "per problem (where, what is wrong) and what to do; exit code 1 if anything is "
        "damaged, 0 with a one-line summary when all is sound. Read-only: safe beside a "
        "running server.",
    )
    check.set_defaults(run=run_check)


def run_check(args: argparse.Namespace, settings: Settings) -> int:
    """Verify the data dir's log: one line per problem on stdout, then a CliError with the
    verdict and what to do; when all is sound, one line on stdout (exit code 0)."""
    with open_log(settings) as event_log:
        report = verify_log(event_log)
    out = sys.stdout
    if report.sound:
        out.write(f"graphmem check: {summarize(report)}\n")
        return 0
    for problem in report.problems[:SHOWN_PROBLEMS]:
        out.write(f"{problem.where}: {problem.what}\n")
    if len(report.problems) > SHOWN_PROBLEMS:
        out.write(f"... and {len(report.problems) - SHOWN_PROBLEMS} more\n")
    out.flush()
    raise CliError(verdict(report))


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


def verdict(report: LogReport) -> str:
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
