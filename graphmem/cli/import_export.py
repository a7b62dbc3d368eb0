"""`graphmem import` and `graphmem export`: the official memory server's file (or MemoryMesh's)
in and out."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable
from dataclasses import replace
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from graphmem.cli.arguments import Point, parse_point, positive
from graphmem.cli.command import CliError, Subparsers
from graphmem.config import Settings
from graphmem.data_log import open_event_log
from graphmem.faults import FAULTS, explain
from graphmem.hook_loader import ENTRY_POINT_GROUP
from graphmem.migration import (
    ImportReport,
    MemoryFileError,
    ParsedMemory,
    Progress,
    export_jsonl,
    export_memorymesh,
    import_memory,
    read_memory_file,
    write_atomic,
)
from graphmem.plain_import import import_into_empty
from projections.graph import GraphProjection

if TYPE_CHECKING:
    from tqdm import tqdm  # type: ignore[import-untyped]

# The server (graphmem.app, and through it the MCP SDK: most of a second) is imported only
# where a command runs it: an import into an empty store never does
# (tests/e2e/test_import_loads.py).

__all__ = ["SHOWN_PROBLEMS", "add_parsers"]

SHOWN_PROBLEMS = 20
# The import's checkpoint: in proportion to the graph, about 40 s at 1,000,000 entities on an
# idle 2-core machine, several times that under load.
CHECKPOINT_TIMEOUT = 900.0
# `graphmem export --format`: what the graph is written as.
EXPORTERS: dict[str, Callable[[GraphProjection], bytes]] = {
    "official": export_jsonl,
    "memorymesh": export_memorymesh,
}


def add_parsers(subparsers: Subparsers) -> None:
    """Register `import` and `export`."""
    import_ = subparsers.add_parser(
        "import",
        help="import an official memory file (memory.jsonl or legacy memory.json) or "
        "MemoryMesh's memory file",
        description="Import the official memory server's file into the graph: JSONL, or the "
        "legacy single-document memory.json; or MemoryMesh's memory file (JSONL of node and "
        "edge records; edges keep their weight). Idempotent: only what the graph lacks is added "
        "(missing entities, the observations existing entities lack, missing relations), so "
        "importing the same file again changes nothing. Malformed lines and relations to "
        "missing entities are reported with their line numbers and skipped. Shows progress "
        "on stderr and prints a summary on stdout. Exit code 0 when the import ran (even "
        "with problems reported), 1 when the file cannot be read.",
    )
    import_.add_argument("file", metavar="FILE", help="the memory file to import")
    import_.add_argument(
        "--batch-size",
        type=positive,
        default=1000,
        metavar="N",
        help="records per command, i.e. per log transaction (default 1000)",
    )
    import_.set_defaults(run=_import)

    export = subparsers.add_parser(
        "export",
        help="write the graph in the official memory file format (JSONL)",
        description="Write the whole graph, as one consistent snapshot, in the official "
        "memory server's JSONL format, byte for byte as it writes the file itself: point "
        "MEMORY_FILE_PATH at the result and the official server reads it. Writes to stdout, "
        "or with -o atomically replaces FILE (temp file, then rename).",
    )
    export.add_argument(
        "-o", "--output", metavar="FILE", default=None, help="write to FILE instead of stdout"
    )
    export.add_argument(
        "--format",
        choices=tuple(EXPORTERS),
        default="official",
        help="official: the official memory server's file (default); memorymesh: MemoryMesh's "
        "memory file (node and edge lines, edges with their weight)",
    )
    export.add_argument(
        "--as-of",
        type=parse_point,
        default=None,
        metavar="POS|TIME",
        help="the graph as it was at this log position or ISO-8601 time (UTC unless it says; "
        "a date alone is the start of that day), read from the log without starting a server",
    )
    export.set_defaults(run=_export)


def _import(args: argparse.Namespace, settings: Settings) -> int:
    # A bulk load makes millions of objects that form no cycles (records, events, the graph
    # itself); the cyclic collector would walk the growing heap again and again, a tenth of
    # the CPU of a 200k import. The command ends with the process, so it runs without it.
    gc.disable()
    try:
        return _import_file(args, settings)
    finally:
        gc.enable()


def _import_file(args: argparse.Namespace, settings: Settings) -> int:
    file: str = args.file
    try:
        parsed = read_memory_file(file)
    except MemoryFileError as problem:
        raise CliError(str(problem)) from None
    if parsed.problems and not (parsed.entities or parsed.relations):
        raise CliError(
            f"{file} is not a memory file: no line holds an entity or a relation (first "
            f"problem: {parsed.problems[0]})"
        )
    if settings.checkpoint_every:
        # One checkpoint when the import is done, none while it runs: a bulk load would
        # otherwise stop to snapshot an ever larger graph again and again.
        settings = replace(settings, checkpoint_every=sys.maxsize)
    from tqdm import tqdm  # noqa: PLC0415 (only `import` needs it)

    done = 0
    try:
        with tqdm(
            total=len(parsed.entities) + len(parsed.relations),
            file=sys.stderr,
            unit="record",
            desc="importing",
            dynamic_ncols=True,
        ) as bar:

            def progress(records: int, total: int) -> None:
                nonlocal done
                done = records
                bar.update(records - bar.n)
                if records == total and settings.checkpoint_every:
                    bar.set_description("saving a checkpoint")

            report = _import_into_empty(settings, parsed, args.batch_size, progress)
            if report is None:
                report = _import_folding(settings, parsed, args.batch_size, progress, bar)
    except FAULTS as fault:
        # What was committed before stays; the import is idempotent, so running it again
        # once the fault is fixed adds exactly what is missing.
        raise CliError(
            f"stopped after {done} records: {explain(fault)}; then import {file} again: it "
            "adds only what the graph lacks"
        ) from None
    _print_report(report, file, settings)
    return 0


def _import_into_empty(
    settings: Settings, parsed: ParsedMemory, batch_size: int, progress: Progress
) -> ImportReport | None:
    """The bulk path (graphmem.plain_import) when the store is empty and no hook is to see
    the import's commands; None otherwise, for the folding path."""
    if settings.hooks or entry_points(group=ENTRY_POINT_GROUP):
        return None  # hooks see commands: only the graph writer runs them
    event_log = open_event_log(settings)
    try:
        if event_log.last_position():
            return None
        checkpoint = bool(settings.checkpoint_every)
        return import_into_empty(
            event_log,
            parsed,
            batch_size=batch_size,
            progress=progress,
            checkpoint=checkpoint,
            image=settings.graph_image,
        )
    finally:
        event_log.close()


