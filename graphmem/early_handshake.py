"""`initialize` answered over stdio before the MCP SDK and the store are loaded.

Every stdio client spawns a fresh server and waits for the `initialize` answer; importing the
SDK, the actors and the projections takes most of a second on a busy machine, several times
the official server's whole start-up. Yet the answer is a pure function of the request line
and of the server's identity (the tool families, which decide the instructions, the graphmem
and SDK versions, whether graph_cypher is installed), none of which needs the SDK.

So the first start with a given request and configuration serves `initialize` as always and
keeps the SDK's answer, byte for byte, in the data dir (`handshake/`) and in the user's cache
(graphmem.kept_answer: the name leaves the data dir out, so a new store finds it). The next
start with the same request line, install and configuration reads that line, writes the
kept answer at once, and only then imports the rest. The SDK still receives the same
`initialize` line (its session must be initialized), and its answer is compared with the one
sent and not written again: a difference (a configuration this fingerprint missed) is
logged and the kept answer replaced.

The `tools/list` that hosts send next is answered the same way, from the SDK's answer kept
beside this one (graphmem.early_tools_list names it; graphmem.early_reads writes it): every
request answered early is a `KeptAnswer` owed by id, whose SDK answer is compared, not written.

This module imports only the standard library and platformdirs: what it costs is paid before
the answer. `GRAPHMEM_EARLY_HANDSHAKE=0` turns it off (and the early tools/list with it).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from graphmem.cypher import available as cypher_available
from graphmem.kept_answer import KeptAnswer, shared_copy

if TYPE_CHECKING:
    from graphmem.early_reads import EarlyReads
    from projections.search import SearchProjection

__all__ = ["Handshake", "KeptAnswer", "answer_early"]

# The first line is read whole before anything is answered; a longer one is not an initialize
# this module keeps answers for, and goes to the server as read.
_MAX_FIRST_LINE = 64 * 1024
_READ = 64 * 1024
# Options of `graphmem [--data-dir D] [serve [--tools F] [--replicate URL]]` with a value; any
# other argument (--http, --help, another command) takes the ordinary path.
_VALUED = frozenset({"--data-dir", "--tools", "--replicate"})
_ON = frozenset({"", "1", "true", "yes", "on"})  # config._flag's spellings
# Where the answer is written: capabilities (server.py), identity (tool_runner.py), instructions.
_SERVER_MODULES = tuple(
    Path(__file__).with_name(name) for name in ("server.py", "tool_runner.py", "instructions.py")
)


@dataclass
class Handshake:
    """What the early path did: the bytes it read (the server reads them first), and the
    requests among them whose SDK answer is kept or compared (`owed`, by id)."""

    consumed: bytes
    owed: dict[str, KeptAnswer] = field(default_factory=dict)
    # The reads answered while the server loads (graphmem.early_reads), holding what was read
    # past the initialize line until the server takes the pipe over (`take_over`).
    early: EarlyReads | None = None
    # Names the kept file of a `tools/list` request line (None: nothing kept for this session):
    # the first one the server reads itself, with nothing written early for it, is owed too,
    # so a store's first start keeps both answers (graphmem.wire calls `keep_listing`).
    list_keeper: Callable[[bytes], KeptAnswer | None] | None = None
    # Given the early reads' search index when they stop (`take_over`), with the log position
    # of the graph it indexes (actors.search_handover): the server's writer adopts it.
    hand_search_to: Callable[[int, SearchProjection | None], None] | None = None

    def owe(self, request_id: int | str, kept: KeptAnswer) -> None:
        """The SDK's answer to `request_id` is to be kept, or compared with `kept.answered`."""
        # By string: the SDK correlates "7" and 7 as one id (mcp.shared.dispatcher), and an
        # answer written twice would be a protocol error the client cannot recover from.
        self.owed[str(request_id)] = kept

    @property
    def answered(self) -> bytes | None:
        """The initialize answer written early, if one was."""
        return next((k.answered for k in self.owed.values() if k.method == "initialize"), None)

    def take_over(self) -> None:
        """Stop the early reads, if any: what they read and did not answer follows
        `consumed`, for the server to read in order."""
        early, self.early = self.early, None
        if early is not None:
            self.consumed += early.finish()
            if self.hand_search_to is not None:
                self.hand_search_to(*early.search_index())
            for request_id, kept in early.owed:
                self.owe(request_id, kept)
                self.list_keeper = None  # the early thread read the session's tools/list
            early.report()

    def keep_listing(self, request_id: int | str, line: bytes) -> None:
        """A `tools/list` request the server reads itself: the SDK's answer to the first one
        is kept for the next start (its line names the file), unless one already was owed."""
        keeper, self.list_keeper = self.list_keeper, None
        if keeper is not None and str(request_id) not in self.owed:
            kept = keeper(line)
            if kept is not None:
                self.owe(request_id, kept)

    def owns(self, response_id: object) -> bool:
        """Whether a response is the SDK's answer to a request read early."""
        return str(response_id) in self.owed

    def method(self, response_id: object) -> str | None:
        """The method of the request read early that `response_id` answers."""
        kept = self.owed.get(str(response_id))
        return None if kept is None else kept.method

    def settle(
        self, response_id: object, data: bytes, *, success: bool
    ) -> tuple[bytes | None, str | None]:
        """The SDK's answer line to a request read early: what to write (None: already
        written) and, when the kept answer was wrong, why (for the log). Once settled, the id
        is the client's again (MCP forbids reusing it; a client that does gets its answer)."""
        return self.owed.pop(str(response_id)).settle(data, success=success)


