"""`graphmem compact`: collect the tombstones every member has seen (graphmem.compaction)."""

from __future__ import annotations

import argparse
import json
import sys

from graphmem.cli.command import CliError, Subparsers
from graphmem.cli.data_dir import open_log
from graphmem.compaction import compact, local_gate, replicated_gate
from graphmem.config import Settings

__all__ = ["add_parsers"]


def add_parsers(subparsers: Subparsers) -> None:
    """Register `compact`."""
    command = subparsers.add_parser(
        "compact",
        help="drop the records of deletions every member has seen (tombstone collection)",
        description="Collect, in the data dir's graph checkpoint, the tombstones the gate "
        "allows: with replication (GRAPHMEM_REPLICATE), only deletions every member of "
        "GRAPHMEM_REPLICA_MEMBERS has received (see `graphmem replication gate`), nothing "
        "while a member holds collection back; without it, every one. A running server keeps "
        "its own until it restarts: run this with the server stopped. The log is not "
        "rewritten: history and as-of reads still show every deletion.",
    )
    command.add_argument("--json", action="store_true", help="one JSON object instead of text")
    command.set_defaults(run=_compact_command)


def _compact_command(args: argparse.Namespace, settings: Settings) -> int:
    with open_log(settings) as event_log:
        own = event_log.origins()
        node = settings.node_id or event_log.node_id
        if settings.replication.url is None:
            gate = local_gate(own)
        else:
            from graphmem.replication.hub_client import (  # noqa: PLC0415 (nats-py only now)
                HubUnreachableError,
            )

            try:
                gate = replicated_gate(settings, own, node)
            except HubUnreachableError as error:
                raise CliError(str(error)) from None
        done = compact(event_log, gate)
    if args.json:
        report = {
            "node": node,
            "open": gate.open,
            "blocked_by": gate.blocked_by,
            "collectable_up_to": gate.watermark,
            "entities": done.entities,
            "relations": done.relations,
            "checkpoint": done.position or None,
        }
        sys.stdout.write(json.dumps(report) + "\n")
    elif not gate.open:
        why = "".join(f"\n  {reason}" for reason in gate.blocked_by)
        sys.stdout.write(f"nothing collected: the gate is closed:{why}\n")
    else:
        sys.stdout.write(
            f"collected {done.entities:,} entity and {done.relations:,} relation tombstones"
            + (f" (graph checkpoint at {done.position:,})" if done.position else "")
            + "\n"
        )
    return 0
