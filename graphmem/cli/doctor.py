"""`graphmem doctor`: everything worth checking when something is wrong, each with what to do
(the checks are in `diagnosis`)."""

from __future__ import annotations

import argparse
import os
import sys

from graphmem.cli.command import CliError, Subparsers
from graphmem.config import Settings

__all__ = ["add_parsers"]


def add_parsers(subparsers: Subparsers) -> None:
    """Register `doctor`."""
    doctor = subparsers.add_parser(
        "doctor",
        help="check the data dir, the log, the schemas and the settings; say what to do",
        description="Check what graphmem depends on and print one line per finding: the "
        "settings in force and where each came from, installed extras, the data dir and its "
        "permissions, free disk, the log's integrity (as `graphmem check`), checkpoint "
        "freshness, the schema files with their problems, and whether the replication hub "
        "answers (when GRAPHMEM_REPLICATE is set). Each problem says what to do. "
        "Exit code 1 if anything is a problem, 0 otherwise (warnings included). Read-only: "
        "safe beside a running server.",
    )
    doctor.set_defaults(run=run_doctor)


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    problems = 0
    out = sys.stdout
    # Here, not at the top: the checks load the HTTP service (uvicorn, starlette, PyJWT),
    # which a stdio `graphmem serve` never needs, and every command imports this module.
    from graphmem.cli.diagnosis import Level, diagnose  # noqa: PLC0415

    for finding in diagnose(settings, os.environ, data_dir_given=bool(args.data_dir)):
        todo = f" -> {finding.todo}" if finding.todo else ""
        out.write(f"{finding.level.value:<8} {finding.area}: {finding.what}{todo}\n")
        problems += finding.level is Level.PROBLEM
    out.flush()
    if problems:
        raise CliError(f"{problems} problem(s) found; each line marked PROBLEM says what to do")
    return 0
