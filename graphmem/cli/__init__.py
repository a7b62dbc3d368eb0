"""The `graphmem` command (the commands themselves are in `graphmem.cli.entry`).

This package imports almost nothing: a stdio `graphmem serve` answers `initialize` before
the SDK and the store are loaded (graphmem.early_handshake), and importing the commands here
would load them all first.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["CliError", "build_parser", "main", "run_command"]

# How long a stdio serve lets the early reads restore the graph and build its search index
# before loading the server.
RESTORE_FIRST_WAIT = 5.0


def main(argv: Sequence[str] | None = None) -> int:
    """The `graphmem` command; with `argv` None (a real process) a stdio serve may answer
    `initialize` early."""
    handshake = None
    if argv is None:
        from graphmem.early_handshake import answer_early  # noqa: PLC0415 (first: it must be light)

        handshake = answer_early(sys.argv[1:])
        if handshake is not None and handshake.early is not None:
            # The restore and the search index first: on a busy machine, importing the
            # server meanwhile would halve their share of the interpreter and delay the
            # first answers (the index is the server's too: its writer adopts it).
            handshake.early.wait_indexed(RESTORE_FIRST_WAIT)
    from graphmem import lean_imports  # noqa: PLC0415 (after the early answer, as entry)

    lean_imports.structlog_without_rich()  # before anything imports structlog
    from graphmem.cli.entry import main as run  # noqa: PLC0415 (after the early answer)

    return run(argv, handshake)


def __getattr__(name: str) -> Any:
    """`CliError`, `build_parser` and `run_command`, loaded when first asked for."""
    if name in {"CliError", "build_parser", "run_command"}:
        from graphmem.cli import entry  # noqa: PLC0415 (lazy, as main)

        return getattr(entry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
