"""The sender process: this node's events out to the hub, in a process of its own.

Run by the server (graphmem.replication.sender_process), never by hand:
`python -m graphmem.replication.sender WAKE_FD`, its configuration (JSON) the first line on
stdin, not in argv, where a hub URL's password would show in `ps`. It opens the data dir's log to
read it (LMDB lets several processes share it; it never writes), and runs a NatsLink's
outbound half: the hub's copy of this node's stream against the log, the difference published
in order. In the server's process that half cost a write about 20 % more CPU, a third on the
link's thread and the rest in the writer slowed by sharing the interpreter with it (issue 17,
item 7; docs/design-notes.md "The sender in a process of its own").

Its pipes, all from the server:
- stdin: the configuration line, then nothing; its end (EOF) means the server stopped or
  died, and this process exits (bounded: a hard exit if the link does not stop in time):
  no orphan outlives the server.
- WAKE_FD: one byte per local commit; read only while the outbound loop is idle.
- IDLE_FD (optional): a shared byte the loop sets while idle, so that the server writes a
  wake byte only then (graphmem.replication.wake_flag).
- stdout: the link's state as one JSON line per change (about twice a second), which the
  server merges into `replication.json` (status, stats, doctor).
Logs go to stderr (the server's), errors also in the state lines, where the server logs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability
from graphmem.config import ReplicationSettings
from graphmem.logs import configure_logging
from graphmem.replication.status import LinkState
from graphmem.replication.wake_flag import WakeFlag

__all__ = ["STOP_GRACE", "decode_config", "encode_config", "main"]

STOP_GRACE = 5.0  # from the server's end to this process's exit, at most (then a hard exit)
SENDER_NICE = 10  # added to the server's niceness (see main)
STATE_EVERY = 0.5  # seconds between state lines, when the state changed


def encode_config(
    settings: ReplicationSettings,
    data_dir: Path,
    node_id: str,
    durability: Durability,
    log_level: str,
) -> str:
    """The sender's whole configuration as one line (JSON)."""
    replication = {
        key: (str(value) if isinstance(value, Path) else value)
        for key, value in asdict(settings).items()
    }
    return json.dumps(
        {
            "replication": replication,
            "data_dir": str(data_dir),
            "node_id": node_id,
            "durability": durability.value,
            "log_level": log_level,
        }
    )


def decode_config(text: str) -> tuple[ReplicationSettings, Path, str, Durability, str]:
    raw: dict[str, Any] = json.loads(text)
    replication = dict(raw["replication"])
    for key in ("creds", "tls_ca", "tls_cert", "tls_key"):
        if replication.get(key) is not None:
            replication[key] = Path(replication[key])
    replication["members"] = tuple(replication.get("members", ()))
    return (
        ReplicationSettings(**replication),
        Path(raw["data_dir"]),
        str(raw["node_id"]),
        Durability(raw["durability"]),
        str(raw.get("log_level", "INFO")),
    )


def _state_line(state: LinkState) -> None:
    """One JSON line on stdout for the server; a server gone (broken pipe) is noticed on
    stdin, so a failed write is ignored here."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(json.dumps(asdict(state)) + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m graphmem.replication.sender WAKE_FD [IDLE_FD]", file=sys.stderr)
        return 2
    # Ctrl-C at a terminal reaches the whole process group: the server decides when this
    # process stops (it closes stdin), so that it never stops before the server does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    line = sys.stdin.buffer.readline()
    if not line:  # the server is gone already
        return 0
    settings, data_dir, node_id, durability, log_level = decode_config(line.decode())
    wake_fd = int(argv[0])
    # Background work: on a busy machine the server's writer (a client waits on it) goes
    # first; sending a burst's round a little later costs no acknowledged write anything.
    with contextlib.suppress(OSError):
        os.nice(SENDER_NICE)
    os.set_blocking(wake_fd, False)
    configure_logging(log_level, sys.stderr)
    from graphmem.replication.nats_link import NatsLink  # noqa: PLC0415 (after logging is set)

    event_log = LmdbEventLog.open(data_dir, node_id=node_id, durability=durability)
    link = NatsLink(
        settings,
        event_log,
        None,
        send=True,
        receive=False,
        wake_fd=wake_fd,
        idle_flag=WakeFlag(int(argv[1])) if len(argv) == 2 else None,
        state_out=_state_line,
        state_every=STATE_EVERY,
    )
    link.start(None)
    sys.stdin.buffer.read()  # returns at EOF: the server stopped, or died
    # A link that does not stop in time (a hub that hangs a close) must not keep the
    # process: the log is the outbox, the next sender resumes from it.
    threading.Timer(STOP_GRACE, os._exit, args=(0,)).start()
    link.stop(timeout=STOP_GRACE - 1.0)
    event_log.close()
    os._exit(0)  # the timer thread and nats-py's leftovers: nothing left to wait for


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
