"""The Link a replicating server runs: the receive half in this process, the send half in a
process of its own.

Receiving hands envelopes to the writer (the one appender), so it stays here (NatsLink with
`send=False`: the peers' feeds, discovery, the frontier report, and `replication.json`). Sending
only reads the log, so it runs in the sender process (graphmem.replication.sender), which
takes its nats-py work off this interpreter: in process it cost a local write about 20 % more
CPU. A commit wakes it with one byte on a pipe; its state comes back as JSON lines and is
merged into this link's state.
"""

from __future__ import annotations

from pathlib import Path

from actors.replicator import ReplicatorPort
from eventstore.lmdb_log import LmdbEventLog
from graphmem.config import ReplicationSettings
from graphmem.replication.nats_link import NatsLink
from graphmem.replication.sender import encode_config
from graphmem.replication.sender_process import SenderProcess
from graphmem.replication.status import LinkState

__all__ = ["ProcessLink"]


class ProcessLink:
    """See the module docstring (the replicator's Link protocol)."""

    def __init__(
        self,
        settings: ReplicationSettings,
        event_log: LmdbEventLog,
        state_file: Path | None,
        *,
        discover_every: float = 1.0,
        log_level: str = "INFO",
    ) -> None:
        self._receiver = NatsLink(
            settings, event_log, state_file, discover_every=discover_every, send=False
        )
        config = encode_config(
            settings, Path(event_log.path), event_log.node_id, event_log.durability, log_level
        )
        self._node = event_log.node_id
        self._log = event_log
        self._sender = SenderProcess(
            config, self._receiver.note_sender, self._receiver.note_sender_started
        )

    @property
    def state(self) -> LinkState:
        return self._receiver.state

    @property
    def sender(self) -> SenderProcess:
        return self._sender

    def start(self, port: ReplicatorPort | None) -> None:
        # Until it starts (see SenderProcess), the status says why none runs.
        self._receiver.state.sender.update(running=False, waiting=True)
        self._receiver.start(port)  # first: it takes the sender's state lines
        self._sender.start()
        if self._log.last_origin_seq(self._node) > 0:
            self._sender.need()

    def wake(self) -> None:
        self._sender.wake()

    def stop(self, timeout: float) -> None:
        self._sender.stop(timeout)
        # Before the receiver's last write of the state file: the sender stopped with it.
        self._receiver.note_sender(None, stopped=True)
        self._receiver.stop(timeout)
