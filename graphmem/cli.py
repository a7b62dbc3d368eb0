"""The `graphmem` command line: serve over MCP, and the operator's tools around the log."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace

from tqdm import tqdm  # type: ignore[import-untyped]

from graphmem import replay_cli
from graphmem.app import running
from graphmem.check_cli import run_check
from graphmem.config import DEFAULT_TOOLS, TOOL_FAMILIES, Settings, SettingsError, parse_tools
from graphmem.faults import FAULTS, explain
from graphmem.http_service import TokenError, exposure_problem, load_tokens
from graphmem.inspect_cli import add_commands as add_inspect_commands
from graphmem.inspect_cli import run_command as run_inspect_command
from graphmem.logs import configure_logging
from graphmem.migration import (
    MemoryFileError,
    export_jsonl,
    import_memory,
    read_memory_file,
    write_atomic,
)
from graphmem.transports import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, serve_http, serve_stdio


def _host_port(value: str) -> tuple[str, int]:
    if not value:
        return DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = value, str(DEFAULT_HTTP_PORT)
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not HOST:PORT (e.g. 127.0.0.1:8765)"
        ) from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port {number} is outside 1-65535")
    return host.strip("[]") or DEFAULT_HTTP_HOST, number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphmem",
        description="graphmem: an event-sourced knowledge-graph memory for AI agents, served "
        "over MCP. The data dir is GRAPHMEM_DIR (default: the platform's user data dir).",
    )
    parser.add_argument(
        "--data-dir", help="the data dir to use (overrides GRAPHMEM_DIR)", default=None
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve the memory over MCP (stdio by default)",
        description="Serve the knowledge graph over MCP: on stdio for one client (what MCP "
        "hosts spawn), or with --http as one long-running streamable-HTTP service many "
        "clients share (path /mcp).",
    )
    serve.add_argument(
        "--http",
        nargs="?",
        const="",
        default=None,
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP instead of stdio (default 127.0.0.1:8765); any host "
        "but 127.0.0.1, localhost or ::1 needs a bearer token (GRAPHMEM_HTTP_TOKEN or "
        "GRAPHMEM_HTTP_TOKEN_FILE)",
    )
    serve.add_argument(
        "--tools",
        default=None,
        metavar="FAMILIES",
        help="the tool families to serve, comma-separated, from: "
        f"{', '.join(TOOL_FAMILIES)} (overrides GRAPHMEM_TOOLS; default "
        f"{','.join(DEFAULT_TOOLS)}). memory: the official memory tools and their extensions; "
        "schema: add_/update_/delete_<type> per schema file; mesh: the node/edge/metadata "
        "tools (their read_graph, search_nodes and open_nodes answer in place of memory's)",
    )
    import_ = commands.add_parser(
        "import",
        help="import an official memory file (memory.jsonl or legacy memory.json)",
        description="Import the official memory server's file into the graph: JSONL, or the "
        "legacy single-document memory.json. Idempotent: only what the graph lacks is added "
        "(missing entities, the observations existing entities lack, missing relations), so "
        "importing the same file again changes nothing. Malformed lines and relations to "
        "missing entities are reported with their line numbers and skipped. Shows progress "
        "on stderr and prints a summary on stdout. Exit code 0 when the import ran (even "
        "with problems reported), 1 when the file cannot be read.",
    )
    import_.add_argument("file", metavar="FILE", help="the memory file to import")
    import_.add_argument(
        "--batch-size",
        type=_positive,
        default=1000,
        metavar="N",
        help="records per command, i.e. per log transaction (default 1000)",
    )
    export = commands.add_parser(
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
        "--as-of",
        type=replay_cli.parse_point,
        default=None,
        metavar="POS|TIME",
        help="the graph as it was at this log position or ISO-8601 time (UTC unless it says; "
        "a date alone is the start of that day), read from the log without starting a server",
    )
    add_inspect_commands(commands)
    replay_cli.add_commands(commands)
    commands.add_parser(
        "check",
        help="verify every event and checkpoint in the data dir",
        description="Read the whole log and every checkpoint and verify them: each event "
        "decodes and sits at its own position, positions run without gaps, each node's "
        "sequence numbers, transactions and clock stamps run in order, the per-node index "
        "matches the log, and each checkpoint's header and checksum hold. Prints one line "
        "per problem (where, what is wrong) and what to do; exit code 1 if anything is "
        "damaged, 0 with a one-line summary when all is sound. Read-only: safe beside a "
        "running server.",
    )
    return parser


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not positive")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    # Past a file size limit (ulimit -f) a write should fail with EFBIG and be reported like
    # a full disk; by default SIGXFSZ kills the process instead, mid-write.
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as problem:
        print(f"graphmem: {problem}", file=sys.stderr)
        return 2
    if args.data_dir:
        settings = settings.with_data_dir(args.data_dir)
    command = args.command or "serve"
    tools = getattr(args, "tools", None)
    if tools is not None:
        try:
            settings = settings.with_tools(parse_tools(tools, where="--tools"))
        except SettingsError as problem:
            print(f"graphmem: {problem}", file=sys.stderr)
            return 2
    configure_logging(settings.log_level)
    try:
        code = _run(settings, command, args)
    except FAULTS as fault:
        print(f"graphmem {command}: {explain(fault)}", file=sys.stderr)
        return 1
    if code is None:
        parser.print_help(sys.stderr)
        return 2
    return code


def _run(settings: Settings, command: str, args: argparse.Namespace) -> int | None:
    """Run `command`; None if there is no such command."""
    if command == "serve":
        return _serve(settings, getattr(args, "http", None))
    if command == "import":
        return _import(settings, args.file, args.batch_size)
    if command == "export":
        return _export(settings, args.output, args.as_of)
    if command == "check":
        return run_check(settings, sys.stdout, sys.stderr)
    if (code := run_inspect_command(settings, args)) is not None:
        return code
    return replay_cli.run_command(settings, args)


def _serve(settings: Settings, http: tuple[str, int] | None) -> int:
    if http is None:
        with running(settings, serve_stale=True) as app:
            serve_stdio(app)
        return 0
    # Checked before the store opens: an unsafe service must not start at all.
    try:
        tokens = load_tokens(settings.http)
    except TokenError as error:
        print(f"graphmem serve: {error}", file=sys.stderr)
        return 2
    if (unsafe := exposure_problem(http[0], tokens)) is not None:
        print(f"graphmem serve: {unsafe}", file=sys.stderr)
        return 2
    with running(settings, serve_stale=True) as app:
        serve_http(app, *http, tokens)
    return 0


SHOWN_PROBLEMS = 20


def _import(settings: Settings, file: str, batch_size: int) -> int:
    try:
        parsed = read_memory_file(file)
    except MemoryFileError as problem:
        print(f"graphmem import: {problem}", file=sys.stderr)
        return 1
    if parsed.problems and not (parsed.entities or parsed.relations):
        print(
            f"graphmem import: {file} is not a memory file: no line holds an entity or a "
            f"relation (first problem: {parsed.problems[0]})",
            file=sys.stderr,
        )
        return 1
    if settings.checkpoint_every:
        # One checkpoint when the import is done (on stop), none while it runs: a bulk load
        # would otherwise stop to snapshot an ever larger graph again and again.
        settings = replace(settings, checkpoint_every=sys.maxsize)
    done = 0
    try:
        with (
            running(settings, load_schemas=False) as app,
            tqdm(
                total=len(parsed.entities) + len(parsed.relations),
                file=sys.stderr,
                unit="record",
                desc="importing",
                dynamic_ncols=True,
            ) as bar,
        ):

            def progress(records: int, total: int) -> None:
                nonlocal done
                done = records
                bar.update(records - bar.n)

            report = import_memory(app.graph, parsed, batch_size=batch_size, progress=progress)
    except FAULTS as fault:
        # What was committed before stays; the import is idempotent, so running it again
        # once the fault is fixed adds exactly what is missing.
        print(
            f"graphmem import: stopped after {done} records: {explain(fault)}; then import "
            f"{file} again: it adds only what the graph lacks",
            file=sys.stderr,
        )
        return 1
    kind = "legacy JSON document" if report.format == "legacy-json" else "JSONL"
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
    return 0


def _export(settings: Settings, output: str | None, as_of: replay_cli.Point | None) -> int:
    if as_of is not None:
        try:
            data = replay_cli.export_as_of(settings, as_of)
        except replay_cli.ReplayError as problem:
            print(f"graphmem export: {problem}", file=sys.stderr)
            return 1
    else:
        with running(settings, load_schemas=False) as app:
            data = app.graph.query_blocking(export_jsonl)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    try:
        write_atomic(output, data)
    except OSError as error:
        print(f"graphmem export: cannot write {output}: {error}", file=sys.stderr)
        return 1
    return 0
