"""The convention every `graphmem` command follows, and the one error they report with.

A command module exposes `add_parsers(subparsers)`, which registers its commands and attaches
each one's `Command` with `set_defaults(run=...)`. A command returns its exit code, or raises
`CliError`: `run_command` prints that as one line, `graphmem <command>: <message>`, on stderr,
and exits with its code. A fault of the stored log or of the disk (`graphmem.faults`) is worded
the same way, never shown as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from eventstore.log import RetiredNodeIdError
from graphmem.config import Settings
from graphmem.faults import FAULTS, explain

__all__ = ["CliError", "Command", "Subparsers", "report", "run_command"]

Command: TypeAlias = Callable[[argparse.Namespace, Settings], int]
"""A command: its parsed arguments and the settings in, its exit code out."""

if TYPE_CHECKING:
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction


class CliError(Exception):
    """A command cannot do what was asked; `message` says why and what to do, `code` is the
    exit code (1: the command failed, 2: it was called wrongly)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def report(error: CliError, command: str | None = None) -> int:
    """Print `error` as its one line on stderr; returns its exit code."""
    prefix = f"graphmem {command}" if command else "graphmem"
    print(f"{prefix}: {error.message}", file=sys.stderr)
    return error.code


def run_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run the command `args` names (its `run` default) and return its exit code; a
    `CliError` or a fault becomes one line on stderr."""
    command: Command = args.run
    try:
        return command(args, settings)
    except CliError as error:
        return report(error, args.command)
    except FAULTS as fault:
        return report(CliError(explain(fault)), args.command)
    except RetiredNodeIdError as refused:  # a setting to change, said in one line
        return report(CliError(str(refused), code=2), args.command)
    except BrokenPipeError:
        # The reader went away (`graphmem log | head`): stop quietly, as other tools do, and
        # keep the interpreter's final flush from failing on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
