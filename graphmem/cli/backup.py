"""`graphmem backup` and `graphmem restore`: a consistent copy of a live data dir, and
putting one back (the work is in `graphmem.backup`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphmem.backup import BackupError, restore, take_backup, take_dated_backup
from graphmem.cli.arguments import positive
from graphmem.cli.command import CliError, Subparsers
from graphmem.config import Settings

__all__ = ["add_parsers"]


def add_parsers(subparsers: Subparsers) -> None:
    """Register `backup` and `restore`."""
    backup = subparsers.add_parser(
        "backup",
        help="copy the data dir, even while a server writes to it",
        description="Copy the data dir into the new folder DEST: each LMDB environment (the "
        "log, the embedding cache) by LMDB's compacting copy, a consistent snapshot taken "
        "without stopping writers, and every other file as is; then write DEST/"
        "graphmem-backup.json, the manifest: the log position and node id the copy ends at, "
        "and a sha256 per file. Safe beside a running server.",
    )
    backup.add_argument("dest", type=Path, metavar="DEST", nargs="?", help="a new or empty folder")
    backup.add_argument(
        "--into",
        type=Path,
        metavar="DIR",
        help="instead of DEST: a new graphmem-<UTC time> folder in DIR (what scheduled "
        "backups do, GRAPHMEM_BACKUP_DIR)",
    )
    backup.add_argument(
        "--keep",
        type=positive,
        metavar="N",
        help="with --into: then remove all but the newest N dated backups in DIR",
    )
    backup.set_defaults(run=run_backup)
    put_back = subparsers.add_parser(
        "restore",
        help="make a backup the data dir, after verifying it",
        description="Verify every file of the backup SRC against its manifest, then make it "
        "the data dir. A data dir that is not empty is refused unless --force, which moves "
        "its contents aside to <data dir>.before-restore-<time> (never deletes them); a data "
        "dir a running graphmem holds open is refused even then. The restored data dir takes "
        "a new node id and never writes as the backup's again (nor as GRAPHMEM_NODE_ID, if "
        "set): what that node wrote after the backup keeps its numbers, and with replication "
        "arrives from the hub like another node's.",
    )
    put_back.add_argument("src", type=Path, metavar="SRC", help="a folder `backup` wrote")
    put_back.add_argument(
        "--force", action="store_true", help="replace a data dir that is not empty"
    )
    put_back.add_argument(
        "--keep-node-id",
        action="store_true",
        help="keep the backup's node id instead of taking a new one: only when nothing was "
        "written as that node after the backup (no other copy of it, nothing published to a "
        "replication hub), else those writes' numbers are reused and peers drop the new ones",
    )
    put_back.set_defaults(run=run_restore)


def run_backup(args: argparse.Namespace, settings: Settings) -> int:
    if (args.dest is None) == (args.into is None):
        raise CliError("name either DEST or --into DIR", code=2)
    if args.keep is not None and args.into is None:
        raise CliError("--keep goes with --into DIR", code=2)
    removed: list[Path] = []
    try:
        if args.into is not None:
            keep = args.keep if args.keep is not None else settings.backup_keep
            manifest, dest, removed = take_dated_backup(settings.data_dir, args.into, keep)
        else:
            manifest, dest = take_backup(settings.data_dir, args.dest), args.dest
    except BackupError as problem:
        raise CliError(str(problem)) from None
    pruned = f"; removed {len(removed)} older backup(s)" if removed else ""
    sys.stdout.write(
        f"graphmem backup: {dest} holds the data dir as of log position "
        f"{manifest.position} (node {manifest.node_id}), {len(manifest.files)} file(s)"
        f"{pruned}\n"
    )
    return 0


def run_restore(args: argparse.Namespace, settings: Settings) -> int:
    explicit = frozenset({settings.node_id}) if settings.node_id else frozenset[str]()
    try:
        done = restore(
            args.src,
            settings.data_dir,
            force=args.force,
            retire=explicit,
            keep_node_id=args.keep_node_id,
        )
    except BackupError as problem:
        raise CliError(str(problem)) from None
    manifest = done.manifest
    moved = f"; its former contents are in {done.aside}" if done.aside is not None else ""
    sys.stdout.write(
        f"graphmem restore: {settings.data_dir} now holds the backup {args.src} (log position "
        f"{manifest.position}, node {manifest.node_id}, taken {manifest.created}){moved}\n"
    )
    if done.retired:
        sys.stdout.write(_new_identity(done.node_id, sorted(done.retired), settings.node_id))
    return 0


def _new_identity(node_id: str, retired: list[str], explicit: str | None) -> str:
    names = ", ".join(retired)
    lines = [
        f"It writes as node {node_id} from now on, never again as {names}: what was written "
        f"as {names} after this backup keeps its numbers, and with replication on it arrives "
        "from the hub like another node's.",
        f"With replication: {names} is now a departed member; once every member holds its "
        f"events, `graphmem replication retire` it, and name {node_id} in "
        "GRAPHMEM_REPLICA_MEMBERS in its place (`graphmem replication status` lists both).",
    ]
    if explicit:
        lines.append(
            f"GRAPHMEM_NODE_ID is set to {explicit}: a server of this data dir refuses to start "
            f"as it; set GRAPHMEM_NODE_ID to a new id, or unset it to use {node_id}."
        )
    return "".join(f"graphmem restore: {line}\n" for line in lines)
