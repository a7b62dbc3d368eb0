"""The official read tools answered over stdio while the rest of the server is still loading.

A stdio client spawns a fresh server and its first question is usually a read. Importing the
MCP SDK and the actors takes most of a second on a busy machine, several times what the
official server needs to start and answer. Yet a read needs neither: the graph as of the
log's end is the newest checkpoint plus the log after it (as the writer restores it), searched
by the writer's own kind of index (projections.search), and the answer is a pure function of
it (graphmem.tools.memory_reads, the code the tools run). So once graphmem.early_handshake has
answered `initialize`, this thread restores the graph and its search index (the main thread
waits for that, briefly, so as not to halve its share of the interpreter) and answers
`search_nodes`, `open_nodes` and `read_graph` calls while the main thread loads the server;
when the server is ready, it takes over the pipe (`finish`) with every byte this thread read
and did not answer, in order.

What is answered here is exactly what the server would write for the same store: the same
functions over the same models, the response line of graphmem.wire.fast_calls (a test holds
the two paths to the same bytes). Anything else, or anything this path is not sure of (other
tools or methods, arguments it would have to refuse, as_of, a protocol era it does not write),
is left to the server, and so is everything read after it: answers go out in the order the
requests came, and a read never overtakes a write it follows. `notifications/initialized`
changes no answer, so it is passed on without holding up the reads behind it.

`tools/list`, which hosts send before their first call, is answered here from the SDK's own
answer kept at an earlier start (graphmem.early_tools_list names the file) for every profile,
reads or not; the line still goes to the server, whose answer is compared and not written
(graphmem.early_handshake.Handshake.owe). Without a kept answer the line is held like a write.

The models are built from the log once, at start: a write by another process sharing the
data dir during the start-up second is seen from the server's first answer on, as it would
be after the server's own catch-up. The search index is built as the writer builds its
own: its segments (the entities' texts) with the graph, before the first question; its
trigram filter a step at a time between requests (projections.search.WARM_BUDGET: a request
waits a step at most), the segments it has not reached scanned meanwhile. When the server
takes over, its writer adopts the index (`search_index`, actors.search_handover) if its
graph is at the same position, instead of building and warming a second one.

The graph itself goes to the writer sooner, when it starts (`lend_graph`,
actors.graph_handover), if it is what the writer's restore would make (from the newest
checkpoint, at the log's end as the writer finds it): a second
graph held until this thread stops would cost its memory twice over (the first one's freed
objects leave holes in the allocator's arenas). From then on the graph is the writer's alone:
a read not yet answered here waits for the server, in order, and the index's filter is
warmed no further here (an answer or a step under way finishes first: `_graph_lock`).

Too large a store (a checkpoint past EARLY_READS_MAX_SNAPSHOT, more than EARLY_READS_MAX_TAIL
events after it) is not restored twice: the server answers everything, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec

from graphmem.kept_answer import KeptAnswer, shared_copy

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # no cost at run time: ~40 ms to import

    from actors.graph_handover import LentGraph
    from eventstore.lmdb_log import LmdbEventLog
    from graphmem.config import Settings
    from projections.graph import GraphProjection
    from projections.graph_image import GraphImage, ImageSearch
    from projections.search import SearchProjection

__all__ = ["EarlyReads", "serve_settings", "start_early_reads"]

# A checkpoint larger than this (bytes) is left to the server: restoring it here too costs the
# memory of a second graph during start-up. The benchmark's data set checkpoints at about
# 350 bytes per entity: this admits some 140,000 entities.
EARLY_READS_MAX_SNAPSHOT = 48 << 20
# More events than this after the checkpoint (a stale one) would take longer to fold here
# than the server takes to load: left to the server.
EARLY_READS_MAX_TAIL = 100_000
# How long `finish` waits for an answer being written (a client that reads nothing).
FINISH_TIMEOUT = 120.0

_TOOLS = frozenset({"search_nodes", "open_nodes", "read_graph"})
# The handshake-era versions, whose CallToolResult carries neither resultType nor _meta
# (mcp_types.version; a test holds this to the SDK's list).
HANDSHAKE_ERA_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAM_KEYS = frozenset({"name", "arguments"})
_ARGUMENT_KEYS = {
    "search_nodes": frozenset({"query", "entityType", "limit", "offset"}),
    "open_nodes": frozenset({"names"}),
    "read_graph": frozenset({"limit", "offset"}),
}
_INT64 = range(-(2**63), 2**63)
# graphmem.tools.base's rules for a query (multi-line) and an entity type (single line).
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_SINGLE_LINE = re.compile(r"[\x00-\x1f\x7f]")
_READ = 64 * 1024
# How often a read waiting for the restore checks whether the server is taking over.
_STOP_CHECK = 0.05
# How long the writer waits for an answer (or a step of the index's filter) under way here
# before it restores its own graph instead of borrowing this one.
LEND_TIMEOUT = 10.0

_encode_json = msgspec.json.Encoder().encode
_decode_json = msgspec.json.Decoder().decode


@dataclass(frozen=True)
class _Models:
    """The graph as of the log's end at start-up, and its search index (the server's own
    kind, handed to the server's writer when it takes over: `search_index`)."""

    graph: GraphProjection | GraphImage
    search: SearchProjection | ImageSearch


