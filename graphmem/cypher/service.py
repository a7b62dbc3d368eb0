"""The Cypher service: keeps a worker's projection current and answers graph_cypher.

The writer hands committed envelopes to its subscribers before it answers their callers;
this service's subscriber only notes the names and keys they touch. A thread of its own
applies them to the worker soon after, and every query applies what is still pending first,
so a query sees every write answered before it. The projection is built from the read
models (never stored): at start, after a crash or kill of the worker, after a change the
worker refused, and after a decay run (every shown confidence and weight moves).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import structlog

from actors.subscribers import Published
from graphmem.cypher.engine import EngineGoneError, WorkerProcess
from graphmem.cypher.gate import gate
from graphmem.cypher.rows import Changes, Columns, apply_request, changes_of, snapshot
from projections.graph import GraphProjection

__all__ = ["CypherAnswer", "CypherEngineError", "CypherService", "GraphRead"]

log = structlog.get_logger(__name__)

T = TypeVar("T")
# Runs a read of the graph on the writer (as the gateway's blocking reads do) and returns it.
GraphRead = Callable[[Callable[[GraphProjection], T]], T]
# Runs a read of the graph as of a log position on the caller's thread (TimeTravel, models
# rebuilt from a checkpoint and not kept): the whole-graph read of a build never holds the
# writer for the seconds it takes.
GraphReadAt = Callable[[int, Callable[[GraphProjection], T]], T]

QUERY_TIMEOUT_MS = 5000  # the engine interrupts a query here
KILL_SECONDS = 7.0  # the worker is killed when no answer came by then
LOAD_SECONDS = 300.0
APPLY_SECONDS = 120.0
MAX_ROWS = 1000
WAKE_SECONDS = 1.0
RETRY_SECONDS = 10.0  # after a failed build: not a process spawned every second
STOP_SECONDS = 10.0


class CypherEngineError(RuntimeError):
    """The query could not be answered: the engine's message (syntax, binder, timeout) or
    the worker's death. `kind`: engine, timeout, memory, gone."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class CypherAnswer:
    cypher: str  # as the engine ran it (after the label rewrite)
    results: list[dict[str, Any]]
    truncated: bool
    execution_time_ms: float


