"""Deciding CommitTransaction (several commands, all or nothing) and RegisterSchemas.

A transaction is decided step by step against one WorkingGraph: each step sees what the steps
before it decided, and its events are folded in before the next step. Nothing is staged
anywhere else, so "rollback" is simply not appending: a rejected step rejects the whole
transaction and no event of any step is written (MemoryMesh's last-in-first-out rollback, made
unnecessary). The transaction's events are all its steps' events in order, appended as one
batch by the writer.
"""

from __future__ import annotations

from collections.abc import Callable

from actors.commands import (
    Command,
    CommandResult,
    CommitTransaction,
    CommitTransactionResult,
    RegisterSchemas,
    RegisterSchemasResult,
)
from actors.decision import Decision
from actors.errors import CommandRejectedError
from actors.graph_reader import GraphReader
from actors.working_graph import WorkingGraph
from eventstore.events import AnyEvent, SchemaRegistered, SchemaRetired
from projections.schemas import SchemaProjection

__all__ = ["Steps", "commit_transaction", "register_schemas"]

Steps = tuple[tuple[Command, list[AnyEvent]], ...]
"""Each step of a transaction with the events it decided (nested transactions flattened)."""

DecideStep = Callable[[GraphReader, Command, SchemaProjection | None, int | None], Decision]


def commit_transaction(
    graph: GraphReader,
    command: CommitTransaction,
    schemas: SchemaProjection | None,
    decide: DecideStep,
    now_ms: int | None = None,
) -> tuple[list[AnyEvent], CommitTransactionResult, Steps]:
    """Decide each step in order with `decide` against the graph as the earlier steps left it,
    all at the one time `now_ms`.
    A rejected step rejects the transaction: its error is re-raised with the step named
    ("Step 2 of 3 (AddEdges): ..."). An empty transaction decides to nothing."""
    work = WorkingGraph(graph, 0 if now_ms is None else now_ms)
    events: list[AnyEvent] = []
    results: list[CommandResult] = []
    steps: list[tuple[Command, list[AnyEvent]]] = []
    total = len(command.steps)
    for index, step in enumerate(command.steps, start=1):
        try:
            decision = decide(work, step, schemas, now_ms)
        except CommandRejectedError as rejection:
            rejection.in_step(index, total, type(step).__name__)
            raise
        work.apply_all(decision.events)
        events.extend(decision.events)
        results.append(decision.result)
        if decision.steps:
            steps.extend(decision.steps)
        else:
            steps.append((step, decision.events))
    return events, CommitTransactionResult(results), tuple(steps)


def register_schemas(
    schemas: SchemaProjection | None, command: RegisterSchemas
) -> tuple[list[AnyEvent], RegisterSchemasResult]:
    """SchemaRegistered for each definition not in force or in force with another digest;
    SchemaRetired for each listed type in force. Without a schema projection nothing is in
    force. A type listed twice counts as it stands after the earlier listing."""
    digests: dict[str, str | None] = {}

    def in_force(type_name: str) -> str | None:
        if type_name in digests:
            return digests[type_name]
        record = None if schemas is None else schemas.record(type_name)
        return None if record is None or record.schema is None else record.digest

    events: list[AnyEvent] = []
    registered: list[str] = []
    retired: list[str] = []
    for definition in command.registered:
        if in_force(definition.type_name) == definition.digest:
            continue
        digests[definition.type_name] = definition.digest
        events.append(
            SchemaRegistered(
                type_name=definition.type_name,
                schema_json=definition.schema_json,
                digest=definition.digest,
                source=definition.source,
            )
        )
        registered.append(definition.type_name)
    for type_name in command.retired:
        if in_force(type_name) is None:
            continue
        digests[type_name] = None
        events.append(SchemaRetired(type_name=type_name))
        retired.append(type_name)
    return events, RegisterSchemasResult(registered, retired)
