"""Transactions (MemoryMesh's): stage, then append all or nothing; rollback writes nothing and
runs rollback actions last-first; every call of a multi-step tool is one atomic transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.commands import (
    CommitTransactionResult,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    CreateRelationsResult,
    DeleteEntities,
    EntityInput,
    RelationInput,
)
from actors.errors import CommandRejectedError, EntityNotFoundError
from actors.hooks import HookEvent, HookVetoError
from actors.transaction_coordinator import Transaction, TransactionStateError
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings


def node(name: str) -> CreateEntities:
    return CreateEntities([EntityInput(name, "npc", [])])


def edge(source: str, target: str) -> CreateRelations:
    return CreateRelations([RelationInput(source, target, "located_in")])


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(node_id="n1"))
    yield started
    stop_actors(started)


def names(app: App) -> list[str]:
    return app.graph.query_blocking(lambda g: [e.name for e in g.entities()])


def test_a_successful_transaction_commits_every_step(app: App) -> None:
    tx = app.transactions.begin()
    assert isinstance(tx.stage(node("Rivendell")), CreateEntitiesResult)
    tx.stage(node("Gandalf"))
    staged = tx.stage(edge("Gandalf", "Rivendell"))
    assert isinstance(staged, CreateRelationsResult)
    assert names(app) == []  # nothing is written before commit

    result = tx.commit()

    assert isinstance(result, CommitTransactionResult)
    assert len(result.results) == 3
    assert names(app) == ["Rivendell", "Gandalf"]
    assert app.graph.query_blocking(lambda g: g.has_relation("Gandalf", "Rivendell", "located_in"))


def test_a_step_failing_on_a_bad_reference_then_rollback_leaves_nothing(app: App) -> None:
    tx = app.transactions.begin()
    tx.stage(node("Gandalf"))
    with pytest.raises(EntityNotFoundError, match="Mordor"):
        tx.stage(edge("Gandalf", "Mordor"))
    tx.rollback()

    assert names(app) == []
    assert app.event_log.last_position() == 0


def test_with_transaction_commits_on_success(app: App) -> None:
    def work(tx: Transaction) -> str:
        tx.stage(node("Rivendell"))
        tx.stage(node("Gandalf"))
        tx.stage(edge("Gandalf", "Rivendell"))
        return "done"

    assert app.transactions.with_transaction(work) == "done"
    assert names(app) == ["Rivendell", "Gandalf"]


def test_with_transaction_rolls_back_on_error(app: App) -> None:
    def work(tx: Transaction) -> None:
        tx.stage(node("Gandalf"))
        raise RuntimeError("the caller changed its mind")

    with pytest.raises(RuntimeError, match="changed its mind"):
        app.transactions.with_transaction(work)
    assert names(app) == []


def test_rollback_actions_run_last_first_and_past_a_failure(app: App) -> None:
    ran: list[str] = []
    tx = app.transactions.begin()

    def failing() -> None:
        ran.append("second")
        raise RuntimeError("undo failed")

    tx.add_rollback_action(lambda: ran.append("first"), "first")
    tx.add_rollback_action(failing, "second")
    tx.add_rollback_action(lambda: ran.append("third"), "third")

    failed = tx.rollback()

    assert ran == ["third", "second", "first"]
    assert failed == ["second"]


def test_a_closed_transaction_refuses_commit_rollback_and_staging(app: App) -> None:
    tx = app.transactions.begin()
    tx.commit()
    for action in (tx.commit, tx.rollback, lambda: tx.stage(node("x"))):
        with pytest.raises(TransactionStateError, match="already committed"):
            action()


def test_commit_decides_again_against_the_graph_as_it_is_then(app: App) -> None:
    tx = app.transactions.begin()
    tx.stage(node("Rivendell"))
    app.graph.execute_blocking(node("Shire"))
    tx.stage(edge("Rivendell", "Shire"))
    app.graph.execute_blocking(DeleteEntities(["Shire"]))

    with pytest.raises(CommandRejectedError, match="Shire"):
        tx.commit()
    assert names(app) == []  # neither was Rivendell


def test_a_one_shot_transaction_is_all_or_nothing(app: App) -> None:
    async def run() -> None:
        with pytest.raises(EntityNotFoundError, match="Mordor"):
            await app.transactions.commit([node("Gandalf"), edge("Gandalf", "Mordor")])

    asyncio.run(run())
    assert names(app) == []


def test_a_before_hook_can_veto_beginning_a_transaction(app: App) -> None:
    def no_transactions(event: HookEvent) -> None:
        if event.name == "beforeBeginTransaction":
            raise HookVetoError("transactions are disabled here")

    app.hooks.add(no_transactions)
    with pytest.raises(HookVetoError, match="disabled"):
        app.transactions.begin()


def test_transactions_are_independent_of_each_other(app: App) -> None:
    first = app.transactions.begin()
    second = app.transactions.begin()
    first.stage(node("A"))
    second.stage(node("B"))
    second.commit()
    first.rollback()
    assert names(app) == ["B"]
