"""NatsLink: the wire half of the replicator, a nats-py client of one JetStream hub.

It runs its own asyncio loop on its own thread, so a slow or absent hub never touches the
MCP edge. Three kinds of task share one connection:

- outbound: this node's stream on the hub says what was sent (its last message's last
  origin_seq); the log says what exists (last origin_seq). The difference is published in
  order, as batch messages of consecutive events (graphmem.replication.batches) once every
  node of the group reads them, else one message per event (wire version 1), each carrying
  `Nats-Msg-Id` <node>:<first>-<last> (<node>:<seq> for one event: a retry after a lost ack
  is dropped as a duplicate) and `Nats-Expected-Last-Sequence`, the stream sequence it must
  follow (a publish out of place is refused). Nothing is remembered between rounds: after a
  reconnect, a restart or a hub that lost its store, the next round asks the hub again.
- inbound, one per peer stream: an ordered consumer from the message holding the log's last
  origin_seq of that peer + 1 (found by a bounded binary search over the stream's messages'
  ranges); events it holds already are skipped by the log; whole transactions are handed
  to the ReplicatorActor (the writer appends and folds them); a gap (a purged stream)
  re-subscribes from the first missing one.
- discovery: lists the group's streams every `discover_every` seconds and starts a feed for
  each new peer; it also notes how far the hub holds every node (for the status).

A bad URL or an unreachable hub is logged (once per distinct error) and retried with
backoff; local writes go on meanwhile, the log being the outbox. The state is written to
`replication.json` in the data dir for `graphmem replication status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, MaxPayloadError
from nats.js.api import (
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, NoKeysError, NotFoundError

from actors.bridge import AsyncReply
from actors.replicator import ReplicatorPort, complete_transactions
from eventstore.events import Envelope, decode_envelope
from eventstore.log import EventLog, LogError, RemoteAppend
from graphmem.config import ReplicationSettings
from graphmem.replication import batches, names
from graphmem.replication.connect import auth_options
from graphmem.replication.status import LinkState, redact, write_state
from graphmem.replication.wake_flag import WakeFlag

__all__ = ["NatsLink"]

log = structlog.get_logger(__name__)

_MSG_ID, _EXPECTED_LAST, _TX_END, _BATCH = (
    h.encode() for h in (names.MSG_ID, names.EXPECTED_LAST, names.TX_END, names.BATCH)
)
_ENVELOPE, _RECORD, _TX = operator.itemgetter(0), operator.itemgetter(1), operator.attrgetter("tx")
PUBLISH_BATCH = 1000  # events per outbound round, one message each (wire version 1)
PUBLISH_BATCH_V2 = 4096  # events per outbound round in batch messages (a few messages)
APPLY_BATCH = 5000  # records per hand-over to the writer (whole transactions)
ACK_TIMEOUT = 10.0  # an ack lost in a disconnect: re-read the stream and resume
APPLY_TIMEOUT = 150.0
IDLE_RECHECK = 5.0  # the outbound loop looks again even when nobody woke it
COALESCE = 0.02  # in a burst of commits, one outbound round per this many seconds
# ... and per this many once a round carried BUSY_ROUND events or more: commits are coming
# fast, and a round's fixed CPU (a log read, a flush, an ack) is spread over more of them.
COALESCE_BUSY = 0.05
BUSY_ROUND = 64
# ... and per this many once a round carried BULK_ROUND events or more (10,000 events/s or
# more coming in): a round's fixed CPU, the sender's and the hub's (about 1 ms and 0.5 ms on a
# shared 2-core box), was then half of what sending cost per event.
COALESCE_BULK = 0.1
BULK_ROUND = 512
MAX_BACKOFF = 30.0  # between attempts to connect
FEED_BACKOFF = 5.0  # between attempts to follow a peer's stream (e.g. not recreated yet)
DUPLICATE_WINDOW = 120.0


class NatsLink:
    """See the module docstring."""

    def __init__(
        self,
        settings: ReplicationSettings,
        event_log: EventLog,
        state_file: Path | None,
        *,
        discover_every: float = 1.0,
        send: bool = True,
        receive: bool = True,
        wake_fd: int | None = None,
        idle_flag: WakeFlag | None = None,
        state_out: Callable[[LinkState], None] | None = None,
        state_every: float = 1.0,
    ) -> None:
        """`send` runs the outbound task, `receive` the peers' feeds, discovery and the
        frontier report (the server runs each half in a process of its own: see
        graphmem.replication.sender). `wake_fd`, the read end of a pipe, wakes an idle
        outbound loop (one byte per commit, written by another process); `state_out` takes
        the state instead of `state_file`, every `state_every` seconds it changed."""
        assert settings.url is not None, "only started when replication is configured"
        self._send, self._receive = send, receive
        self._wake_fd = wake_fd
        self._idle_flag = idle_flag
        self._state_out = state_out
        self._state_every = state_every
        # The sender process's last error stamp, so each of its errors is taken once.
        self._sender_error_at: float | None = None
        self._settings = settings
        self._urls = [u.strip() for u in settings.url.split(",") if u.strip()]
        self._log = event_log
        self._node = event_log.node_id
        self._group = settings.group
        self._state_file = state_file
        self._discover_every = discover_every
        self._state = LinkState(
            hub=redact(settings.url), group=self._group, node=self._node, connected=False
        )
        self._port: ReplicatorPort | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main_task: asyncio.Task[None] | None = None
        self._changed: asyncio.Event | None = None
        self._feeds: dict[str, asyncio.Task[None]] = {}
        self._state_dirty = True
        self._last_logged_error: str | None = None
        self._closed_event: asyncio.Event | None = None
        self._wake_pending = False
        # Set by the outbound loop before it reads how far the log goes, cleared once it has
        # something to send: a commit while it is set wakes it (see wake).
        self._idle = False
        self._resync = False  # set on reconnect: the outbound loop asks the hub again
        # Whether to send batch messages (every node of the group reads them), the nodes that
        # do not (as last logged), and the last origin_seq the hub acknowledged to this process.
        self._batches = False
        self._old_readers: list[str] = []
        self._acked = 0
        # Per peer: the stream's (first, last) sequence when their origin_seqs were last read.
        self._seen_spans: dict[str, tuple[int, int]] = {}
        self._js: JetStreamContext | None = None
        self._nc: Client | None = None
        # Set on reconnect: cuts short the outbound loop's pause after an error.
        self._reconnected = asyncio.Event()

    # --- the Link protocol (called from other threads) --------------------------------------

    def start(self, port: ReplicatorPort | None) -> None:
        self._port = port
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="replication-link", daemon=True
        )
        self._thread.start()
        started.wait(5.0)

    def wake(self) -> None:
        # Called on the writer's thread after every commit: one cross-thread wake-up until
        # the loop has taken it, not one per commit (each would switch threads).
        # While the outbound loop is busy (a round, or gathering a burst) it reads the log
        # again before it waits, so only an idle loop is woken: a wake per commit in a burst
        # made the loop's thread contend with the writer for the interpreter.
        loop = self._loop
        if loop is None or self._wake_pending or not self._idle:
            return
        self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # the loop closed at shutdown
            loop.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        self._wake_pending = False
        if self._changed is not None:
            self._changed.set()

    def _set_idle(self, idle: bool) -> None:
        """Mark the outbound loop idle (waiting for a commit) or busy. With a wake pipe, an
        idle loop watches it and a busy one does not: a burst's bytes wait in the pipe rather
        than wake this process once per commit, and are drained here before the loop reads
        the log (a commit after that read writes a byte that wakes it)."""
        self._idle = idle
        if self._idle_flag is not None:  # before the drain below (see WakeFlag)
            self._idle_flag.set(idle=idle)
        fd, loop = self._wake_fd, self._loop
        if fd is None or loop is None:
            return
        if idle:
            _drain(fd)
            loop.add_reader(fd, self._on_wake_pipe)
        else:
            loop.remove_reader(fd)

    def _on_wake_pipe(self) -> None:
        fd, loop = self._wake_fd, self._loop
        assert fd is not None and loop is not None
        loop.remove_reader(fd)
        if _drain(fd):  # the writer's end closed: the server is gone (the sender exits)
            log.info("replication_wake_pipe_closed")
        if self._changed is not None:
            self._changed.set()

    def stop(self, timeout: float) -> None:
        loop, task = self._loop, self._main_task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def state(self) -> LinkState:
        return self._state

    def note_sender(
        self, report: dict[str, Any] | None, exited: str | None = None, *, stopped: bool = False
    ) -> None:
        """The sender process's state line (`report`), its unexpected exit (`exited`, what
        happened) or its stop with the server (`stopped`): merged into this link's state on
        its loop (called from the process's watcher)."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed at shutdown
                loop.call_soon_threadsafe(self._merge_sender, report, exited, stopped)

    def _merge_sender(
        self, report: dict[str, Any] | None, exited: str | None, stopped: bool = False
    ) -> None:
        state, me = self._state, self._node
        sender = state.sender
        if stopped:
            sender.update(running=False, connected=False)
        if report is not None:
            sender.update(
                pid=report.get("pid"), running=True, connected=bool(report.get("connected"))
            )
            for name in ("to_send", "published", "rounds", "messages", "wire"):
                if isinstance(value := report.get(name), int):
                    setattr(state, name, value)
            if isinstance(held := report.get("hub_holds", {}).get(me), int):
                state.hub_holds[me] = held
            at = report.get("last_error_at")
            if report.get("last_error") and at != self._sender_error_at:
                self._sender_error_at = at
                self._error(str(report["last_error"]))
        if exited is not None:
            sender.update(running=False, connected=False, last_exit=exited)
            self._error(exited)
            # What is left to send, from the log and the hub's last known copy: the
            # process that counted it is gone.
            state.to_send = max(self._log.last_origin_seq(me) - state.hub_holds.get(me, 0), 0)
        self._state_dirty = True

    def note_sender_started(self, pid: int, restarts: int) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._sender_started, pid, restarts)

    def _sender_started(self, pid: int, restarts: int) -> None:
        self._state.sender.update(pid=pid, running=True, restarts=restarts)
        self._state.sender.pop("waiting", None)
        self._state_dirty = True

    # --- the loop -----------------------------------------------------------------------------

    def _run(self, started: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._changed = asyncio.Event()
            self._main_task = asyncio.current_task()
            started.set()
            await self._main()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(main())

    async def _main(self) -> None:
        writer = asyncio.create_task(self._write_state_every(self._state_every))
        try:
            backoff = 0.5
            while True:
                try:
                    nc = await nats.connect(**self._connect_options())
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    self._error(f"cannot reach the hub: {_describe(error)}")
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF)
                    continue
                backoff = 0.5
                await self._serve(nc)
        finally:
            writer.cancel()
            self._state.connected = False
            self._flush_state()

    async def _serve(self, nc: Client) -> None:
        self._set_connected(True)
        log.info("replication_connected", hub=self._state.hub, group=self._group)
        self._nc = nc
        js = self._js = nc.jetstream(timeout=5.0)
        tasks = []
        if self._send:
            tasks.append(asyncio.create_task(self._outbound(js)))
        if self._receive:
            tasks.append(asyncio.create_task(self._announce_reader(js)))
            tasks.append(asyncio.create_task(self._discover(js)))
            tasks.append(asyncio.create_task(self._report_frontier(js)))
        try:
            closed = asyncio.Event()
            self._closed_event = closed
            await closed.wait()  # set by closed_cb: nats-py gave up; connect anew
        finally:
            for task in [*tasks, *self._feeds.values()]:
                task.cancel()
            await asyncio.gather(*tasks, *self._feeds.values(), return_exceptions=True)
            self._feeds.clear()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.close(), 2.0)
            self._set_connected(False)

    def _connect_options(self) -> dict[str, Any]:
        settings = self._settings

        async def on_error(error: Exception) -> None:
            self._error(f"hub connection: {_describe(error)}")

        async def on_disconnected() -> None:
            self._set_connected(False)

        async def on_reconnected() -> None:
            # Ordered consumers otherwise wait for missed heartbeats: restart every feed
            # from the log's frontier, and look at what is left to send.
            self._set_connected(True)
            self._resync = True
            js = self._js
            for peer, task in list(self._feeds.items()):
                task.cancel()
                if js is not None:  # at once, rather than at the next discovery
                    self._feeds[peer] = asyncio.create_task(self._inbound(js, peer))
            self._reconnected.set()
            if self._changed is not None:
                self._changed.set()

        async def on_closed() -> None:
            if self._closed_event is not None:
                self._closed_event.set()

        options: dict[str, Any] = {
            "servers": self._urls,
            "name": f"graphmem-{self._node}",
            "connect_timeout": 2,
            "reconnect_time_wait": 1,
            "max_reconnect_attempts": -1,
            "allow_reconnect": True,
            "ping_interval": 5,
            "max_outstanding_pings": 2,
            "error_cb": on_error,
            "disconnected_cb": on_disconnected,
            "reconnected_cb": on_reconnected,
            "closed_cb": on_closed,
        }
        options.update(auth_options(settings))
        return options

    # --- outbound -----------------------------------------------------------------------------

    async def _outbound(self, js: JetStreamContext) -> None:
        changed = self._changed
        assert changed is not None
        stream = names.stream_name(self._group, self._node)
        subject = names.subject(self._group, self._node)
        # What the hub holds of this node, as the last acks said: its stream's last sequence
        # and the last origin_seq in it. None: ask the hub (at the start, after a reconnect, a
        # refusal or a lost ack, and every IDLE_RECHECK idle).
        known: tuple[int, int] | None = None
        last_round = 0.0  # the loop's clock when the last round began
        window = COALESCE  # from last_round to the next round in a burst
        full = False  # whether the last round sent a whole batch (more were waiting)
        while True:
            try:
                changed.clear()  # a wake from now on triggers another round
                self._reconnected.clear()
                if self._resync:
                    self._resync, known = False, None
                asked = known is None
                held: Envelope | None = None  # the hub's last event of this node, when asked
                if known is None:
                    known, held = await self._ask_hub(js, stream)
                hub_last = known[1]
                mine = self._note_to_send(hub_last)
                if (asked or hub_last > mine) and not self._same_history(
                    stream, held, hub_last, mine
                ):
                    await _wait(changed, IDLE_RECHECK)  # paused: the error says what to do
                    known = None
                    continue
                if hub_last == mine:
                    if not await self._idle_until_woken(changed, last_round + window):
                        known = None  # nothing came: a fresh look at the hub
                    continue
                if self._idle:
                    self._set_idle(False)
                if not full and asyncio.get_running_loop().time() < last_round + window:
                    # Commits that came in during the last round: gather the rest of the
                    # burst too (a backlog, after a full round, goes on at once).
                    await _until(last_round + window)
                    continue
                # Read on this loop's own thread: a thread hop per round cost more than the
                # read (LMDB, at most PUBLISH_BATCH + 1 records).
                last_round = asyncio.get_running_loop().time()
                known, sent = await self._send_round(js, subject, known, mine)
                full = sent > (PUBLISH_BATCH_V2 if self._batches else PUBLISH_BATCH)
                window = _window_after(sent)
                if known is None:
                    await self._pause(0.5)
                elif not full:
                    # The next round is a window away whatever comes meanwhile: look at the
                    # log then, once, rather than now and again when the window ends (a read
                    # transaction each, a fixed cost of every round in a burst).
                    await _until(last_round + window)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                known = None
                self._error(f"sending to the hub: {_describe(error)}")
                await self._pause(1.0)

    async def _idle_until_woken(self, changed: asyncio.Event, gather_until: float) -> bool:
        """Nothing left to send: wait for a commit (True), or IDLE_RECHECK (False)."""
        if not self._idle:
            # Idle (the flag set, the wake pipe drained), then the caller reads the log again:
            # a commit after that read wakes the loop. Only here, not before every read: in a
            # burst the loop never goes idle, so the writer writes no wake byte and this
            # process toggles no watcher per round.
            self._set_idle(True)
            return True
        woken = await _wait(changed, IDLE_RECHECK)
        self._set_idle(False)
        if woken:
            # A commit after a quiet spell goes out at once; commits in a burst gather so
            # that one round (a fixed cost in this process's CPU) sends them all: at most one
            # round per window.
            await _until(gather_until)
        return woken

    def _note_to_send(self, hub_last: int) -> int:
        """Note what the hub holds of this node and what is left; the log's last origin_seq."""
        me = self._node
        self._state.hub_holds[me] = hub_last
        mine = self._log.last_origin_seq(me)
        self._state.to_send = max(mine - hub_last, 0)
        self._state_dirty = True
        return mine

    async def _ask_hub(
        self, js: JetStreamContext, stream: str
    ) -> tuple[tuple[int, int], Envelope | None]:
        """A fresh look: where the stream stands (see _hub_copy), and whether to send
        batches."""
        stream_last, hub_last, held = await self._hub_copy(js, stream)
        try:
            self._batches = await self._group_reads_batches(js)
        except (asyncio.CancelledError, ConnectionClosedError):
            raise
        except Exception as error:  # e.g. a user not allowed the bucket: what all nodes read
            self._error(f"reading the group's wire versions: {_describe(error)}")
            self._batches = False
            self._state.wire = 1
        return (stream_last, hub_last), held

    async def _hub_copy(
        self, js: JetStreamContext, stream: str
    ) -> tuple[int, int, Envelope | None]:
        """Where this node's stream stands: its last sequence, the last origin_seq it holds,
        and that event (None when the stream is empty or its messages were purged). A stream
        whose messages were all purged keeps its sequence but says nothing of origin_seq:
        sending resumes after what this process saw acknowledged, else from the start (peers
        skip what they hold: re-sent, never lost)."""
        stream_last = await self._ensure_stream(js)
        if stream_last == 0:
            return 0, 0, None
        try:
            held = _records_of(await js.get_msg(stream, stream_last))
        except NotFoundError:
            return stream_last, self._acked, None
        last = decode_envelope(held[-1])
        return stream_last, last.origin_seq, last

    async def _group_reads_batches(self, js: JetStreamContext) -> bool:
        """Whether every node with a stream in the group reads batch messages (says so in the
        wire bucket): a node of wire version 1 would fail to decode one, so while one is
        there this node sends one message per event, as it does."""
        readers = await self._announce_wire(js)
        nodes = {_node_of(self._group, info.config.subjects) for info in await _all_streams(js)}
        old = sorted(n for n in nodes if n is not None and n != self._node and n not in readers)
        if old != self._old_readers:
            self._old_readers = old
            if old:
                log.warning("replication_wire_v1_peers", peers=old, sending="one event per message")
        self._state.wire = 1 if old else names.WIRE_VERSION
        return not old

    async def _announce_wire(self, js: JetStreamContext) -> set[str]:
        """Say in the group's wire bucket that this node reads batch messages; the nodes that
        say so."""
        bucket = names.wire_bucket(self._group)
        try:
            kv = await js.key_value(bucket)
        except NotFoundError:
            kv = await js.create_key_value(bucket=bucket, history=1)
        await kv.put(self._node, str(names.WIRE_VERSION).encode())
        try:
            keys = await kv.keys()
        except NoKeysError:
            return set()
        readers = set()
        for key in keys:
            with contextlib.suppress(KeyNotFoundError, ValueError):
                entry = await kv.get(key)
                if int((entry.value or b"0").decode()) >= names.WIRE_VERSION:
                    readers.add(key)
        return readers

    def _same_history(self, stream: str, held: Envelope | None, hub_last: int, mine: int) -> bool:
        """Whether the hub's copy of this node's events is this log's (asked after every
        fresh look at the stream: at the start, after a reconnect, a refusal or an idle
        spell). False, with the error set, when the hub holds events this log lacks, or when
        its last one is not this log's event of that number: another data dir writes as this
        node (a copied data dir, or one restored with the same GRAPHMEM_NODE_ID), and
        publishing on would put this log's events after a history that is not theirs while
        peers drop the ones whose numbers they hold. Sending stays paused until fixed."""
        me = self._node
        if hub_last > mine:
            self._error(
                f"the hub holds {hub_last} events of node {me} but its log only {mine} "
                "(restored from a backup with the same node id?): sending is paused so that "
                "the hub's copy is not contradicted; start this data dir with a new "
                f"GRAPHMEM_NODE_ID, or remove the hub's stream {stream} if the log is the "
                "one to keep"
            )
            return False
        if held is None:  # empty, or purged: nothing there contradicts this log
            return True
        theirs = held
        ours = self._log.read_origin(me, hub_last, hub_last)[0]
        if (theirs.origin, theirs.hlc, theirs.tx) == (ours.origin, ours.hlc, ours.tx):
            return True
        self._error(
            f"the hub's event {hub_last} of node {me} is not this log's event {hub_last}: "
            f"another data dir writes as {me} too (a copy of this one, or one restored from "
            "a backup with the same GRAPHMEM_NODE_ID); sending is paused, as peers would drop "
            "this log's events as duplicates of that one's: give one of them a new "
            "GRAPHMEM_NODE_ID (`graphmem restore` gives a restored data dir one)"
        )
        return False

    async def _pause(self, seconds: float) -> None:
        """Wait after a failure, but no longer once the connection is back (since this
        round began: the round clears the flag first)."""
        await _wait(self._reconnected, seconds)

    async def _send_round(
        self, js: JetStreamContext, subject: str, hub: tuple[int, int], mine: int
    ) -> tuple[tuple[int, int] | None, int]:
        """Send the log past what the hub holds (`hub`: stream sequence, origin_seq), one
        round's worth (`mine`: the log's last origin_seq of this node, read before): what the
        hub acknowledged (see _publish) and how many records were read (one more than a
        round: more wait)."""
        # The records go out as the log stores them: decoding each and encoding it again for
        # the wire was a third of this thread's CPU per event. One more than a round is read,
        # when there is one, to know whether the round's last transaction ends in it; `mine`
        # always ends one (a transaction commits whole).
        size = PUBLISH_BATCH_V2 if self._batches else PUBLISH_BATCH
        count = min(size + 1, mine - hub[1])
        records = self._log.read_origin_records(self._node, hub[1] + 1, hub[1] + count)
        if not records:  # e.g. the log's counter ahead of its index: said by its own reader
            raise LogError(f"this node's events from {hub[1] + 1} are not in the log")
        after = records[size][0] if len(records) > size else None
        return await self._publish(js, subject, records[:size], after, hub[0]), len(records)

    async def _publish(
        self,
        js: JetStreamContext,
        subject: str,
        batch: list[tuple[Envelope, bytes]],
        after: Envelope | None,
        stream_last: int,
    ) -> tuple[int, int] | None:
        """Publish `batch`, records as the log stores them (`after` is the record that
        follows it, if read: whether the batch's last transaction ends there); the last
        origin_seq the hub acknowledged, None when it refused one or the ack did not come (the
        caller asks the hub where it stands).

        Only the last message asks for an ack. Each carries the expected last sequence, so
        the stream stores them in order or refuses every one from the first it cannot store
        (one connection keeps their order): the last one's ack at its own sequence vouches
        for all. An ack per message cost this process more CPU than the local write itself
        (a future, a reply inbox and a parsed reply each), taken from the writer's share of
        the interpreter."""
        me = self._node
        nc = self._nc
        assert nc is not None
        messages = _messages(
            me, batch, after, stream_last, as_batches=self._batches, max_payload=nc.max_payload
        )
        head = f"HPUB {subject} ".encode()
        if unacked := b"".join(_hpub(head, h, p) for h, p in messages[:-1]):
            await _queue_raw(nc, unacked)
        last_headers, payload = messages[-1]
        seq = batch[-1][0].origin_seq
        stream_seq = stream_last + len(messages)
        future = await js.publish_async(subject, payload, headers=_header_dict(last_headers))
        # Cancelled at shutdown or on a timeout: retrieve its outcome, so asyncio does not
        # log "exception was never retrieved".
        future.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        try:
            async with asyncio.timeout(ACK_TIMEOUT):  # no task per wait, unlike wait_for
                ack = await asyncio.shield(future)
        except TimeoutError:
            return None  # the ack lost in a disconnect
        except Exception as error:  # refused: this one, or one before it and so every later
            self._error(f"the hub refused an event: {_describe(error)}")
            return None
        if ack.seq != stream_seq:
            self._error(
                f"the hub stored event {seq} of node {me} at sequence "
                f"{ack.seq}, not {stream_seq}: re-reading where it stands"
            )
            return None
        self._state.rounds += 1
        self._state.messages += len(messages)
        if not ack.duplicate:
            self._state.published += len(batch)
        self._acked = seq
        self._clear_error()
        return stream_seq, seq

    async def _ensure_stream(self, js: JetStreamContext) -> int:
        name = names.stream_name(self._group, self._node)
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            info = await self._add_stream(js, name)
            log.info("replication_stream_created", stream=name)
        return int(info.state.last_seq)

    async def _add_stream(self, js: JetStreamContext, name: str) -> Any:
        """This node's stream on the hub. The hub reserves its whole `max_bytes` in its
        store at once, so a hub with a full store refuses the next node's stream: said as
        what to do, for replication status and the log, rather than NATS's words."""
        try:
            return await js.add_stream(
                StreamConfig(
                    name=name,
                    subjects=[names.subject(self._group, self._node)],
                    retention=RetentionPolicy.LIMITS,
                    storage=StorageType.FILE,
                    max_bytes=self._settings.max_stream_bytes,
                    max_msgs=-1,
                    max_age=0,
                    discard=DiscardPolicy.NEW,  # full: refuse new events, never drop old ones
                    duplicate_window=DUPLICATE_WINDOW,
                    num_replicas=self._settings.stream_replicas,
                    allow_direct=True,
                )
            )
        except APIError as error:
            if error.err_code != NO_ROOM_ERR_CODE:
                raise
            raise HubFullError(self._settings.max_stream_bytes) from error

    async def _announce_reader(self, js: JetStreamContext) -> None:
        """Say once per connection that this node reads batch messages (a node that never
        writes runs no sender, and must still be counted before peers send it batches)."""
        backoff = 0.5
        while True:
            try:
                await self._announce_wire(js)
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._error(f"announcing this node's wire version: {_describe(error)}")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, FEED_BACKOFF)

    # --- discovery ----------------------------------------------------------------------------

    async def _discover(self, js: JetStreamContext) -> None:
        while True:
            try:
                for info in await _all_streams(js):
                    node = _node_of(self._group, info.config.subjects)
                    if node is None:
                        continue
                    await self._note_span(js, node, info)
                    if node == self._node:
                        continue
                    feed = self._feeds.get(node)
                    if feed is None or feed.done():
                        self._feeds[node] = asyncio.create_task(self._inbound(js, node))
                self._state.peers = sorted(self._feeds)
                self._state_dirty = True
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._error(f"listing the hub's streams: {_describe(error)}")
            await asyncio.sleep(self._discover_every)

    async def _note_span(self, js: JetStreamContext, node: str, info: Any) -> None:
        """The first and last origin_seq the hub holds of `node` (for the status: what is left
        to receive, a purged hole), read from its first and last message when the stream's
        sequences moved since the last look."""
        first, last = int(info.state.first_seq), int(info.state.last_seq)
        if self._seen_spans.get(node) == (first, last):
            return
        stream = names.stream_name(self._group, node)
        if last == 0 or int(info.state.messages) == 0:
            self._state.hub_holds[node] = self._state.hub_holds.get(node, 0)
            self._state.hub_first[node] = self._state.hub_holds[node] + 1 if last else 0
        else:
            low = await self._span_at(js, stream, first)
            high = await self._span_at(js, stream, last)
            if low is None or high is None:
                return  # moved meanwhile: the next look reads them again
            self._state.hub_first[node], self._state.hub_holds[node] = low[0], high[1]
        self._seen_spans[node] = (first, last)

    async def _span_at(self, js: JetStreamContext, stream: str, seq: int) -> tuple[int, int] | None:
        """The first and last origin_seq of the stream's message `seq` (None: not there)."""
        try:
            msg = await js.get_msg(stream, seq)
        except NotFoundError:
            return None
        span = batches.message_range(msg.headers)
        if span is not None:
            return span
        origin_seq = decode_envelope(bytes(msg.data or b"")).origin_seq
        return origin_seq, origin_seq

    async def _locate(self, js: JetStreamContext, stream: str, origin_seq: int) -> int:
        """The stream sequence of the message holding `origin_seq`, or of the first after it
        (the stream's end when none): a binary search over the messages' spans, at most about
        log2(messages) + 2 reads of one message. A stream of version 1 messages alone has
        stream sequence == origin_seq, which the first read confirms."""
        info = await js.stream_info(stream)
        first, last = int(info.state.first_seq), int(info.state.last_seq)
        if int(info.state.messages) == 0 or last < first:
            return last + 1
        guess = min(max(origin_seq, first), last)
        span = await self._span_at(js, stream, guess)
        if span is not None and span[0] <= origin_seq <= span[1]:
            return guess
        low, high, found = first, last, first
        for _ in range(64):  # bounded: sequences are below 2**64
            if low > high:
                break
            middle = (low + high) // 2
            span = await self._span_at(js, stream, middle)
            if span is None:  # purged under us: start at the first held, the log skips
                return int((await js.stream_info(stream)).state.first_seq)
            if span[0] <= origin_seq:
                found, low = middle, middle + 1
            else:
                high = middle - 1
        return found

    # --- the received-frontier, for the tombstone gate -----------------------------------

    async def _report_frontier(self, js: JetStreamContext) -> None:
        """Keep this node's frontier ({origin: last seq held}) in the group's KV bucket, at
        most once a second: the hub holds it durably, so an absent member's last frontier
        still counts (and holds back collection) until it is retired."""
        bucket = names.frontier_bucket(self._group)
        reported: dict[str, int] | None = None
        kv = None
        while True:
            try:
                frontier = self._log.origins()
                if frontier != reported:
                    if kv is None:
                        try:
                            kv = await js.key_value(bucket)
                        except NotFoundError:
                            kv = await js.create_key_value(bucket=bucket, history=1)
                    await kv.put(self._node, json.dumps(frontier).encode())
                    reported = frontier
            except asyncio.CancelledError:
                raise
            except Exception as error:
                kv = None
                self._error(f"reporting this node's frontier: {_describe(error)}")
            await asyncio.sleep(1.0)

    # --- inbound ------------------------------------------------------------------------------

    async def _inbound(self, js: JetStreamContext, peer: str) -> None:
        stream, subject = names.stream_name(self._group, peer), names.subject(self._group, peer)
        backoff = 0.5
        while True:
            start = self._log.last_origin_seq(peer) + 1
            arrived: list[Msg] = []
            event = asyncio.Event()

            async def on_message(
                msg: Msg, arrived: list[Msg] = arrived, event: asyncio.Event = event
            ) -> None:
                arrived.append(msg)
                event.set()

            try:
                at = await self._locate(js, stream, start)
                sub = await js.subscribe(
                    subject,
                    stream=stream,
                    cb=on_message,
                    ordered_consumer=True,
                    idle_heartbeat=1.0,
                    pending_msgs_limit=200_000,
                    pending_bytes_limit=512 * 1024 * 1024,
                    config=ConsumerConfig(
                        deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=at
                    ),
                )
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._error(f"following {peer}: {_describe(error)}")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, FEED_BACKOFF)
                continue
            backoff = 0.5
            try:
                await self._apply_arrivals(js, peer, arrived, event)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._error(f"applying {peer}'s events: {_describe(error)}")
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(sub.unsubscribe(), 2.0)

    async def _apply_arrivals(
        self, js: JetStreamContext, peer: str, arrived: list[Msg], event: asyncio.Event
    ) -> None:
        """Hand whole transactions to the writer as they come; return on a gap (the caller
        re-subscribes from the log's frontier)."""
        pending: list[bytes] = []  # records, in order
        ends: list[bool] = []  # whether each ends a transaction (as far as its message says)
        while True:
            await event.wait()
            event.clear()
            for msg in arrived:
                records = _records_of(msg)
                pending.extend(records)
                ends.extend(False for _ in range(len(records) - 1))
                ends.append((msg.headers or {}).get(names.TX_END) != "0")
            arrived.clear()
            while pending:
                count = complete_transactions(ends, APPLY_BATCH)
                if count == 0:
                    break  # the rest of a transaction is on its way
                batch, pending, ends = pending[:count], pending[count:], ends[count:]
                result = await self._deliver(peer, batch)
                self._state.received += len(result.stored)
                self._state_dirty = True
                if result.gaps:
                    await self._explain_gap(js, peer, result)
                    return

    async def _explain_gap(self, js: JetStreamContext, peer: str, result: RemoteAppend) -> None:
        missing = result.gaps.get(peer, 0)
        stream = names.stream_name(self._group, peer)
        info = await js.stream_info(stream)
        span = await self._span_at(js, stream, int(info.state.first_seq))
        first = span[0] if span is not None else int(info.state.last_seq) + 1
        if first > missing:
            self._error(
                f"the hub no longer holds {peer}'s events {missing}..{first - 1} (its stream "
                "was purged): this node cannot catch up with it from the hub"
            )
            await asyncio.sleep(MAX_BACKOFF)

    async def _deliver(self, origin: str, records: list[bytes]) -> RemoteAppend:
        assert self._port is not None
        reply: AsyncReply[RemoteAppend] = AsyncReply()
        self._port.deliver(origin, records, reply)
        return await reply.wait(APPLY_TIMEOUT)

    # --- state --------------------------------------------------------------------------------

    def _set_connected(self, connected: bool) -> None:
        if self._state.connected != connected:
            self._state.connected = connected
            self._state.since = time.time()
            self._state_dirty = True
            if not connected:
                log.warning("replication_disconnected", hub=self._state.hub)

    def _error(self, message: str) -> None:
        self._state.last_error = message
        self._state.last_error_at = time.time()
        self._state_dirty = True
        if message != self._last_logged_error:  # once per distinct error, not every retry
            self._last_logged_error = message
            log.warning("replication_error", error=message, hub=self._state.hub)

    def _clear_error(self) -> None:
        self._last_logged_error = None

    async def _write_state_every(self, seconds: float) -> None:
        while True:
            if self._state_dirty:
                await asyncio.to_thread(self._flush_state)
            await asyncio.sleep(seconds)

    def _flush_state(self) -> None:
        self._state_dirty = False
        self._state.updated_at = time.time()
        if self._state_out is not None:
            self._state_out(self._state)
        elif self._state_file is not None:
            try:
                write_state(self._state_file, self._state)
            except OSError as error:
                log.warning("replication_state_not_written", reason=str(error))


