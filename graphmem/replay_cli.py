"""The replay commands: `graphmem diff A B`, `graphmem rebuild`, and the graph as of a point
(`graphmem export --as-of`).

They read the data dir's log directly, without starting actors, so they run beside a live
server (LMDB lets several processes share the log).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from tqdm import tqdm  # type: ignore[import-untyped]

from actors.rebuild import PROJECTIONS, RebuildReport, rebuild_checkpoints
from actors.time_travel import AsOfError, models_at, parse_as_of, position_at_time
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from graphmem.config import Settings
from graphmem.history import iso_time
from graphmem.migration import export_jsonl
from projections.graph import GraphProjection
from projections.graph_diff import (
    AddEntity,
    AddObservation,
    AddRelation,
    Change,
    ChangeRelation,
    MoveEntity,
    MoveRelation,
    RemoveEntity,
    RemoveObservation,
    RemoveRelation,
    RetypeEntity,
    diff_graphs,
    encode_change,
)

__all__ = [
    "COMMANDS",
    "MISMATCH_EXIT",
    "Point",
    "ReplayError",
    "add_commands",
    "export_as_of",
    "graph_at",
    "parse_point",
    "print_diff",
    "print_rebuild",
    "resolve_point",
    "run_command",
]

COMMANDS = ("diff", "rebuild")
MISMATCH_EXIT = 3  # `graphmem rebuild` found a checkpoint that disagrees with the log

Out = TextIO


class ReplayError(Exception):
    """A replay command cannot run (no log, a point past its end); the message says why."""


# --- points in the log ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """A point in the log as given: a position, or a time (UTC)."""

    text: str
    at: int | datetime


def parse_point(value: str) -> Point:
    """A log position (a whole number, 0 = before the first event), an ISO-8601 time (UTC
    unless it says otherwise) or a date (the start of that day, UTC): as_of's forms."""
    try:
        return Point(value, parse_as_of(value))
    except AsOfError as problem:
        raise argparse.ArgumentTypeError(str(problem)) from None


def resolve_point(event_log: EventLog, point: Point) -> int:
    """The log position `point` names; a time names the last event written at or before it
    (0 before the first), a position must not be past the log's end."""
    last = event_log.last_position()
    if isinstance(point.at, datetime):
        return position_at_time(event_log, point.at, last)
    if point.at > last:
        raise ReplayError(f"position {point.at} is past the log's end ({last})")
    return point.at


def graph_at(event_log: EventLog, position: int) -> GraphProjection:
    """The graph as of `position`: the nearest checkpoint at or before it, then the log."""
    return models_at(event_log, position).graph


def _describe(event_log: EventLog, position: int) -> str:
    if position == 0:
        return "position 0 (the empty log)"
    envelope = next(iter(event_log.read_from(position)))
    return f"position {position} ({iso_time(envelope.hlc)})"


@contextmanager
def open_log(settings: Settings) -> Iterator[LmdbEventLog]:
    """The data dir's log; a ReplayError if it holds none (never creates one)."""
    if not (settings.data_dir / "data.mdb").is_file():
        raise ReplayError(
            f"no graphmem log in {settings.data_dir} (set GRAPHMEM_DIR or --data-dir)"
        )
    event_log = LmdbEventLog.open(settings.data_dir, durability=settings.durability)
    try:
        yield event_log
    finally:
        event_log.close()


def export_as_of(settings: Settings, point: Point) -> bytes:
    """The official JSONL of the graph as it was at `point`."""
    with open_log(settings) as event_log:
        return export_jsonl(graph_at(event_log, resolve_point(event_log, point)))


# --- graphmem diff -------------------------------------------------------------------------------


def _relation(change: Any) -> str:
    return f"{change.from_entity} -[{change.relation_type}]-> {change.to_entity}"


def _row(change: Change) -> str:
    match change:
        case AddEntity():
            count = len(change.observations)
            return (
                f"+ entity    {change.name} [{change.entity_type}] "
                f"({count} observation{'' if count == 1 else 's'})"
            )
        case RemoveEntity():
            return f"- entity    {change.name} [{change.entity_type}]"
        case MoveEntity():
            return (
                f"> entity    {change.name}: now #{change.at + 1} in the listing "
                "(re-created in between)"
            )
        case RetypeEntity():
            return f"~ entity    {change.name}: type {change.before} -> {change.after}"
        case AddObservation():
            return f"+ obs       {change.entity}: {change.content!r}"
        case RemoveObservation():
            return f"- obs       {change.entity}: {change.content!r}"
        case AddRelation():
            return f"+ relation  {_relation(change)} (weight {change.weight:g})"
        case RemoveRelation():
            return f"- relation  {_relation(change)}"
        case MoveRelation():
            return (
                f"> relation  {_relation(change)}: now #{change.at + 1} in the listing "
                "(re-created in between)"
            )
        case ChangeRelation():
            return (
                f"~ relation  {_relation(change)}: {change.attribute} "
                f"{change.before!r} -> {change.after!r}"
            )


