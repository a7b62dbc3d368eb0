"""TransactionCoordinatorActor: multi-step commands appended all or nothing, and transactions.

A multi-step call (a schema tool creating a node and its edges) is one CommitTransaction: the
writer decides its steps in order, each seeing the ones before, inside one log transaction, so
a rejected step means nothing at all is written. An explicit transaction (MemoryMesh's
begin, then commands, then commit or rollback) stages its commands here: each is checked when
staged against the graph plus the steps staged before it, so a bad step fails at once, and
commit hands them to the writer as one CommitTransaction, decided again against the graph as
it is then. Rollback discards the staged commands, nothing having been written, and runs the
caller's rollback actions last-first, going on past a failing one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pykka
import structlog

from actors.bridge import AsyncReply, BlockingReply, Reply
from actors.commands import Command, CommandResult, CommitTransaction, CommitTransactionResult
from actors.decide import decide
from actors.errors import CommandRejectedError
from actors.gateway import GraphGateway
from actors.hooks import Hooks
from actors.read_models import ReadModels
from actors.tally import EventTally, current_tally
from eventstore.events import Cause

__all__ = [
    "Transaction",
    "TransactionCoordinatorActor",
    "TransactionGateway",
    "TransactionStateError",
]

log = structlog.get_logger(__name__)

T = TypeVar("T")


class TransactionStateError(CommandRejectedError):
    """A transaction was used in a state that does not allow it (e.g. commit after commit)."""


@dataclass(frozen=True)
class _Begin:
    reply: Reply[int]


@dataclass(frozen=True)
class _Stage:
    tx_id: int
    command: Command
    reply: Reply[CommandResult]


@dataclass(frozen=True)
class _Commit:
    tx_id: int
    cause: Cause | None
    reply: Reply[CommitTransactionResult]
    # Made where the message is, in the caller's context: the caller's tally (actors.tally).
    tally: EventTally | None = field(default_factory=current_tally)


@dataclass(frozen=True)
class _Discard:
    tx_id: int
    reply: Reply[int]


@dataclass(frozen=True)
class _Run:
    steps: tuple[Command, ...]
    cause: Cause | None
    reply: Reply[CommitTransactionResult]
    tally: EventTally | None = field(default_factory=current_tally)


class TransactionCoordinatorActor(pykka.ThreadingActor):
    """Holds the open transactions' staged commands; commits go through the graph writer."""

    def __init__(self, graph: GraphGateway, hooks: Hooks | None = None) -> None:
        super().__init__()
        self._graph = graph
        self._hooks = hooks if hooks is not None else Hooks()
        self._ids = itertools.count(1)
        self._open: dict[int, list[Command]] = {}

    def on_receive(self, message: Any) -> Any:
        match message:
            case _Run(steps=steps, cause=cause, reply=reply, tally=tally):
                # Not waited for here: the writer answers the caller, and concurrent one-shot
                # transactions still share the writer's group commits.
                self._graph.send(CommitTransaction(list(steps)), cause, reply, tally)
            case _Begin(reply=reply):
                self._guarded(reply, self._begin)
            case _Stage(tx_id=tx_id, command=command, reply=reply):
                self._guarded(reply, lambda: self._stage(tx_id, command))
            case _Commit(tx_id=tx_id, cause=cause, reply=reply, tally=tally):
                self._commit(tx_id, cause, reply, tally)
            case _Discard(tx_id=tx_id, reply=reply):
                self._guarded(reply, lambda: len(self._open.pop(tx_id, ())))
            case _:
                return super().on_receive(message)
        return None

    @staticmethod
    def _guarded(reply: Reply[Any], work: Callable[[], Any]) -> None:
        try:
            reply.ok(work())
        except Exception as error:  # fails this request only; the actor keeps serving
            reply.fail(error)

    def _begin(self) -> int:
        self._hooks.before("BeginTransaction")
        tx_id = next(self._ids)
        self._open[tx_id] = []
        self._hooks.after("BeginTransaction", data={"transaction": tx_id})
        return tx_id

    def _staged(self, tx_id: int) -> list[Command]:
        staged = self._open.get(tx_id)
        if staged is None:
            raise TransactionStateError(
                f"Transaction {tx_id} is not open (it was committed, rolled back or never "
                "begun); begin a new one."
            )
        return staged

    def _stage(self, tx_id: int, command: Command) -> CommandResult:
        staged = self._staged(tx_id)
        candidate = CommitTransaction([*staged, command])

        def check(models: ReadModels) -> CommandResult:
            now_ms = models.event_log.clock.now_ms()
            decided = decide(models.graph, candidate, models.schemas, now_ms).result
            assert isinstance(decided, CommitTransactionResult)
            return decided.results[-1]

        result = self._graph.query_models_blocking(check)
        staged.append(command)
        return result

    def _commit(
        self,
        tx_id: int,
        cause: Cause | None,
        reply: Reply[CommitTransactionResult],
        tally: EventTally | None,
    ) -> None:
        staged = self._open.pop(tx_id, None)
        if staged is None:
            reply.fail(self._closed(tx_id, "commit"))
            return
        self._graph.send(CommitTransaction(staged), cause, reply, tally)

    @staticmethod
    def _closed(tx_id: int, action: str) -> TransactionStateError:
        return TransactionStateError(
            f"No transaction to {action}: transaction {tx_id} was already committed or rolled back."
        )

    def on_stop(self) -> None:
        if self._open:
            log.info("transactions_discarded_at_stop", count=len(self._open))
        self._open.clear()