@dataclass(frozen=True)
class _Call:
    request_id: int | str
    tool: str
    arguments: dict[str, Any]


@dataclass
class _Answered:
    """One call answered here, logged by the server once logging is set up."""

    tool: str
    ms: float


@dataclass
class EarlyReads:
    """The thread answering reads; `finish` hands the pipe back to the server."""

    settings: Settings
    version: str  # the protocol version the kept initialize answer agreed
    client: str | None
    pending: bytearray  # read from fd 0 and not answered, in order
    initialize_file: Path  # where the initialize answer is kept (tools/list's beside it)
    reads: bool = True  # whether reads are answered here (else only tools/list)
    _stop_read: int = -1
    _stop_write: int = -1
    # Written once by the restorer when it is done: the idle reading thread starts on the
    # search index's filter then (no polling, which would take the interpreter from it).
    _wake_read: int = -1
    _wake_write: int = -1
    _thread: threading.Thread | None = None
    _restorer: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _restored: threading.Event = field(default_factory=threading.Event)
    # Set once the search index needs no more steps here (built, none, or the thread ended).
    _indexed: threading.Event = field(default_factory=threading.Event)
    _models: _Models | None = None
    _warming: bool = False  # the search index's filter has steps left (`_warm_step`)
    _handed: SearchProjection | None = None  # the index `finish` kept for the server
    # Held while this thread reads the graph (an answer, a step of the index's filter);
    # `lend_graph` takes it to give the graph away, after which it is never read here.
    _graph_lock: threading.Lock = field(default_factory=threading.Lock)
    _lent: bool = False  # the graph is the writer's (`lend_graph`)
    _from_image: bool = False  # the models are the graph's read image (projections.graph_image)
    # The position of the checkpoint the graph was restored from, if the newest stored (0:
    # none, or an older one: the writer's restore would not make this graph, nothing lent).
    _checkpoint: int = 0
    _restore_seconds: float = 0.0  # what restoring that checkpoint took
    warm_steps: int = 0  # steps of the search index's filter done here (for the log)
    _holding: bool = False  # something before the bytes still pending is the server's
    answered: list[_Answered] = field(default_factory=list)
    problem: str | None = None  # why it stopped answering early (for the server's log)
    position: int = 0
    # tools/list requests read here: the SDK's answer to each is kept, or compared with the
    # kept one written here (graphmem.early_handshake.Handshake.owe), by request id.
    owed: list[tuple[int | str, KeptAnswer]] = field(default_factory=list)
    listed: int = 0  # tools/list answered here
    _passed: int = 0  # bytes at the head of `pending` looked at and passed on unanswered

    def start(self) -> None:
        self._stop_read, self._stop_write = os.pipe()
        self._wake_read, self._wake_write = os.pipe()
        if self.reads:
            # Its own thread, so that tools/list (sent right after initialize) is answered
            # while the graph is restored, not after.
            self._restorer = threading.Thread(
                target=self._restore_models, name="graphmem-early-restore", daemon=True
            )
            self._restorer.start()
        else:
            self._restored.set()
            self._indexed.set()
        self._thread = threading.Thread(target=self._run, name="graphmem-early-reads", daemon=True)
        self._thread.start()

    def finish(self, timeout: float = FINISH_TIMEOUT) -> bytes:
        """Stop answering; the bytes read from fd 0 and not answered, in order. Raises
        TimeoutError when the thread is still writing an answer after `timeout`."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b"x")
        deadline = time.monotonic() + timeout
        # The restorer too: the server opens the log next, and it is not shared mid-restore.
        for thread in (self._thread, self._restorer):
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    raise TimeoutError(
                        f"the early {thread.name} thread still ran after {timeout} s"
                    )
        for fd in (self._stop_read, self._stop_write, self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        # The server's own graph takes over and this copy goes; the search index (names and
        # texts, not the graph) is the server's to adopt (`search_index`).
        if self._models is not None and not self._from_image:
            self._handed = cast("SearchProjection", self._models.search)
        self._models = None  # an image's map goes with it
        return bytes(self.pending)

    @property
    def has_search_index(self) -> bool:
        """Whether a search index was built here (so far: the restore may still run); an
        image's is not one the writer adopts."""
        return self._models is not None and not self._from_image

    def lend_graph(self, end: int) -> LentGraph | None:
        """The graph restored here, for the server's writer to serve from instead of
        restoring its own, if it is at the log's `end` (as the writer finds it) and was
        restored from the newest checkpoint; no read here touches it afterwards. At most
        once; None when there is none to lend (not restored, at another position, restored
        from an older checkpoint or none)."""
        from actors.graph_handover import LentGraph  # noqa: PLC0415 (the writer's, loaded by now)

        if not self._graph_lock.acquire(timeout=LEND_TIMEOUT):
            return None  # an answer still under way: the writer restores its own
        try:
            models = self._models
            if (
                self._lent
                or not self._restored.is_set()
                or models is None
                or self._checkpoint == 0
                or models.graph.position != end
            ):
                return None
            self._lent = True
            self._warming = False
            self._indexed.set()  # no more steps here: nobody waits for them
            # Never an image's (`_checkpoint` is 0 then): a restored graph.
            graph = cast("GraphProjection", models.graph)
            return LentGraph(graph, self._checkpoint, self._restore_seconds)
        finally:
            self._graph_lock.release()

    def search_index(self) -> tuple[int, SearchProjection | None]:
        """After `finish`: the search index built here (once; None: none was), and the log
        position of the graph it indexes, for the server's writer to adopt instead of
        building its own (it does when its graph is at that position)."""
        index, self._handed = self._handed, None
        return self.position, index

    def report(self) -> None:
        """Log what was answered here (the canonical call line of each, as the server's own
        calls log it) and why answering stopped early, once logging is set up."""
        import structlog  # noqa: PLC0415 (loaded by the server by now)

        log = structlog.get_logger(__name__)
        for call in self.answered:
            log.info(
                "tool_called",
                tool=call.tool,
                client=self.client,
                session=None,
                outcome="ok",
                is_error=False,
                ms=round(call.ms, 3),
                events=0,
                early=True,
            )
        log.info(
            "early_reads_done",
            answered=len(self.answered),
            tools_listed=self.listed,
            position=self.position,
            handed_over=len(self.pending),
            graph_lent=self._lent,
            search_warmed=not self._warming,
            warm_steps=self.warm_steps,
            problem=self.problem,
        )

    # --- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._serve()
        except Exception as problem:  # the edge: the server answers whatever is left
            self.problem = f"{type(problem).__name__}: {problem}"
        finally:
            self._indexed.set()  # no more steps from here: nobody waits for them

    def _restore_models(self) -> None:
        try:
            self._models = self._restore()
        except Exception as problem:  # the edge: the server answers the reads
            self.problem = f"{type(problem).__name__}: {problem}"
        finally:
            if not self._warming:  # nothing restored, or an index with nothing left to do
                self._indexed.set()
            self._restored.set()
            with contextlib.suppress(OSError):
                os.write(self._wake_write, b"x")

    def _models_restored(self) -> _Models | None:
        """The restored models, once restoring is over (None: it gave up, or the server is
        taking over meanwhile)."""
        while not self._restored.wait(_STOP_CHECK):
            if self._stopping.is_set():
                return None
        return self._models

    def wait_restored(self, timeout: float) -> bool:
        """Wait (at most `timeout`) until the graph is restored, or restoring gave up."""
        return self._restored.wait(timeout)

    def wait_indexed(self, timeout: float) -> bool:
        """Wait (at most `timeout`) until the graph is restored and its search index built
        (filter included), or either gave up, or this thread stopped answering."""
        deadline = time.monotonic() + timeout
        return self._restored.wait(timeout) and self._indexed.wait(
            max(0.0, deadline - time.monotonic())
        )

    def _restore(self) -> _Models | None:
        # Imported here, on this thread, and only what a restore needs (not the actors, which
        # bring structlog and rich: actors.catch_up imports neither): the main thread
        # meanwhile loads the server.
        from actors.catch_up import catch_up  # noqa: PLC0415
        from eventstore.lmdb_log import LmdbEventLog  # noqa: PLC0415
        from projections.graph import GraphProjection  # noqa: PLC0415
        from projections.search import SearchProjection  # noqa: PLC0415

        settings = self.settings
        # Opened as the server opens it: a process shares one environment per data dir, and
        # its first opener's settings are the environment's.
        event_log = LmdbEventLog.open(
            settings.data_dir,
            durability=settings.durability,
            node_id=settings.node_id,
            clock=settings.hybrid_clock(),
        )
        try:
            if settings.graph_image:
                image = self._image(event_log)
                if image is not None:
                    return image
            end = event_log.last_position()
            entries = [
                entry
                for entry in event_log.checkpoints.entries(GraphProjection.name)
                if entry.version == GraphProjection.version and entry.problem is None
            ]
            if entries and entries[-1].size > EARLY_READS_MAX_SNAPSHOT:
                self.problem = f"the checkpoint is larger than {EARLY_READS_MAX_SNAPSHOT} bytes"
                return None
            # As the server restores (actors.checkpointer.restore_newest), without falling
            # back to older checkpoints: a bad one is the server's to report and pass over.
            started = time.perf_counter()
            found = event_log.checkpoints.load(GraphProjection.name, GraphProjection.version)
            graph = (
                GraphProjection() if found is None else GraphProjection.from_snapshot(found.payload)
            )
            if found is not None and graph.position != found.position:
                self.problem = "the checkpoint's snapshot is not at its position"
                return None
            self._restore_seconds = time.perf_counter() - started
            newest = entries[-1].position if entries else 0
            self._checkpoint = found.position if found and found.position == newest else 0
            if end - graph.position > EARLY_READS_MAX_TAIL:
                self.problem = f"more than {EARLY_READS_MAX_TAIL} events after the checkpoint"
                return None
            # A stale checkpoint: the log after it, up to the end, as the writer's start-up
            # folds it (decoded strictly, each position checked to follow the one before:
            # DamagedLogError), so that the writer may serve this graph (`lend_graph`).
            catch_up(event_log, graph.apply_all, graph.position, upto=end)
            if graph.position != end:
                self.problem = f"the log does not continue from {graph.position} to {end}"
                return None
            self.position = end
            # The index's segments now, before a question (one pass over the listing, as
            # cheap as a plain scan's text); until its trigram filter is built, a step at a
            # time between requests (`_warm_step`), a search scans the segments the filter
            # lacks.
            search = SearchProjection.of_graph(graph)
            self._warming = not search.warmed
            return _Models(graph, search)
        finally:
            event_log.close()

    def _image(self, event_log: LmdbEventLog) -> _Models | None:
        """The graph's read image, if it is the graph as the log ends (the writer then serves
        from it too: nothing is restored, nothing lent or handed over)."""
        from projections.graph_image import (  # noqa: PLC0415
            ImageError,
            ImageSearch,
            open_current_image,
        )

        try:
            image, self.position = open_current_image(
                event_log.path, event_log.checkpoints.anchor, event_log
            )
        except ImageError:
            return None
        self._from_image = True
        return _Models(image, ImageSearch(image))

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(0, selectors.EVENT_READ)
        selector.register(self._stop_read, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        try:
            self._answer_pending()
            while not self._stopping.is_set() and not self._holding:
                if self._warm_due():
                    # A step between two reads, whether or not the next is already here: a
                    # client asking without pause still finds the index built soon.
                    self._warm_step()
                ready = {key.fd for key, _ in selector.select(0 if self._warm_due() else None)}
                if self._stop_read in ready or self._stopping.is_set():
                    return
                if self._wake_read in ready:
                    os.read(self._wake_read, _READ)  # the restore is over: steps are due
                if 0 not in ready:
                    continue
                chunk = os.read(0, _READ)
                if not chunk:  # the client closed stdin: the server answers the rest
                    return
                self.pending += chunk
                self._answer_pending()
        finally:
            selector.close()

    def _warm_due(self) -> bool:
        """Whether the search index has steps left (from the restore on: a host's first call
        often comes some time after it, and then waits a step at most)."""
        return self._warming and self._restored.is_set() and self._models is not None

    def _warm_step(self) -> None:
        with self._graph_lock:
            if self._lent:  # the writer's now: `lend_graph` ended the warming
                return
            models = self._models
            # An image's search has nothing to warm: `_warming` is never set for it.
            self._warming = (
                models is not None
                and not self._from_image
                and cast("SearchProjection", models.search).warm(
                    cast("GraphProjection", models.graph)
                )
            )
            self.warm_steps += 1
        if not self._warming:
            self._indexed.set()

    def _answer_pending(self) -> None:
        """Answer the complete lines of `pending` not yet looked at that this path can
        answer; stop at the first one it cannot (that one and all after it are the server's).
        Lines passed on unanswered stay in `pending`, in order, and are never looked at
        again: a tools/list answered here must not be answered twice."""
        while not self._holding and not self._stopping.is_set():
            start = self._passed
            end = self.pending.find(b"\n", start)
            if end < 0:
                break
            line = bytes(self.pending[start : end + 1])
            if len(line) > self.settings.max_line_bytes:
                self._holding = True
                break
            message = _decode(line)
            if (message is None and not line.strip()) or _is_initialized(message):
                # A blank line (the server skips it too) or `initialized`: passed on.
                self._passed = end + 1
            elif (listing := _tools_list_id(message)) is not None:
                if not self._list_tools(listing, line):
                    self._holding = True
                    break
                self._passed = end + 1  # the SDK answers it too: compared, not written
            elif self.reads and (call := self._call(message)) is not None:
                models = self._models_restored()
                with self._graph_lock:
                    # Lent: the writer may fold into the graph now; the server answers.
                    answer = None if models is None or self._lent else self._answer(call, models)
                if answer is None:
                    self._holding = True
                    break
                self._write(answer)
                del self.pending[start : end + 1]
            else:
                self._holding = True
                break

    def _list_tools(self, request_id: int | str, line: bytes) -> bool:
        """Write the kept answer to this tools/list line, if there is one (True); either way
        the SDK's answer to it is kept or compared, by id."""
        from graphmem.early_tools_list import tools_list_file  # noqa: PLC0415

        cache_file = tools_list_file(self.initialize_file, self.settings, line)
        kept = KeptAnswer(cache_file, method="tools/list", shared_file=shared_copy(cache_file.name))
        self.owed.append((request_id, kept))
        answer = kept.read()
        if answer is None:
            return False
        self._write(answer)
        kept.answered = answer
        self.listed += 1
        return True

    def _call(self, message: object) -> _Call | None:
        """The read in `message` when this path answers it exactly as the server would."""
        if not isinstance(message, dict) or message.keys() - _REQUEST_KEYS:
            return None
        request_id, params = message.get("id"), message.get("params")
        if (
            message.get("jsonrpc") != "2.0"
            or message.get("method") != "tools/call"
            or not _plain_id(request_id)
            or not isinstance(params, dict)
            or params.keys() - _PARAM_KEYS
        ):
            return None
        tool, arguments = params.get("name"), params.get("arguments", {})
        if tool not in _TOOLS or not isinstance(arguments, dict):
            return None
        assert isinstance(tool, str)
        if arguments.keys() - _ARGUMENT_KEYS[tool] or not self._plain(tool, arguments):
            return None
        return _Call(request_id, tool, arguments)

    def _plain(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Arguments the tool takes as they are (anything it would refuse is the server's,
        which words the refusal)."""
        limits = self.settings.limits
        if not all(
            _count(arguments.get(key), minimum) for key, minimum in (("limit", 1), ("offset", 0))
        ):
            return False
        if tool == "search_nodes":
            query, entity_type = arguments.get("query"), arguments.get("entityType")
            return _text(query, limits.max_query_chars, _CONTROL_MULTILINE) and (
                entity_type is None
                or _text(entity_type, limits.max_name_chars, _CONTROL_SINGLE_LINE)
            )
        if tool == "open_nodes":
            names = arguments.get("names")
            return (
                isinstance(names, list)
                and len(names) <= limits.max_items
                and all(isinstance(name, str) and _utf8(name) for name in names)
            )
        return True

    def _answer(self, call: _Call, models: _Models) -> bytes:
        from graphmem.tools.memory_reads import graph_page, opened, searched  # noqa: PLC0415

        started = time.perf_counter()
        arguments = call.arguments
        if call.tool == "search_nodes":
            value = searched(
                models.graph,
                models.search,
                arguments["query"],
                entity_type=arguments.get("entityType"),
                offset=arguments.get("offset"),
                limit=arguments.get("limit"),
            )
        elif call.tool == "open_nodes":
            value = opened(models.graph, list(arguments["names"]))
        else:
            value = graph_page(models.graph, arguments.get("offset"), arguments.get("limit"))
        # graphmem.tools.base.render's text and graphmem.wire.fast_calls' line, for a
        # handshake-era session.
        encoded = _encode_json(value)
        text = msgspec.json.format(encoded, indent=2).decode()
        result = {
            "content": [{"text": text, "type": "text"}],
            "structuredContent": msgspec.Raw(encoded),
        }
        data = _encode_json({"jsonrpc": "2.0", "id": call.request_id, "result": result})
        if self._from_image:
            cast("GraphImage", models.graph).release()  # what it read stays cached only
        self.answered.append(_Answered(call.tool, (time.perf_counter() - started) * 1000))
        return data

    @staticmethod
    def _write(data: bytes) -> None:
        view = memoryview(data + b"\n")
        while view:
            view = view[os.write(1, view) :]


def _decode(line: bytes) -> object:
    try:
        return _decode_json(line)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None


def _is_initialized(message: object) -> bool:
    return (
        isinstance(message, dict)
        and message.keys() <= {"jsonrpc", "method", "params"}
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == "notifications/initialized"
    )


def _tools_list_id(message: object) -> int | str | None:
    """The id of a `tools/list` request (any parameters: the kept answer is the line's)."""
    if (
        not isinstance(message, dict)
        or message.keys() - _REQUEST_KEYS
        or message.get("jsonrpc") != "2.0"
        or message.get("method") != "tools/list"
    ):
        return None
    request_id = message.get("id")
    return request_id if _plain_id(request_id) else None


def _plain_id(request_id: object) -> TypeIs[int | str]:
    """An id both parsers read alike and msgspec writes back unchanged (as fast_calls)."""
    if isinstance(request_id, str):
        return _utf8(request_id)
    return isinstance(request_id, int) and not isinstance(request_id, bool) and request_id in _INT64


def _count(value: object, minimum: int) -> bool:
    if value is None:
        return True
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value < 2**63


def _utf8(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the wire guard's to refuse
        return False
    return True


def _text(value: object, max_chars: int, control: re.Pattern[str]) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= max_chars
        and _utf8(value)
        and control.search(value) is None
    )


def start_early_reads(
    argv: Sequence[str],
    initialize_line: bytes,
    kept_answer: bytes,
    after: bytes,
    initialize_file: Path,
    *,
    reads: bool = True,
) -> EarlyReads | None:
    """The early thread for a `graphmem serve` on stdio whose `initialize` was answered early
    with `kept_answer` (kept in `initialize_file`), started: it answers `tools/list` from a
    kept answer and, with `reads` and settings that allow them, the reads; None when this
    start is not one it serves (the server then answers everything). `after`: what was read
    past the initialize line."""
    version = _agreed_version(kept_answer)
    if version is None:
        return None
    settings = serve_settings(argv)
    if settings is None:
        return None
    early = EarlyReads(
        settings,
        version,
        _client_name(initialize_line),
        bytearray(after),
        initialize_file,
        reads=reads and _reads_allowed(settings),
    )
    early.start()
    return early


def _agreed_version(kept_answer: bytes) -> str | None:
    answer = _decode(kept_answer)
    result = answer.get("result") if isinstance(answer, dict) else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if isinstance(version, str) and version in HANDSHAKE_ERA_VERSIONS else None


def _client_name(line: bytes) -> str | None:
    message = _decode(line)
    params = message.get("params") if isinstance(message, dict) else None
    info = params.get("clientInfo") if isinstance(params, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


def serve_settings(argv: Sequence[str]) -> Settings | None:
    """The settings the server will run with (None: the server says what is wrong)."""
    from graphmem.config import Settings, SettingsError, parse_tools  # noqa: PLC0415

    try:
        settings = Settings.from_env()
        items = list(argv)
        while items:
            item = items.pop(0)
            name, eq, value = item.partition("=")
            if name in {"--data-dir", "--tools", "--replicate"} and not eq:
                value = items.pop(0) if items else ""
            if name == "--data-dir" and value:
                settings = settings.with_data_dir(value)
            elif name == "--tools":
                settings = settings.with_tools(parse_tools(value, where="--tools"))
            elif name == "--replicate" and value:
                settings = settings.with_replicate(value)
    except (SettingsError, ValueError):
        return None  # the server says what is wrong
    return settings


def _reads_allowed(settings: Settings) -> bool:
    """Whether the settings let this path answer reads as the server would: the memory tools
    served and not mesh's in their place, no replication (which may bring events in before
    the first answer), the fast path on, no GRAPHMEM_HOOKS."""
    return (
        "memory" in settings.tools
        and "mesh" not in settings.tools
        and not settings.replication.url
        and settings.fast_calls
        and not settings.hooks  # one that does not load stops start-up: answer nothing before
    )