def print_diff(changes: list[Change], out: Out, *, as_json: bool, heading: str = "") -> None:
    """The changes as a table for people (under `heading`) or as JSON lines for machines."""
    if as_json:
        for change in changes:
            out.write(encode_change(change).decode() + "\n")
        return
    count = len(changes)
    out.write(f"{heading}: {count} change{'' if count == 1 else 's'}\n")
    for change in changes:
        out.write(_row(change) + "\n")


def _diff_command(settings: Settings, args: argparse.Namespace, out: Out) -> int:
    with open_log(settings) as event_log:
        first = resolve_point(event_log, args.a)
        second = resolve_point(event_log, args.b)
        changes = diff_graphs(
            graph_at(event_log, first).snapshot(), graph_at(event_log, second).snapshot()
        )
        heading = f"the graph from {_describe(event_log, first)} to {_describe(event_log, second)}"
    print_diff(changes, out, as_json=args.json, heading=heading)
    return 0


# --- graphmem rebuild ----------------------------------------------------------------------------


def print_rebuild(report: RebuildReport, out: Out, err: Out) -> int:
    """Report a rebuild; a checkpoint that disagreed with the log is reported loudly on `err`.
    Returns the exit code."""
    out.write(
        f"rebuilt {', '.join(report.names)} from {report.events:,} events in "
        f"{report.fold_seconds:.2f} s ({report.events_per_second:,.0f} events/s)\n"
    )
    if report.checked:
        checked = ", ".join(f"{name} at {position:,}" for name, position in report.checked)
        verdict = "agree" if not report.mismatches else "DISAGREE"
        out.write(f"checked against the newest checkpoints: {checked}: {verdict}\n")
    else:
        out.write("no earlier checkpoint of this version to check against\n")
    out.write(
        f"saved fresh checkpoints at position {report.position:,} "
        f"({report.saved_bytes / 1e6:.1f} MB)\n"
    )
    for mismatch in report.mismatches:
        err.write(
            f"graphmem rebuild: BUG: the {mismatch.name} checkpoint at position "
            f"{mismatch.position:,} disagrees with the log it was saved from: {mismatch.detail}."
            " It has been deleted; please report this.\n"
        )
    return MISMATCH_EXIT if report.mismatches else 0


def _rebuild_command(settings: Settings, args: argparse.Namespace, out: Out) -> int:
    names = PROJECTIONS if args.projection == "all" else (args.projection,)
    with (
        open_log(settings) as event_log,
        tqdm(
            total=event_log.last_position(),
            file=sys.stderr,
            unit="event",
            unit_scale=True,
            desc="rebuilding",
            dynamic_ncols=True,
        ) as bar,
    ):
        report = rebuild_checkpoints(event_log, names, progress=bar.update)
    return print_rebuild(report, out, sys.stderr)


# --- the commands --------------------------------------------------------------------------------


def add_commands(subparsers: Any) -> None:
    """Register `diff` and `rebuild` on the `graphmem` command's subparsers."""
    diff = subparsers.add_parser(
        "diff",
        help="what changed in the graph between two points of the log",
        description="Print the changes that turn the graph as of A into the graph as of B: "
        "entities added, removed, retyped or re-created; observations added and removed "
        "(each occurrence); relations added, removed or with attributes changed. A and B "
        "are log positions (0: the empty graph) or ISO-8601 times (UTC unless they say; a "
        "date alone is the start of that day); B may be before A. A table for people, or "
        "with --json one JSON object per change (the form projections.graph_diff applies).",
    )
    diff.add_argument("a", type=parse_point, metavar="A", help="the earlier point: POS or TIME")
    diff.add_argument("b", type=parse_point, metavar="B", help="the later point: POS or TIME")
    diff.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    diff.set_defaults(replay=_diff_command)

    rebuild = subparsers.add_parser(
        "rebuild",
        help="refold the read models from the log and save fresh checkpoints",
        description="Fold the whole log from scratch into fresh read models (progress on "
        "stderr), compare them with the newest stored checkpoints where they cover the same "
        "position (a difference is a bug: it is reported, the checkpoint deleted and the "
        f"exit code is {MISMATCH_EXIT}), then save fresh checkpoints at the log's end, "
        "dropping those of older projection versions, and print the events per second. Safe "
        "while a server runs on the same data dir, but a running server keeps the models it "
        "has: it loads the fresh checkpoints when it next starts.",
    )
    rebuild.add_argument(
        "--projection",
        choices=(*PROJECTIONS, "all"),
        default="all",
        help="the read model to rebuild (default: all)",
    )
    rebuild.set_defaults(replay=_rebuild_command)


def run_command(settings: Settings, args: argparse.Namespace) -> int | None:
    """Run the replay command `args` names; None if it names none of them."""
    command: Callable[[Settings, argparse.Namespace, Out], int] | None = getattr(
        args, "replay", None
    )
    if command is None:
        return None
    try:
        return command(settings, args, sys.stdout)
    except ReplayError as problem:
        print(f"graphmem {args.command}: {problem}", file=sys.stderr)
        return 1