def _drain(fd: int) -> bool:
    """Read what a non-blocking pipe holds; True at its end (the writer closed it)."""
    while True:
        try:
            if not os.read(fd, 65536):
                return True
        except BlockingIOError:
            return False


def _messages(
    node: str,
    batch: list[tuple[Envelope, bytes]],
    after: Envelope | None,
    stream_last: int,
    *,
    as_batches: bool,
    max_payload: int,
) -> list[tuple[bytes, bytes]]:
    """The messages (headers as NATS writes them, payload) publishing `batch`, records as the
    log stores them (`after`: the record that follows, if read), the first expected after
    stream sequence `stream_last`: batch messages (wire version 2), or one per event, byte for
    byte what version 1 sends. The headers are built here in one go, as nats-py's publish (a
    header dict checked and encoded key by key) cost more CPU per message than the write. The
    log returns one origin's records at consecutive sequences: each one's is the first's plus
    its index."""
    # Per-record work in C (map, not a Python step per record): a round carries hundreds.
    payloads = list(map(_RECORD, batch))
    txs = list(map(_TX, map(_ENVELOPE, batch)))
    tx_ends = list(map(operator.ne, txs[1:], txs))
    tx_ends.append(after is None or after.tx != txs[-1])
    first = batch[0][0].origin_seq
    me = node.encode()
    messages: list[tuple[bytes, bytes]] = []
    if not as_batches:
        if max(map(len, payloads)) > max_payload:
            raise MaxPayloadError
        template = b"NATS/1.0\r\n%s: %s:%%d\r\n%s: %%d\r\n%s: %%s\r\n\r\n" % (
            _MSG_ID,
            me,
            _EXPECTED_LAST,
            _TX_END,
        )
        for index, payload in enumerate(payloads):
            headers = template % (
                first + index,
                stream_last + index,
                b"1" if tx_ends[index] else b"0",
            )
            messages.append((headers, payload))
        return messages
    room = min(batches.MAX_BATCH_BYTES, max_payload - 1024)
    chunks = batches.split(batches.framed_sizes(payloads), tx_ends, max_bytes=room)
    for index, (start, end, tx_end) in enumerate(chunks):
        payload = batches.frame(payloads[start:end])
        if len(payload) > max_payload:
            raise MaxPayloadError
        low, high = first + start, first + end - 1
        headers = b"NATS/1.0\r\n%s: %s:%d-%d\r\n%s: %d\r\n%s: %s\r\n%s: %d %d\r\n\r\n" % (
            _MSG_ID,
            me,
            low,
            high,
            _EXPECTED_LAST,
            stream_last + index,
            _TX_END,
            b"1" if tx_end else b"0",
            _BATCH,
            low,
            high,
        )
        messages.append((headers, payload))
    return messages