class TransactionGateway:
    """How the edge and plain threads use the coordinator."""

    def __init__(
        self,
        coordinator: pykka.ActorRef[TransactionCoordinatorActor],
        hooks: Hooks | None = None,
        timeout: float = 60.0,
    ) -> None:
        self._coordinator = coordinator
        self._hooks = hooks if hooks is not None else Hooks()
        self.timeout = timeout

    async def commit(
        self, steps: Sequence[Command], cause: Cause | None = None
    ) -> CommitTransactionResult:
        """Decide `steps` in order and append them all or nothing (one log transaction)."""
        reply: AsyncReply[CommitTransactionResult] = AsyncReply()
        self._coordinator.tell(_Run(tuple(steps), cause, reply))
        return await reply.wait(self.timeout)

    def commit_blocking(
        self, steps: Sequence[Command], cause: Cause | None = None
    ) -> CommitTransactionResult:
        result: CommitTransactionResult = self._ask(lambda reply: _Run(tuple(steps), cause, reply))
        return result

    def begin(self, cause: Cause | None = None) -> Transaction:
        """Open a transaction (MemoryMesh's `beginTransaction`); a before-hook may veto it."""
        tx_id: int = self._ask(_Begin)
        return Transaction(self, tx_id, cause)

    @contextmanager
    def transaction(self, cause: Cause | None = None) -> Iterator[Transaction]:
        """`with gateway.transaction() as tx:` commits on success and rolls back on error."""
        tx = self.begin(cause)
        try:
            yield tx
        except BaseException:
            if tx.is_open:
                tx.rollback()
            raise
        if tx.is_open:
            tx.commit()

    def with_transaction(
        self, operation: Callable[[Transaction], T], cause: Cause | None = None
    ) -> T:
        """Seed 000 `withTransaction`: run, commit, return; on error roll back and re-raise."""
        with self.transaction(cause) as tx:
            return operation(tx)

    def _ask(self, message: Callable[[BlockingReply[Any]], Any]) -> Any:
        reply: BlockingReply[Any] = BlockingReply()
        self._coordinator.tell(message(reply))
        return reply.wait(self.timeout)

    @property
    def hooks(self) -> Hooks:
        return self._hooks


@dataclass
class Transaction:
    """An open transaction: stage commands, then commit or roll back (each once)."""

    _gateway: TransactionGateway
    id: int
    cause: Cause | None = None
    _rollback_actions: list[tuple[Callable[[], None], str]] = field(default_factory=list)
    _state: str = "open"

    @property
    def is_open(self) -> bool:
        return self._state == "open"

    def stage(self, command: Command) -> CommandResult:
        """Check `command` against the graph plus the steps staged so far and stage it; returns
        the result it would have. A rejection raises and leaves the transaction open, so the
        caller decides: fix and stage again, or roll back."""
        self._require_open("stage a command in")
        result: CommandResult = self._gateway._ask(lambda r: _Stage(self.id, command, r))
        return result

    def add_rollback_action(self, action: Callable[[], None], description: str) -> None:
        """Register work to undo outside the graph (files, caches): run last-first on rollback."""
        self._require_open("add a rollback action to")
        self._rollback_actions.append((action, description))

    def commit(self) -> CommitTransactionResult:
        """Append every staged command all or nothing; raises (and writes nothing) if a step no
        longer holds against the graph as it is now. Either way the transaction is closed."""
        self._require_open("commit")
        self._state = "committed"
        self._rollback_actions.clear()
        result: CommitTransactionResult = self._gateway._ask(
            lambda r: _Commit(self.id, self.cause, r)
        )
        return result

    def rollback(self) -> list[str]:
        """Discard the staged commands (nothing was written) and run the rollback actions
        last-first, going on past failures; returns the descriptions of those that failed."""
        self._require_open("roll back")
        hooks = self._gateway.hooks
        hooks.before("Rollback", data={"transaction": self.id})
        self._state = "rolled back"
        self._gateway._ask(lambda r: _Discard(self.id, r))
        failed: list[str] = []
        for action, description in reversed(self._rollback_actions):
            try:
                action()
            except Exception:
                log.exception("rollback_action_failed", action=description)
                failed.append(description)
        self._rollback_actions.clear()
        hooks.after("Rollback", data={"transaction": self.id, "failed": failed})
        return failed

    def _require_open(self, action: str) -> None:
        if self._state != "open":
            raise TransactionStateError(
                f"Cannot {action} transaction {self.id}: it was already {self._state}."
            )
