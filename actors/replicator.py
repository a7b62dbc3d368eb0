"""ReplicatorActor: this node's events out to a hub in log order, other nodes' events in.

Replication has two halves. The wire half (a `Link`, graphmem.replication for NATS JetStream)
moves bytes: it publishes this node's envelopes, read from the log, and receives every other
node's. This actor is the log half: it hands received envelopes to the graph writer, the one
appender, which keeps their stamps and folds them like local ones (GraphWriterActor.
ApplyRemote), and it tells the link when local events were committed so it sends them at once.

The log is both the outbox and the cursor: what this node still has to send is its log past the
hub's copy, and what it still has to receive from a peer is that peer's stream past the log's
last origin_seq of it. Nothing else is remembered, so a restart, a week offline or a hub that
lost its disk all resume from the same two numbers. Received envelopes are idempotent (one
already held is skipped) and gap-checked (one past a gap is refused; the link re-reads from
the first missing one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pykka
import structlog

from actors.bridge import Reply
from actors.subscribers import Published, Subscriber
from eventstore.events import Envelope, decode_envelope
from eventstore.log import RemoteAppend

__all__ = [
    "ForeignEnvelopeError",
    "Link",
    "Received",
    "ReplicatorActor",
    "ReplicatorCounters",
    "ReplicatorPort",
    "complete_transactions",
]

log = structlog.get_logger(__name__)

APPLY_TIMEOUT = 120.0  # a large catch-up batch folded by the writer, bounded


class Link(Protocol):
    """The wire half: started with the port it delivers to, woken on local commits."""

    def start(self, port: ReplicatorPort) -> None: ...

    def wake(self) -> None:
        """Local events were committed: send what the hub does not hold yet."""
        ...

    def stop(self, timeout: float) -> None: ...


class RemoteGraph(Protocol):
    """What the replicator needs of the graph: GraphGateway's calls."""

    def apply_remote_blocking(
        self, envelopes: Sequence[Envelope], timeout: float | None = None
    ) -> RemoteAppend: ...

    def subscribe(self, subscriber: Subscriber) -> None: ...

    def unsubscribe(self, subscriber: Subscriber) -> None: ...


@dataclass(frozen=True)
class Received:
    """Encoded envelopes of node `origin` (whole transactions, in its order), read from its
    stream; `reply` gets the log's RemoteAppend once they are committed and folded."""

    origin: str
    records: Sequence[bytes]
    reply: Reply[RemoteAppend]


class ForeignEnvelopeError(ValueError):
    """A stream held an envelope of another origin than its own: refused whole."""


@dataclass
class ReplicatorCounters:
    """What came in since the process started (the link counts what went out)."""

    applied: int = 0
    duplicates: int = 0
    gaps: int = 0
    per_origin: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Counters:
    reply: Reply[ReplicatorCounters]


class ReplicatorPort:
    """How the link reaches the actor from its own thread (every call is a tell)."""

    def __init__(self, ref: pykka.ActorRef[ReplicatorActor]) -> None:
        self._ref = ref

    def deliver(self, origin: str, records: Sequence[bytes], reply: Reply[RemoteAppend]) -> None:
        try:
            self._ref.tell(Received(origin, records, reply))
        except pykka.ActorDeadError as dead:
            reply.fail(dead)


class ReplicatorActor(pykka.ThreadingActor):
    """See the module docstring. `link` is the wire half, started in on_start; `node_id` is
    this node's origin (its events, whichever process of the data dir wrote them, go out)."""

    def __init__(self, graph: RemoteGraph, link: Link, node_id: str) -> None:
        super().__init__()
        self._graph = graph
        self._node_id = node_id
        self._link = link
        self._counters = ReplicatorCounters()
        self._subscriber: Subscriber = self._on_published

    def on_start(self) -> None:
        self._graph.subscribe(self._subscriber)
        self._link.start(ReplicatorPort(self.actor_ref))
        log.info("replicator_started")

    def on_stop(self) -> None:
        self._graph.unsubscribe(self._subscriber)
        self._link.stop(timeout=5.0)
        while not self.actor_inbox.empty():  # pykka drops tells silently
            message = self.actor_inbox.get().message
            if isinstance(message, Received | _Counters):
                message.reply.fail(pykka.ActorDeadError("the replicator stopped"))
        log.info("replicator_stopped", **_fields(self._counters))

    def on_failure(self, *exc_info: Any) -> None:
        with contextlib.suppress(Exception):
            self._link.stop(timeout=5.0)

    def on_receive(self, message: Any) -> Any:
        match message:
            case Received(origin=origin, records=records, reply=reply):
                try:
                    reply.ok(self._apply(origin, records))
                except Exception as error:  # the writer refused (disk full): the link retries
                    reply.fail(error)
            case _Counters(reply=reply):
                reply.ok(self._counters)
            case _:
                return super().on_receive(message)
        return None

    def counters(self, reply: Reply[ReplicatorCounters]) -> None:
        """Ask for the counters (answered on `reply`)."""
        self.actor_ref.tell(_Counters(reply))

    def _apply(self, origin: str, records: Sequence[bytes]) -> RemoteAppend:
        envelopes = [decode_envelope(record) for record in records]
        # A node may only speak for itself: what another node's stream holds of a third one
        # (a misconfigured publisher, a hub without per-node permissions) is not applied.
        if foreign := sorted({e.origin for e in envelopes if e.origin != origin}):
            raise ForeignEnvelopeError(
                f"the stream of node {origin} holds events of {', '.join(foreign)}: refused; "
                "give each node publish rights on its own subject only"
            )
        result = self._graph.apply_remote_blocking(envelopes, timeout=APPLY_TIMEOUT)
        counters = self._counters
        counters.applied += len(result.stored)
        counters.duplicates += result.skipped
        counters.gaps += len(result.gaps)
        for envelope in result.stored:
            counters.per_origin[envelope.origin] = envelope.origin_seq
        if result.gaps:
            log.warning("replication_gap", missing_from=result.gaps)
        return result

    def _on_published(self, published: Published) -> None:
        # On the writer's thread: only wake the link (a thread-safe, non-blocking call).
        # Another process sharing the data dir writes as this node too (local=False).
        node = self._node_id
        if published.local or any(e.origin == node for e in published.envelopes):
            self._link.wake()


def complete_transactions(tx_ends: Sequence[bool], limit: int) -> int:
    """How many leading records to hand over: whole transactions only (the writer must never
    fold half of another node's command), at most `limit` unless the first transaction alone
    is longer. `tx_ends[i]` says whether record i is the last of its transaction."""
    first_end = None
    for index in range(min(len(tx_ends), limit) - 1, -1, -1):
        if tx_ends[index]:
            return index + 1
    for index in range(limit, len(tx_ends)):
        if tx_ends[index]:
            first_end = index + 1
            break
    return first_end or 0


def _fields(counters: ReplicatorCounters) -> dict[str, Any]:
    return {"applied": counters.applied, "duplicates": counters.duplicates, "gaps": counters.gaps}