def _import_folding(
    settings: Settings, parsed: ParsedMemory, batch_size: int, progress: Progress, bar: tqdm
) -> ImportReport:
    """The import through the graph writer: each batch a command, decided and folded."""
    from graphmem.app import running  # noqa: PLC0415 (see the note at the top)

    with running(settings, load_schemas=False, bulk_load=True, graph_images=True) as app:
        report = import_memory(app.graph, parsed, batch_size=batch_size, progress=progress)
        if settings.checkpoint_every:
            # The one checkpoint, saved here rather than by the stop: a stop gives a save
            # 10 s and skips a longer one (a million entities take longer), which would
            # leave the next start to fold the whole import from the log.
            try:
                app.graph.save_checkpoint_blocking(CHECKPOINT_TIMEOUT)
            except TimeoutError:
                bar.write(
                    f"The checkpoint was not saved within {CHECKPOINT_TIMEOUT:.0f} s; "
                    "everything is imported, and the next start reads it from the log "
                    "(more slowly)."
                )
    return report


def _print_report(report: ImportReport, file: str, settings: Settings) -> None:
    kind = {"legacy-json": "legacy JSON document", "memorymesh": "MemoryMesh JSONL"}.get(
        report.format, "JSONL"
    )
    print(f"Imported {file} ({kind}) into {settings.data_dir}")
    print(
        f"  entities:     {report.entities_created} created, "
        f"{report.entities_present} already present"
    )
    print(
        f"  observations: {report.observations_added} added, "
        f"{report.observations_present} already present"
    )
    print(
        f"  relations:    {report.relations_created} created, "
        f"{report.relations_present} already present"
    )
    print(f"  skipped (already present): {report.skipped}")
    print(f"  problems:     {len(report.problems)}")
    for shown in report.problems[:SHOWN_PROBLEMS]:
        print(f"    {shown}")
    if len(report.problems) > SHOWN_PROBLEMS:
        print(f"    ... and {len(report.problems) - SHOWN_PROBLEMS} more")


def _export(args: argparse.Namespace, settings: Settings) -> int:
    as_of: Point | None = args.as_of
    output: str | None = args.output
    exporter = EXPORTERS[args.format]
    from graphmem.app import running  # noqa: PLC0415 (see the note at the top)
    from graphmem.cli.replay import export_as_of  # noqa: PLC0415

    if as_of is not None:
        data = export_as_of(settings, as_of, exporter)
    else:
        with running(settings, load_schemas=False) as app:
            data = app.graph.query_blocking(exporter)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    try:
        write_atomic(output, data)
    except OSError as error:
        raise CliError(f"cannot write {output}: {error}") from None
    return 0