def _hpub(head: bytes, headers: bytes, payload: bytes) -> bytes:
    """One HPUB protocol command without a reply subject (no ack asked)."""
    size = len(headers)
    return b"%s%d %d\r\n%s%s\r\n" % (head, size, size + len(payload), headers, payload)


def _header_dict(headers: bytes) -> dict[str, str]:
    """The headers built by _messages as nats-py's publish takes them (for the one message
    of a round that asks for an ack)."""
    lines = headers.decode().split("\r\n")[1:]
    return dict(line.split(": ", 1) for line in lines if line)


def _records_of(msg: Any) -> list[bytes]:
    """The records a stored or delivered message holds: a batch's, or its one event."""
    data = bytes(msg.data or b"")
    span = batches.message_range(msg.headers)
    if span is None:
        return [data]
    records = batches.unframe(data)
    if len(records) != span[1] - span[0] + 1:
        raise ValueError(f"a batch message says {span[0]}..{span[1]} but holds {len(records)}")
    return records


async def _queue_raw(nc: Client, commands: bytes) -> None:
    """Queue protocol commands on the connection as Client.publish does, without flushing:
    the publish that follows (the round's acknowledged last message) flushes them with it, in
    one write (nats-py 2.16's pending buffer; the extra pins the version, and
    tests/replication/test_wire.py fails if this private call changes). Refused while
    disconnected: the round is retried from the log once the link is back."""
    if nc.is_closed or not nc.is_connected:
        raise ConnectionClosedError
    await nc._send_command(commands)


