"""GraphGateway: how the edge (asyncio) and plain threads talk to the graph writer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import pykka

from actors.bridge import AsyncReply, BlockingReply, Reply
from actors.commands import Command, CommandOf, CommandResult
from actors.family_index_progress import FamilyIndexProgress
from actors.graph_writer import (
    ApplyRemote,
    Ask,
    AskModels,
    AskReads,
    AskSchemas,
    BuildFamilyIndex,
    Execute,
    GraphWriterActor,
    Rebuild,
    SaveCheckpoint,
)
from actors.read_models import ReadModels
from actors.rebuild import RebuildResult
from actors.search_handover import AdoptSearch
from actors.subscribers import Subscriber, Subscribers
from actors.supervisor import SupervisorActor
from actors.tally import EventTally, current_tally
from eventstore.events import Cause, Envelope
from eventstore.log import RemoteAppend
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection
from projections.search import SearchProjection

T = TypeVar("T")
R = TypeVar("R")


def _execute(
    command: CommandOf[R],
    cause: Cause | None,
    reply: Reply[R],
    before_append: Callable[[R], None] | None = None,
    tally: EventTally | None = None,
) -> Execute:
    """The writer's message for `command`. The writer answers every command with the result
    type its class declares (CommandOf[R]); every CommandOf subclass is a member of the Command
    union (tests/actors/test_decide.py keeps the two in step), hence the casts."""
    return Execute(
        cast(Command, command),
        cause,
        cast(Reply[CommandResult], reply),
        cast(Callable[[CommandResult], None] | None, before_append),
        tally if tally is not None else current_tally(),
    )


DEFAULT_TIMEOUT = 60.0


class GraphGateway:
    """Sends commands and queries to the current graph writer, wherever it was restarted.

    The writer's ref is looked up again once it is no longer alive, so a restart by the
    supervisor is invisible to callers (beyond the requests that were in flight, which fail).
    """

    def __init__(
        self,
        supervisor: pykka.ActorRef[SupervisorActor],
        subscribers: Subscribers,
        child_name: str = "graph_writer",
        timeout: float = DEFAULT_TIMEOUT,
        family_index: FamilyIndexProgress | None = None,
    ) -> None:
        """`family_index`: the writer's FamilyIndexProgress (the same object it writes)."""
        self._supervisor = supervisor
        self.family_index = family_index if family_index is not None else FamilyIndexProgress()
        self._subscribers = subscribers
        self._child_name = child_name
        self._ref: pykka.ActorRef[GraphWriterActor] | None = None
        self.timeout = timeout

    def _writer(self) -> pykka.ActorRef[GraphWriterActor]:
        ref = self._ref
        if ref is None or not ref.is_alive():
            ref = self._supervisor.proxy().child(self._child_name).get(timeout=self.timeout)
            self._ref = ref
        return ref

    def send(
        self,
        command: CommandOf[R],
        cause: Cause | None,
        reply: Reply[R],
        tally: EventTally | None = None,
    ) -> None:
        """Hand a command to the writer; `reply` is settled once it is decided and committed.
        `tally` (default: the sender's current one) counts the events it appends."""
        self._writer().tell(_execute(command, cause, reply, tally=tally))

    def adopt_search(self, position: int, index: SearchProjection | None) -> None:
        """Hand the writer a search index built from the graph at `position` (None: none
        was built after all): actors.search_handover."""
        self._writer().tell(AdoptSearch(position, index))

    def start_family_index(self) -> None:
        """Have the writer build the graph family's FamilyIndex in the background, a step at a
        time (once: later calls do nothing); `family_index.built` is set when it is done."""
        if not self.family_index.requested:
            self.family_index.requested = True
            self._writer().tell(BuildFamilyIndex())

    async def execute(
        self,
        command: CommandOf[R],
        cause: Cause | None = None,
        *,
        before_append: Callable[[R], None] | None = None,
    ) -> R:
        """Decide and append `command`; its result once the events are durable. The writer
        answers every command with its own result type (see actors.commands.CommandOf).
        `before_append` writes a side output the events must not exist without (see
        Execute): given the result, after the decision, before the append; raising
        CommandRejectedError refuses the command."""
        reply: AsyncReply[R] = AsyncReply()
        self._writer().tell(_execute(command, cause, reply, before_append))
        return await reply.wait(self.timeout)

    async def query(self, query: Callable[[GraphProjection], T]) -> T:
        reply: AsyncReply[Any] = AsyncReply()
        self._writer().tell(Ask(query, reply))
        result: T = await reply.wait(self.timeout)
        return result

    async def query_models(self, query: Callable[[ReadModels], T]) -> T:
        reply: AsyncReply[Any] = AsyncReply()
        self._writer().tell(AskModels(query, reply))
        result: T = await reply.wait(self.timeout)
        return result

    async def query_reads(self, query: Callable[[Any], T]) -> T:
        """An official read tool's query (search_nodes, open_nodes, read_graph): given what
        has `.graph` and `.search` (the read models, or the graph's image: AskReads)."""
        reply: AsyncReply[Any] = AsyncReply()
        self._writer().tell(AskReads(query, reply))
        result: T = await reply.wait(self.timeout)
        return result

    def execute_blocking(self, command: CommandOf[R], cause: Cause | None = None) -> R:
        reply: BlockingReply[R] = BlockingReply()
        self._writer().tell(_execute(command, cause, reply))
        return reply.wait(self.timeout)

    def query_blocking(self, query: Callable[[GraphProjection], T]) -> T:
        reply: BlockingReply[Any] = BlockingReply()
        self._writer().tell(Ask(query, reply))
        result: T = reply.wait(self.timeout)
        return result

    def query_models_blocking(self, query: Callable[[ReadModels], T]) -> T:
        reply: BlockingReply[Any] = BlockingReply()
        self._writer().tell(AskModels(query, reply))
        result: T = reply.wait(self.timeout)
        return result

    async def query_schemas(self, query: Callable[[SchemaProjection], T]) -> T:
        """`query` on the schemas projection (the writer has it without the graph)."""
        reply: AsyncReply[Any] = AsyncReply()
        self._writer().tell(AskSchemas(query, reply))
        result: T = await reply.wait(self.timeout)
        return result

    def query_schemas_blocking(self, query: Callable[[SchemaProjection], T]) -> T:
        """`query` on the schemas projection (the writer has it without the graph)."""
        reply: BlockingReply[Any] = BlockingReply()
        self._writer().tell(AskSchemas(query, reply))
        result: T = reply.wait(self.timeout)
        return result

    def save_checkpoint_blocking(self, timeout: float) -> int:
        """Checkpoint the read models now (a bulk load's one checkpoint, saved before a stop
        whose budget would skip a save that long); returns the position saved at. `timeout`:
        a save is in proportion to the graph (tens of seconds at a million entities)."""
        reply: BlockingReply[int] = BlockingReply()
        self._writer().tell(SaveCheckpoint(reply))
        return reply.wait(timeout)

    def apply_remote_blocking(
        self, envelopes: Sequence[Envelope], timeout: float | None = None
    ) -> RemoteAppend:
        """Append and fold other nodes' envelopes through the writer (the one appender)."""
        reply: BlockingReply[RemoteAppend] = BlockingReply()
        self._writer().tell(ApplyRemote(envelopes, reply))
        return reply.wait(self.timeout if timeout is None else timeout)

    async def rebuild(self, timeout: float | None = None) -> RebuildResult:
        """Rebuild the writer's read models from the log in the background (the current ones
        keep answering meanwhile); returns once the new ones serve. `timeout` defaults to the
        gateway's: a long log needs more."""
        reply: AsyncReply[RebuildResult] = AsyncReply()
        self._writer().tell(Rebuild(reply))
        return await reply.wait(self.timeout if timeout is None else timeout)

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.add(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.remove(subscriber)
