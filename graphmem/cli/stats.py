"""`graphmem stats`: figures about a log and the graph it folds to, in one streaming pass."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

import msgspec

from eventstore.events import EntityCreated, Envelope
from eventstore.log import EventLog
from graphmem.cli.command import Subparsers
from graphmem.cli.data_dir import open_log
from graphmem.config import Settings
from graphmem.history import iso_time
from graphmem.replication.status import STATE_FILE, read_state, replication_report
from projections.graph import GraphProjection
from projections.history import tag_of
from projections.schemas import SchemaProjection

__all__ = ["add_parsers", "collect_stats", "print_stats"]

CHUNK = 50_000


def _graph_start(event_log: EventLog) -> GraphProjection:
    """The graph as of its newest usable checkpoint (empty without one): less to fold."""
    try:
        found = event_log.checkpoints.load(GraphProjection.name, GraphProjection.version)
        if found is not None:
            graph = GraphProjection.from_snapshot(found.payload)
            if graph.position == found.position:
                return graph
    except Exception:  # a checkpoint only saves time; the fold from scratch is the truth
        pass
    return GraphProjection()


def _dir_size(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for file in files:
            try:
                total += (Path(folder) / file).stat().st_size
            except OSError:  # removed while walking (a temp file)
                continue
    return total


def collect_stats(event_log: EventLog, data_dir: Path | None = None) -> dict[str, Any]:
    """Figures about the log and the graph it folds to, in one streaming pass."""
    by_type: Counter[str] = Counter()
    origins: dict[str, dict[str, int]] = {}
    ever_created: set[str] = set()
    transactions = 0
    first: Envelope | None = None
    last: Envelope | None = None
    graph = _graph_start(event_log)
    covered = graph.position  # what the checkpoint already folded
    schemas = SchemaProjection()
    stream = event_log.read_from(1)
    while chunk := list(itertools.islice(stream, CHUNK)):
        first = first or chunk[0]
        last = chunk[-1]
        for envelope in chunk:
            event = envelope.event
            by_type[tag_of(event)] += 1
            node = origins.setdefault(envelope.origin, {"events": 0, "lastSeq": 0})
            node["events"] += 1
            node["lastSeq"] = max(node["lastSeq"], envelope.origin_seq)
            transactions += envelope.origin_seq == envelope.tx
            if type(event) is EntityCreated:
                ever_created.add(event.name)
        graph.apply_all(e for e in chunk if e.position > covered)
        schemas.apply_all(chunk)
    alive = graph.entity_count()
    return {
        "dataDir": None if data_dir is None else str(data_dir),
        "dataDirBytes": None if data_dir is None else _dir_size(data_dir),
        "events": sum(by_type.values()),
        "eventsByType": dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
        "origins": dict(sorted(origins.items())),
        "transactions": transactions,
        "firstPosition": None if first is None else first.position,
        "lastPosition": None if last is None else last.position,
        "firstTime": None if first is None else iso_time(first.hlc),
        "lastTime": None if last is None else iso_time(last.hlc),
        "entities": {
            "alive": alive,
            "deleted": sum(1 for name in ever_created if not graph.has_entity(name)),
        },
        "relations": graph.relation_count(),
        "observations": sum(len(e.observations) for e in graph.entities()),
        "schemas": sorted(s.type_name for s in schemas.schemas()),
        "checkpoints": [
            {
                "name": c.name,
                "version": c.version,
                "position": c.position,
                "bytes": c.size,
                "problem": c.problem,
            }
            for c in event_log.checkpoints.entries()
        ],
    }


def _size(count: int | None) -> str:
    if count is None:
        return "-"
    if count < 1024:
        return f"{count} B"
    value, unit = count / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def print_stats(figures: dict[str, Any], out: TextIO, *, as_json: bool = False) -> None:
    if as_json:
        out.write(msgspec.json.encode(figures).decode() + "\n")
        return
    f = figures
    lines = [
        f"data dir      {f['dataDir'] or '-'} ({_size(f['dataDirBytes'])} on disk)",
        f"events        {f['events']:,} in {f['transactions']:,} transactions",
        f"positions     {f['firstPosition'] or '-'} .. {f['lastPosition'] or '-'}",
        f"time          {f['firstTime'] or '-'} .. {f['lastTime'] or '-'}",
        f"entities      {f['entities']['alive']:,} alive, {f['entities']['deleted']:,} deleted",
        f"relations     {f['relations']:,} visible",
        f"observations  {f['observations']:,}",
        f"schemas       {', '.join(f['schemas']) or '-'}",
        "by type",
        *(f"  {tag:<22}{n:>12,}" for tag, n in f["eventsByType"].items()),
        "by node",
        *(
            f"  {node:<22}{o['events']:>12,} events, last seq {o['lastSeq']:,}"
            for node, o in f["origins"].items()
        ),
        "checkpoints" + ("" if f["checkpoints"] else "   -"),
        *(
            f"  {c['name']:<12} v{c['version']} at {c['position']:,} ({_size(c['bytes'])})"
            + ("" if c["problem"] is None else f" UNUSABLE: {c['problem']}")
            for c in f["checkpoints"]
        ),
    ]
    if (replication := f.get("replication")) is not None:
        server = replication.get("server")
        state = "off" if not replication["enabled"] else f"on, hub {replication['hub']}"
        if server is not None:
            reachable = "reachable" if server["hub_reachable"] else "NOT reachable"
            state += f" ({reachable} as of {server['as_of']}; {server['to_send']} to send"
            state += f"; last error: {server['last_error']})" if server["last_error"] else ")"
        if replication["problems"]:
            state += f"; {len(replication['problems'])} problem(s): `graphmem replication status`"
        lines.append(f"replication   {state}")
    out.write("\n".join(lines) + "\n")


def add_parsers(subparsers: Subparsers) -> None:
    """Register `stats`."""
    stats = subparsers.add_parser(
        "stats",
        help="figures about the log and the graph it holds",
        description="Print events in total, by type and by node; transactions; the first and "
        "last position and time; entities alive and deleted, relations, observations; schemas "
        "in force; checkpoints; and the data dir's size on disk.",
    )
    stats.add_argument("--json", action="store_true", help="one JSON object instead of text")
    stats.set_defaults(run=_stats_command)


def _stats_command(args: argparse.Namespace, settings: Settings) -> int:
    with open_log(settings) as event_log:
        figures = collect_stats(event_log, settings.data_dir)
        figures["replication"] = replication_report(
            settings.replication.url,
            settings.node_id or event_log.node_id,
            event_log.origins(),
            read_state(settings.data_dir / STATE_FILE),
            event_log.former_node_ids,
        )
    print_stats(figures, sys.stdout, as_json=args.json)
    return 0
