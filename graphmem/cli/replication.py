"""`graphmem replication status` and `graphmem hub`: replication across machines.

`replication status` reads the log's frontiers (what this node holds of every origin) and the
state the running server last wrote (replication.json: the hub's reachability, what the hub
holds, what is still to send, the last error); it never waits on the hub itself. `hub` runs a
nats-server with JetStream in the foreground, from the `graphmem[replication]` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from graphmem.cli.command import CliError, Subparsers
from graphmem.cli.data_dir import open_log
from graphmem.config import Settings, replica_token_problem
from graphmem.replication.gate import tombstone_gate
from graphmem.replication.hub import Hub, HubError, HubLimits
from graphmem.replication.status import STATE_FILE, read_state, replication_report

__all__ = ["add_parsers", "print_report", "status_report"]

DEFAULT_HUB_PORT = 4222


def add_parsers(subparsers: Subparsers) -> None:
    """Register `replication` (with `status`, `gate`, `retire`) and `hub`."""
    replication = subparsers.add_parser(
        "replication",
        help="replication across machines: its state",
        description="Replication through a NATS JetStream hub (GRAPHMEM_REPLICATE).",
    )
    commands = replication.add_subparsers(dest="replication_command", metavar="COMMAND")
    status = commands.add_parser(
        "status",
        help="per origin, how far this node has received and what the hub holds",
        description="Per origin: the events this node holds and how many the hub holds "
        "(as the running server last saw it); what is still to send; whether the hub is "
        "reachable; the last error.",
    )
    status.add_argument("--json", action="store_true", help="one JSON object instead of text")
    status.set_defaults(run=_status_command)
    gate = commands.add_parser(
        "gate",
        help="which deletions every member has seen (tombstone collection's gate)",
        description="Ask the hub for every member's reported frontier (GRAPHMEM_REPLICA_MEMBERS "
        "lists the members, `retire` removes a departed one) and print, per origin, up to "
        "which sequence its tombstones may be collected, or what holds collection back.",
    )
    gate.add_argument("--json", action="store_true", help="one JSON object instead of text")
    gate.set_defaults(run=_gate_command)
    retire = commands.add_parser(
        "retire",
        help="retire a departed member: it no longer holds back tombstone collection",
        description="Mark NODE as departed on the hub. Do it only for a machine that will not "
        "come back with writes it has not sent: its events older than what others hold could "
        "otherwise revive deleted elements.",
    )
    retire.add_argument("node", metavar="NODE")
    retire.set_defaults(run=_retire_command)
    replication.set_defaults(run=_status_command, json=False)

    hub = subparsers.add_parser(
        "hub",
        help="run a NATS JetStream hub for replication (needs graphmem[replication])",
        description="Run nats-server with JetStream in the foreground: the hub servers "
        "replicate through (point them at it with GRAPHMEM_REPLICATE=nats://HOST:PORT). "
        "Loopback by default; limits are explicit. GRAPHMEM_NATS_SERVER may name another "
        "nats-server binary.",
    )
    hub.add_argument(
        "--listen",
        default=f"127.0.0.1:{DEFAULT_HUB_PORT}",
        metavar="HOST:PORT",
        help=f"where clients connect (default 127.0.0.1:{DEFAULT_HUB_PORT}; another host "
        "exposes the hub: put it behind TLS and credentials, see the README)",
    )
    hub.add_argument(
        "--store",
        default=None,
        metavar="DIR",
        help="where JetStream keeps the events (default: <data dir>/hub)",
    )
    hub.add_argument(
        "--max-store",
        type=int,
        default=HubLimits().max_file_store,
        metavar="BYTES",
        help=f"the most bytes of events on disk (default {HubLimits().max_file_store})",
    )
    hub.add_argument(
        "--include",
        default=None,
        metavar="FILE",
        help="a nats-server config file to include (tls { ... }, authorization { ... }): "
        "what a hub reachable beyond this machine needs",
    )
    hub.set_defaults(run=_hub_command)


def status_report(settings: Settings) -> dict[str, Any]:
    with open_log(settings) as event_log:
        received = event_log.origins()
        # GRAPHMEM_NODE_ID, as the server sees it, else the id stored in the data dir.
        node = settings.node_id or event_log.node_id
        former = event_log.former_node_ids
    state = read_state(settings.data_dir / STATE_FILE)
    return replication_report(settings.replication.url, node, received, state, former)


def print_report(report: dict[str, Any], out: TextIO) -> None:
    server = report.get("server")
    enabled = report["enabled"]
    lines = [
        f"node          {report['node']}",
        "replication   "
        + (f"on: {report['hub']}" if enabled else "off (GRAPHMEM_REPLICATE is not set)"),
    ]
    if server is None:
        lines.append("server        no replicating server has run on this data dir")
    else:
        reachable = "reachable" if server["hub_reachable"] else "NOT reachable"
        lines += [
            f"hub           {reachable} (as of {server['as_of']}, server pid {server['pid']})",
            f"to send       {server['to_send']} of this node's events",
            f"sender        {_sender_line(server.get('sender'))}",
            f"wire          {_wire_line(server)}",
            f"last error    {server['last_error'] or '-'}"
            + (f" at {server['last_error_at']}" if server["last_error"] else ""),
        ]
    lines.append("origins       received   hub holds   behind")
    for o in report["origins"]:
        held = "-" if o["hub_holds"] is None else f"{o['hub_holds']:,}"
        behind = "-" if o["behind"] is None else f"{o['behind']:,}"
        me = " (this node)" if o["self"] else " (former id of this data dir)" if o["former"] else ""
        if o["hub_lacks"] is not None:
            me += " (the hub lacks {}..{}: see below)".format(*o["hub_lacks"])
        lines.append(f"  {o['origin']:<12}{o['received']:>9,}   {held:>9}   {behind:>6}{me}")
    lines += [f"PROBLEM       {problem}" for problem in report["problems"]]
    lines += [f"note          {note}" for note in report["notes"]]
    out.write("\n".join(lines) + "\n")


def _wire_line(server: dict[str, Any]) -> str:
    """How this node's events go out: batch messages (version 2), or one per event while a
    node of version 1 is in the group."""
    published, messages = server.get("published") or 0, server.get("messages") or 0
    counts = f" ({published:,} events in {messages:,} messages)" if messages else ""
    if server.get("wire") == 1:
        return (
            "1: one event per message, as a node of the previous version in the group reads "
            f"only those{counts}; batches once every node with a stream is upgraded"
        )
    if server.get("wire") is None:
        return "- (no look at the group yet)"
    return f"{server['wire']}: batch messages{counts}"


def _sender_line(sender: dict[str, Any] | None) -> str:
    """The sender process (this node's events out to the hub), as the server last saw it."""
    if not sender:
        return "-"
    if sender.get("waiting"):
        return "not started: this node has no events of its own yet (it starts at the first)"
    restarts = f", restarted {sender['restarts']} times" if sender.get("restarts") else ""
    if sender.get("running"):
        return f"running (pid {sender.get('pid')}{restarts})"
    return f"NOT running{restarts}: {sender.get('last_exit') or 'stopped with the server'}"


def _status_command(args: argparse.Namespace, settings: Settings) -> int:
    report = status_report(settings)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        print_report(report, sys.stdout)
    return 0


def gate_report(settings: Settings) -> dict[str, Any]:
    from graphmem.replication.hub_client import (  # noqa: PLC0415 (nats-py only now)
        HubUnreachableError,
        read_membership,
    )

    with open_log(settings) as event_log:
        own = event_log.origins()
        node = settings.node_id or event_log.node_id
    try:
        frontiers, retired = read_membership(settings.replication)
    except HubUnreachableError as error:
        raise CliError(str(error)) from None
    gate = tombstone_gate(node, own, settings.replication.members, retired, frontiers)
    return {
        "node": node,
        "members": list(settings.replication.members),
        "retired": retired,
        "frontiers": frontiers,
        "open": gate.open,
        "blocked_by": gate.blocked_by,
        "collectable_up_to": gate.watermark,
    }


def _gate_command(args: argparse.Namespace, settings: Settings) -> int:
    report = gate_report(settings)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    lines = [f"members       {', '.join(report['members']) or '-'}"]
    lines.append(f"retired       {', '.join(report['retired']) or '-'}")
    if report["open"]:
        lines.append("tombstones collectable up to (per origin):")
        lines += [f"  {o:<12}{s:>9,}" for o, s in report["collectable_up_to"].items()]
    else:
        lines.append("nothing is collectable:")
        lines += [f"  {why}" for why in report["blocked_by"]]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _retire_command(args: argparse.Namespace, settings: Settings) -> int:
    from graphmem.replication.hub_client import (  # noqa: PLC0415 (nats-py only now)
        HubUnreachableError,
        retire,
    )

    if (problem := replica_token_problem(args.node)) is not None:
        raise CliError(problem, code=2)
    try:
        retire(settings.replication, args.node)
    except HubUnreachableError as error:
        raise CliError(str(error)) from None
    print(f"retired {args.node}: it no longer holds back tombstone collection", file=sys.stderr)
    return 0


def _hub_command(args: argparse.Namespace, settings: Settings) -> int:
    host, _, port_text = str(args.listen).rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        raise CliError(f"--listen {args.listen!r} is not HOST:PORT", code=2) from None
    if not 0 < port < 65536 or not host:
        raise CliError(f"--listen {args.listen!r} is not HOST:PORT", code=2)
    if args.max_store <= 0:
        raise CliError("--max-store must be a positive number of bytes", code=2)
    store = Path(args.store).expanduser() if args.store else settings.data_dir / "hub"
    include = Path(args.include).expanduser() if args.include else None
    if include is not None and not include.is_file():
        raise CliError(f"--include {args.include!r}: no such file", code=2)
    hub = Hub(
        store,
        host=host.strip("[]"),
        port=port,
        limits=HubLimits(args.max_store),
        include=include,
    )
    if not _loopback(hub.host) and include is None:
        print(
            f"graphmem hub: listening on {hub.host}, beyond this machine: without TLS and "
            "credentials anyone who reaches the port can read and write every memory",
            file=sys.stderr,
        )
    try:
        hub.start(stderr=sys.stderr.fileno())
    except HubError as error:
        raise CliError(str(error)) from None
    print(f"graphmem hub: {hub.url} (store {store})", file=sys.stderr, flush=True)
    stop = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        assert hub.proc is not None
        with contextlib.suppress(KeyboardInterrupt):
            hub.proc.wait()
    finally:
        signal.signal(signal.SIGTERM, stop)
        hub.stop()
    return 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