def _stdio_serve_data_dir(argv: Sequence[str]) -> str | None:
    """The --data-dir of a `graphmem serve` on stdio ("" when not given), or None when
    `argv` is anything else."""
    data_dir, commands, items = "", 0, list(argv)
    while items:
        item = items.pop(0)
        name, eq, value = item.partition("=")
        if name in _VALUED:
            if not eq:
                if not items:
                    return None
                value = items.pop(0)
            if name == "--data-dir":
                data_dir = value
        elif item == "serve" and commands == 0:
            commands = 1
        else:
            return None
    return data_dir


def streamable(fd: int) -> bool:
    """True for a pipe or a socket, which the event loop can watch."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _first_line() -> bytes:
    """Bytes from fd 0 up to and including the first newline (or the end, or the cap)."""
    consumed = bytearray()
    while b"\n" not in consumed and len(consumed) < _MAX_FIRST_LINE:
        chunk = os.read(0, _READ)
        if not chunk:
            break
        consumed += chunk
    return bytes(consumed)


def _initialize_id(line: bytes) -> int | str | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id


def _without_data_dir(argv: Sequence[str]) -> list[str]:
    """`argv` without its --data-dir option: the answers are the same for every store."""
    kept, items = [], list(argv)
    while items:
        item = items.pop(0)
        if item == "--data-dir":
            items = items[1:]
        elif not item.startswith("--data-dir="):
            kept.append(item)
    return kept


def _fingerprint(argv: Sequence[str], line: bytes) -> str:
    """Everything the initialize answer depends on, hashed: the install and the settings,
    not the data dir (neither answer reads the store), so a new store finds the answers kept
    for another (graphmem.kept_answer's shared copy)."""

    def installed(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "-"

    edited = ",".join(_edited(module) for module in _SERVER_MODULES)
    settings = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith("GRAPHMEM_") and k != "GRAPHMEM_DIR"
    )
    parts = [
        "v2",
        json.dumps(_without_data_dir(argv)),
        json.dumps(settings),
        # Which install: two environments of one version may differ in what they load.
        sys.prefix,
        str(_SERVER_MODULES[0].parent),
        installed("graphmem"),
        installed("mcp"),
        str(cypher_available()),
        edited,
    ]
    digest = hashlib.sha256("\0".join(parts).encode())
    digest.update(b"\0" + line)
    return digest.hexdigest()[:32]


def _edited(module: Path) -> str:
    try:
        source = module.stat()
    except OSError:
        return "-"
    return f"{source.st_mtime_ns}:{source.st_size}"


def answer_early(argv: Sequence[str]) -> Handshake | None:
    """For a `graphmem serve` on stdio pipes, read the first line and, when an answer to it
    was kept, write that answer to fd 1 now. None: not a stdio serve (nothing was read)."""
    # On only when plainly on: a value Settings refuses is reported by the ordinary path.
    if os.environ.get("GRAPHMEM_EARLY_HANDSHAKE", "1").strip().lower() not in _ON:
        return None
    data_dir = _stdio_serve_data_dir(argv)
    if data_dir is None or not (streamable(0) and streamable(1)):
        return None
    consumed = _first_line()
    end = consumed.find(b"\n")
    request_id = _initialize_id(consumed[:end]) if end >= 0 else None
    if request_id is None:
        return Handshake(consumed)
    if not data_dir:
        data_dir = os.environ.get("GRAPHMEM_DIR") or platformdirs.user_data_dir("graphmem")
    name = _fingerprint(argv, consumed[:end])
    cache_file = Path(data_dir).expanduser() / "handshake" / f"{name}.json"
    kept = KeptAnswer(cache_file, shared_file=shared_copy(cache_file.name))
    handshake = Handshake(consumed, list_keeper=_list_keeper(argv, cache_file))
    handshake.owe(request_id, kept)
    answer = kept.read()
    if answer is None:
        return handshake
    try:
        view = memoryview(answer + b"\n")
        while view:
            view = view[os.write(1, view) :]
    except OSError:  # the client is gone: the server finds out on its own
        return handshake
    kept.answered = answer
    _start_early_reads(argv, handshake, end, cache_file)
    return handshake


def _list_keeper(argv: Sequence[str], cache_file: Path) -> Callable[[bytes], KeptAnswer | None]:
    """What names the kept answer of a `tools/list` line in the session whose initialize
    answer is kept in `cache_file`; called by the wire, once the server is loaded."""

    def keeper(line: bytes) -> KeptAnswer | None:
        from graphmem.early_reads import serve_settings  # noqa: PLC0415 (loaded by now)
        from graphmem.early_tools_list import tools_list_file  # noqa: PLC0415

        settings = serve_settings(argv)
        if settings is None:
            return None
        path = tools_list_file(cache_file, settings, line)
        return KeptAnswer(path, method="tools/list", shared_file=shared_copy(path.name))

    return keeper


def _start_early_reads(
    argv: Sequence[str], handshake: Handshake, end: int, cache_file: Path
) -> None:
    """Answer `tools/list` and reads from here on while the server loads
    (graphmem.early_reads); it reads on from what was read past the initialize line."""
    from graphmem.early_reads import start_early_reads  # noqa: PLC0415 (only when it runs)
    from projections.heap import map_large_blocks_while_loading  # noqa: PLC0415 (as above)

    map_large_blocks_while_loading()  # before the early reads restore (projections.heap)
    reads = os.environ.get("GRAPHMEM_EARLY_READS", "1").strip().lower() in _ON
    line, after = handshake.consumed[: end + 1], handshake.consumed[end + 1 :]
    assert handshake.answered is not None
    early = start_early_reads(argv, line, handshake.answered, after, cache_file, reads=reads)
    if early is not None:
        handshake.consumed, handshake.early = line, early
