"""The benchmarks' event log: a realistic mix of commands, a log built from it, a full
replay, a writer's start-up, and the host facts recorded beside every figure."""

from __future__ import annotations

import os
import platform
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from actors.bridge import BlockingReply
from actors.graph_writer import Ask, GraphWriterActor
from eventstore.events import (
    AnyEvent,
    Cause,
    EntityCreated,
    Envelope,
    ObservationAdded,
    RelationCreated,
)
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability, LogTransaction

_PROSE = (
    "prefers tea over coffee works remotely from Lisbon on the platform team reviews pull "
    "requests in the morning uses neovim with a custom config owns the billing service since "
    "2023 mentors two juniors allergic to peanuts speaks Portuguese and German"
)
WORDS = _PROSE.split()
_TYPES = ("person", "project", "service", "team", "document", "decision")
_RELATIONS = ("works_on", "owns", "knows", "depends_on", "reviewed", "mentors")
_TOOLS = ("create_entities", "add_observations", "create_relations")


def commands(seed: int = 0) -> Iterator[tuple[list[AnyEvent], Cause]]:
    """An endless, deterministic stream of realistic commands (1-5 events each).

    About 15% EntityCreated, 65% ObservationAdded, 20% RelationCreated by event count.
    """
    rng = random.Random(seed)
    names: list[str] = []
    contents = [" ".join(rng.sample(WORDS, 10)) for _ in range(4096)]
    causes = [
        Cause(tool=tool, client="bench", session=f"s{i}") for i in range(4) for tool in _TOOLS
    ]
    while True:
        roll = rng.random()
        size = rng.randint(1, 5)
        if roll < 0.15 or len(names) < 2:
            batch: list[AnyEvent] = []
            for _ in range(size):
                names.append(f"{rng.choice(_TYPES)}-{len(names):07d}")
                batch.append(EntityCreated(name=names[-1], entity_type=rng.choice(_TYPES)))
            yield batch, causes[0]
        elif roll < 0.80:
            entity = rng.choice(names)
            yield (
                [
                    ObservationAdded(entity=entity, content=rng.choice(contents))
                    for _ in range(size)
                ],
                causes[1],
            )
        else:
            yield (
                [
                    RelationCreated(
                        from_entity=rng.choice(names),
                        to_entity=rng.choice(names),
                        relation_type=rng.choice(_RELATIONS),
                    )
                    for _ in range(size)
                ],
                causes[2],
            )


def build_log(
    path: str | os.PathLike[str],
    n_events: int,
    *,
    txn_events: int = 20_000,
    seed: int = 0,
    durability: Durability = Durability.EVERYSEC,
) -> LmdbEventLog:
    """Open a log at `path` and append at least `n_events` of the realistic mix, fast.

    Commands are group-committed about `txn_events` events per transaction; the caller closes
    the returned log.
    """
    log = LmdbEventLog.open(path, durability=durability, map_size=4 << 30)
    stream = commands(seed)
    target = log.last_position() + n_events

    def fill(txn: LogTransaction) -> int:
        if txn.attempt:
            raise RuntimeError("the map grew mid-build: raise map_size")
        stop = min(txn.last_position() + txn_events, target)
        while txn.last_position() < stop:
            events, cause = next(stream)
            txn.append(events[: stop - txn.last_position()], cause)
        return txn.last_position()

    while log.transact(fill) < target:
        pass
    return log


def replay(log: LmdbEventLog, apply: Callable[[Envelope], object] | None = None) -> int:
    """Read and decode the whole log, feeding each envelope to `apply`; returns the count."""
    if apply is None:
        return sum(1 for _ in log.read_from(1))
    count = 0
    for envelope in log.read_from(1):
        apply(envelope)
        count += 1
    return count


def start_up(log: LmdbEventLog, checkpoint_every: int | None) -> tuple[float, int]:
    """Seconds from starting a graph writer to its first answer, and the entities it saw.
    The writer saves nothing on the way out (nothing changes), so runs can be repeated."""
    start = time.perf_counter()
    writer = GraphWriterActor.start(log, checkpoint_every=checkpoint_every)
    reply: BlockingReply[int] = BlockingReply()
    writer.tell(Ask(lambda graph: graph.entity_count(), reply))
    entities = reply.wait(600)
    elapsed = time.perf_counter() - start
    writer.stop(block=True, timeout=600)
    return elapsed, entities


def host_facts() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
