"""The `graphmem` command line: serve over MCP, and the operator's tools around the log.

One module per command group, each with `add_parsers(subparsers)` registering its commands and
a `run` default per command (the convention and the one error type are in `command`):

- `serve`: `graphmem serve` (the default command);
- `import_export`: `import`, `export` (and `export --as-of`);
- `log_commands`: `log`, `history` (rows and filters in `log_view`);
- `stats`: `stats`;
- `replay`: `diff`, `rebuild`;
- `check`: `check`;
- `replication`: `replication status`, `hub`;
- `compact`: `compact` (tombstone collection);
- `backup`: `backup`, `restore`;
- `doctor`: `doctor` (its checks in `diagnosis`).

`arguments` holds the argument types they share, above all the one "position or time" parser.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from graphmem.cli import (
    backup,
    check,
    compact,
    doctor,
    import_export,
    log_commands,
    replay,
    replication,
    serve,
    stats,
)
from graphmem.cli.command import CliError, report, run_command
from graphmem.config import Settings, SettingsError
from graphmem.early_handshake import Handshake
from graphmem.logs import LogFile, configure_logging
from graphmem.version import graphmem_version

__all__ = ["CliError", "build_parser", "main", "run_command"]

COMMAND_GROUPS = (
    serve,
    import_export,
    log_commands,
    stats,
    replay,
    check,
    replication,
    compact,
    backup,
    doctor,
)


def build_parser() -> argparse.ArgumentParser:
    """The `graphmem` parser, every command group registered on it."""
    parser = argparse.ArgumentParser(
        prog="graphmem",
        description="graphmem: an event-sourced knowledge-graph memory for AI agents, served "
        "over MCP. The data dir is GRAPHMEM_DIR (default: the platform's user data dir).",
    )
    parser.add_argument(
        "--data-dir", help="the data dir to use (overrides GRAPHMEM_DIR)", default=None
    )
    parser.add_argument("--version", action="version", version=f"graphmem {graphmem_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.add_parsers(commands)
    # A bare `graphmem` serves on stdio, as it always has: host configurations spawn it so.
    parser.set_defaults(command="serve", run=serve.serve)
    return parser


def main(argv: Sequence[str] | None = None, handshake: Handshake | None = None) -> int:
    # Past a file size limit (ulimit -f) a write should fail with EFBIG and be reported like
    # a full disk; by default SIGXFSZ kills the process instead, mid-write.
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    args = build_parser().parse_args(argv)
    args.handshake = handshake  # `serve` on stdio reads what the early path read first
    try:
        settings = Settings.from_env()
    except SettingsError as problem:
        return report(CliError(str(problem), code=2))
    if args.data_dir:
        settings = settings.with_data_dir(args.data_dir)
    _configure_logging(args.command, settings)
    return run_command(args, settings)


def _configure_logging(command: str, settings: Settings) -> None:
    """JSON lines for `serve` and whenever stderr is not a terminal (scripts and tests read
    them); for a one-shot command at a terminal, plain lines, warnings and errors only unless
    GRAPHMEM_LOG_LEVEL asks for more."""
    human = command != "serve" and sys.stderr.isatty() and settings.log_file is None
    default = "WARNING" if human else "INFO"
    log_file = (
        LogFile(settings.log_file, settings.log_file_max_bytes, settings.log_file_backups)
        if settings.log_file is not None
        else None
    )
    configure_logging(settings.log_level or default, human=human, log_file=log_file)