def _window_after(sent: int) -> float:
    """The pause from one round's start to the next in a burst, after it read `sent`."""
    if sent >= BULK_ROUND:
        return COALESCE_BULK
    return COALESCE_BUSY if sent >= BUSY_ROUND else COALESCE


async def _until(deadline: float) -> None:
    """Sleep until the running loop's clock reaches `deadline` (at once if it has)."""
    left = deadline - asyncio.get_running_loop().time()
    if left > 0:
        await asyncio.sleep(left)


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    """True when `event` was set within `timeout`."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(timeout):  # no task per wait, unlike wait_for
            await event.wait()
    except TimeoutError:
        return False
    return True


async def _all_streams(js: JetStreamContext) -> list[Any]:
    found: list[Any] = []
    while True:
        page = await js.streams_info(offset=len(found))
        found.extend(page)
        if not page or len(page) < 256:
            return found


def _node_of(group: str, subjects: list[str] | None) -> str | None:
    for subject in subjects or ():
        if (node := names.node_of_subject(group, subject)) is not None:
            return node
    return None


# JetStream's "insufficient storage resources available": the store's room is all reserved.
NO_ROOM_ERR_CODE = 10047


class HubFullError(Exception):
    """The hub has no room left to reserve this node's stream."""

    def __init__(self, stream_bytes: int) -> None:
        super().__init__(
            f"the hub has no room for this node's stream (each node reserves "
            f"GRAPHMEM_REPLICA_MAX_BYTES = {stream_bytes:,} bytes of its store): start the hub "
            "with a larger --max-store, delete retired nodes' streams there, or lower "
            "GRAPHMEM_REPLICA_MAX_BYTES on every node"
        )


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) < 300 else text[:300] + "..."
