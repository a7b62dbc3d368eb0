"""The replay commands: `graphmem diff A B`, `graphmem rebuild`, and the graph as of a point
(`graphmem export --as-of`).

They read the data dir's log directly, without starting actors, so they run beside a live
server (LMDB lets several processes share the log).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from actors.rebuild import PROJECTIONS, RebuildReport, rebuild_checkpoints
from actors.time_travel import models_at
from eventstore.log import EventLog
from graphmem.cli.arguments import Point, parse_point, resolve_point
from graphmem.cli.command import Subparsers
from graphmem.cli.data_dir import open_log
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
    "MISMATCH_EXIT",
    "add_parsers",
    "export_as_of",
    "graph_at",
    "print_diff",
    "print_rebuild",
]

MISMATCH_EXIT = 3  # `graphmem rebuild` found a checkpoint that disagrees with the log

Out = TextIO


def graph_at(event_log: EventLog, position: int) -> GraphProjection:
    """The graph as of `position`: the nearest checkpoint at or before it, then the log."""
    return models_at(event_log, position).graph


def _describe(event_log: EventLog, position: int) -> str:
    if position == 0:
        return "position 0 (the empty log)"
    envelope = next(iter(event_log.read_from(position)))
    return f"position {position} ({iso_time(envelope.hlc)})"


def export_as_of(
    settings: Settings,
    point: Point,
    exporter: Callable[[GraphProjection], bytes] = export_jsonl,
) -> bytes:
    """The graph as it was at `point`, written by `exporter` (the official JSONL by default)."""
    with open_log(settings) as event_log:
        return exporter(graph_at(event_log, resolve_point(event_log, point)))


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


def _diff_command(args: argparse.Namespace, settings: Settings) -> int:
    with open_log(settings) as event_log:
        first = resolve_point(event_log, args.a)
        second = resolve_point(event_log, args.b)
        changes = diff_graphs(
            graph_at(event_log, first).snapshot(), graph_at(event_log, second).snapshot()
        )
        heading = f"the graph from {_describe(event_log, first)} to {_describe(event_log, second)}"
    print_diff(changes, sys.stdout, as_json=args.json, heading=heading)
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


def _rebuild_command(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm  # type: ignore[import-untyped]  # noqa: PLC0415 (only here)

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
    return print_rebuild(report, sys.stdout, sys.stderr)


# --- the commands --------------------------------------------------------------------------------


def add_parsers(subparsers: Subparsers) -> None:
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
    diff.set_defaults(run=_diff_command)

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
    rebuild.set_defaults(run=_rebuild_command)
