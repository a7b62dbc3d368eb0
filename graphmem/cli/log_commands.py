"""`graphmem log` and `graphmem history NAME`: the events of the log, filtered, for people
(a table) or scripts (JSON lines).

They read the data dir's log directly, streaming it without starting actors, so they are fast,
run beside a live server, and never hold a large log in memory.
"""

from __future__ import annotations

import argparse
import sys

from graphmem.cli.arguments import parse_point, positive
from graphmem.cli.command import CliError, Subparsers
from graphmem.cli.data_dir import open_log
from graphmem.cli.log_view import LogFilter, print_history, print_log
from graphmem.config import Settings
from projections.history import EVENT_TAGS

__all__ = ["add_parsers", "parse_tx"]


def parse_tx(value: str) -> tuple[str, int]:
    """ORIGIN:TX, as the history shows transactions."""
    origin, sep, tx = value.rpartition(":")
    if not sep or not origin or not tx.isdigit():
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a transaction; write it ORIGIN:TX as history shows it "
            "(e.g. 3f2a9c1b7d4e5f60:17)"
        )
    return origin, int(tx)


def _tag(value: str) -> str:
    if value not in EVENT_TAGS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an event type; use any of: {', '.join(EVENT_TAGS)}"
        )
    return value


def add_parsers(subparsers: Subparsers) -> None:
    """Register `log` and `history`."""
    log = subparsers.add_parser(
        "log",
        help="stream the event log, filtered (table or JSON lines)",
        description="Print the events of the log in log order, with their time, node, "
        "transaction and cause (tool/client), keeping those every given filter matches. "
        "Streams: works on logs of any size.",
    )
    log.add_argument("--entity", metavar="NAME", help="events that touched this entity")
    log.add_argument(
        "--type",
        dest="types",
        metavar="TAG",
        nargs="+",
        action="extend",
        type=_tag,
        help="events of these types (e.g. EntityCreated ObservationAdded)",
    )
    log.add_argument("--origin", metavar="NODE", help="events written by this node")
    log.add_argument(
        "--since",
        type=parse_point,
        metavar="TIME|POS",
        help="events at or after this ISO-8601 time (UTC) or log position",
    )
    log.add_argument(
        "--until",
        type=parse_point,
        metavar="TIME|POS",
        help="events at or before this ISO-8601 time (UTC) or log position",
    )
    log.add_argument(
        "--tx", type=parse_tx, metavar="ORIGIN:TX", help="the events of one transaction"
    )
    log.add_argument("--limit", type=positive, metavar="N", help="stop after N events")
    log.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    log.set_defaults(run=_log_command)

    history = subparsers.add_parser(
        "history",
        help="every event that touched an entity: the provenance of each fact",
        description="Print every event that touched entity NAME (its creation and updates, its "
        "observations, the relations to or from it, renames, merges, its deletion), oldest "
        "first, with time, node, transaction and cause (tool/client). Deleted and former "
        "names have history too. Exit code 1 if no event ever touched NAME.",
    )
    history.add_argument("name", metavar="NAME", help="the entity name, current or former")
    history.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    history.add_argument(
        "--no-observations",
        dest="observations",
        action="store_false",
        help="leave out observation events",
    )
    history.add_argument(
        "--no-relations", dest="relations", action="store_false", help="leave out relation events"
    )
    history.add_argument("--limit", type=positive, metavar="N", help="only the last N events")
    history.set_defaults(run=_history_command)


def _log_command(args: argparse.Namespace, settings: Settings) -> int:
    found = LogFilter(
        entity=args.entity,
        types=frozenset(args.types) if args.types else None,
        origin=args.origin,
        since=args.since,
        until=args.until,
        tx=args.tx,
    )
    with open_log(settings) as event_log:
        print_log(event_log, found, sys.stdout, as_json=args.json, limit=args.limit)
    return 0


def _history_command(args: argparse.Namespace, settings: Settings) -> int:
    with open_log(settings) as event_log:
        shown = print_history(
            event_log,
            args.name,
            sys.stdout,
            as_json=args.json,
            observations=args.observations,
            relations=args.relations,
            limit=args.limit,
        )
    if shown is None:
        raise CliError(f"no history for {args.name}: no event ever touched it")
    return 0