class CypherService:
    def __init__(
        self,
        read: GraphRead[Any],
        *,
        read_at: GraphReadAt[Any] | None = None,
        timeout_ms: int = QUERY_TIMEOUT_MS,
        kill_seconds: float = KILL_SECONDS,
        max_rows: int = MAX_ROWS,
    ) -> None:
        self._read = read
        self._read_at = read_at
        self.timeout_ms = timeout_ms
        self.kill_seconds = kill_seconds
        self.max_rows = max_rows
        self._engine = threading.Lock()  # one caller of the worker at a time
        self._worker: WorkerProcess | None = None
        self._building: WorkerProcess | None = None  # a worker being loaded (stop kills it)
        self._cond = threading.Condition()
        self._pending = Changes()
        self._stopping = False
        # Nothing is noted or built until the first query (or `warm`): a server whose
        # clients never ask for Cypher runs no worker.
        self._active = False
        self._thread = threading.Thread(target=self._run, name="graphmem-cypher", daemon=True)
        self.builds = 0  # how many times the projection was built (tests, logs)

    # --- life -------------------------------------------------------------------------------

    def start(self, subscribe: Callable[[Callable[[Published], None]], None]) -> None:
        """Subscribe, then build the projection on the service's thread. Subscribing first:
        a write during the build is in the snapshot, in the pending changes, or both."""
        subscribe(self.on_published)
        self._thread.start()

    def warm(self) -> None:
        """Build the projection now, on the service's thread, rather than at the first query."""
        with self._cond:
            self._active = True
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        # A build or a query in progress holds the engine: its worker is killed, which ends
        # the wait on it at once (the caller gets an error), and the lock wait is bounded.
        for worker in (self._building, self._worker):
            if worker is not None:
                worker.interrupt()
        if self._thread.is_alive():
            self._thread.join(STOP_SECONDS)
        if self._engine.acquire(timeout=STOP_SECONDS):
            try:
                if self._worker is not None:
                    self._worker.stop()
                    self._worker = None
            finally:
                self._engine.release()
        else:
            log.warning("cypher_stop_timed_out")

    def on_published(self, published: Published) -> None:
        """The writer's thread: note what changed and wake the service's thread."""
        if not self._active:
            return  # the build reads everything
        changes = changes_of(published.envelopes)
        if changes:
            with self._cond:
                self._pending.merge(changes)
                self._cond.notify()

    @property
    def worker_pid(self) -> int | None:
        worker = self._worker
        return None if worker is None else worker.pid

    # --- queries ----------------------------------------------------------------------------

    def query(self, cypher: str, params: dict[str, Any]) -> CypherAnswer:
        """Run `cypher` on the current projection. CypherRefusedError (the gate) or
        CypherEngineError; a dead worker is rebuilt for the next call, not this one."""
        gated = gate(cypher)
        with self._engine:
            if self._stopping:
                raise CypherEngineError("gone", "the server is stopping")
            try:
                worker = self._current()
            except EngineGoneError as gone:  # the build itself failed: the next call retries
                raise CypherEngineError("gone", str(gone)) from None
            # Again: a stop between the first look and here killed the worker `_current` found
            # dead and replaced; the stop sets the flag before it looks for a worker to kill,
            # so either it killed this one or the flag is seen here.
            if self._stopping:
                raise CypherEngineError("gone", "the server is stopping")
            return self._ask(worker, gated, params, rebuild_on_death=True)

    def query_snapshot(
        self, rows: tuple[Columns, Columns], cypher: str, params: dict[str, Any]
    ) -> CypherAnswer:
        """Run `cypher` on a projection of `rows` (an earlier point), in a worker of its own
        that is stopped after the answer."""
        gated = gate(cypher)
        try:
            worker = WorkerProcess(self.timeout_ms)
        except EngineGoneError as gone:
            raise CypherEngineError("gone", str(gone)) from None
        try:
            load = {"op": "load", "entities": rows[0], "relations": rows[1]}
            _checked(worker.call(load, LOAD_SECONDS))
            return self._ask(worker, gated, params, rebuild_on_death=False)
        except EngineGoneError as gone:
            raise CypherEngineError("gone", str(gone)) from None
        finally:
            worker.stop()

    def _ask(
        self, worker: WorkerProcess, cypher: str, params: dict[str, Any], *, rebuild_on_death: bool
    ) -> CypherAnswer:
        request = {"op": "query", "cypher": cypher, "params": params, "max_rows": self.max_rows}
        try:
            answer = worker.call(request, self.kill_seconds)
        except EngineGoneError as gone:
            log.warning("cypher_worker_lost", reason=str(gone), pid=worker.pid)
            if rebuild_on_death:
                self._worker = None
                with self._cond:
                    self._cond.notify()  # the service's thread rebuilds it
            raise CypherEngineError("gone", str(gone)) from None
        if not answer.get("ok"):
            raise CypherEngineError(str(answer.get("kind")), str(answer.get("error")))
        return CypherAnswer(
            cypher, answer["results"], bool(answer["truncated"]), float(answer["execution_time_ms"])
        )

    # --- keeping the projection current -----------------------------------------------------

    def _current(self) -> WorkerProcess:
        """The worker with every pending change applied (built first if there is none).
        Holds the engine lock."""
        worker = self._worker
        with self._cond:
            changes, self._pending = self._pending, Changes()
        if worker is not None and not worker.alive:
            worker.stop()
            worker = self._worker = None
        if worker is not None and changes.everything:
            worker.stop()
            worker = self._worker = None
        if worker is None:
            return self._build()
        if changes:
            try:
                answer = worker.call(
                    self._read(lambda graph: apply_request(graph, changes)), APPLY_SECONDS
                )
                _checked(answer)
            except (EngineGoneError, CypherEngineError) as problem:
                log.error("cypher_apply_failed", reason=str(problem))
                worker.stop()
                self._worker = None
                return self._build()
        return worker

    def _build(self) -> WorkerProcess:
        started = time.perf_counter()
        with self._cond:
            self._active = True
            self._pending = Changes()  # the snapshot read below holds them all
        # Spawned first: it loads the engine while the rows are read, and loads the entities
        # while the relations are read.
        worker = self._building = WorkerProcess(self.timeout_ms, wait=False)
        try:
            rows = self._snapshot(
                lambda entities: worker.send({"op": "load", "entities": entities})
            )
            read = time.perf_counter() - started
            _checked(worker.receive(LOAD_SECONDS))
            _checked(worker.call({"op": "load", "relations": rows[1]}, LOAD_SECONDS))
        except BaseException:
            worker.kill()
            raise
        finally:
            self._building = None
        self._worker = worker
        self.builds += 1
        log.info(
            "cypher_projection_built",
            entities=len(rows[0]["name"]),
            relations=len(rows[1]["from"]),
            read_seconds=round(read, 3),
            seconds=round(time.perf_counter() - started, 3),
            pid=worker.pid,
        )
        return worker

    def _snapshot(self, on_entities: Callable[[Columns], None]) -> tuple[Columns, Columns]:
        """Every row, as of a position the writer has reached. The pending changes were
        cleared before the position is read, so every event after it is pending."""

        def read(graph: GraphProjection) -> tuple[Columns, Columns]:
            return snapshot(graph, on_entities)

        if self._read_at is None:
            return cast("tuple[Columns, Columns]", self._read(read))
        position: int = self._read(lambda graph: graph.position)
        return cast("tuple[Columns, Columns]", self._read_at(position, read))

    def sync(self) -> None:
        """Build the projection if there is none and apply what is pending (the service's
        thread, and benches that want the build done)."""
        with self._engine:
            self._current()

    def _run(self) -> None:
        while self._wait_for_work():
            try:
                self.sync()
            except Exception:  # the next change or query tries again
                log.exception("cypher_sync_failed")
                with self._cond:
                    self._cond.wait(RETRY_SECONDS)

    def _idle(self) -> bool:
        return not self._active or (self._worker is not None and not self._pending)

    def _wait_for_work(self) -> bool:
        """Until there is something to build or apply (True) or the service stops (False)."""
        with self._cond:
            while not self._stopping and self._idle():
                self._cond.wait(WAKE_SECONDS)
            return not self._stopping


def _checked(answer: dict[str, Any]) -> dict[str, Any]:
    if not answer.get("ok"):
        raise CypherEngineError(str(answer.get("kind")), str(answer.get("error")))
    return answer
