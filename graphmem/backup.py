"""Backups of a live data dir, and restoring one: LMDB's compacting copy of each environment,
a manifest, and the checks a restore makes before it swaps a copy in.

Each LMDB environment (the log's, `embeddings.lmdb`) is copied by `Environment.copy(compact=
True)`, which reads through one read transaction: a consistent snapshot taken beside running
writers, which never wait for it. The manifest's position and node id are read back from the
copied log itself, so they describe exactly what the copy holds, whatever was appended while it
ran. Other files (the graph home's config and audit lines) are plain copies. A backup is built
in a hidden folder next to DEST and renamed into place last: a DEST that exists is complete.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import lmdb
import msgspec

from eventstore import keys
from eventstore.identity import renew_node_id
from graphmem.replication.status import STATE_FILE, read_state
from graphmem.version import graphmem_version
from projections.graph_image import IMAGE_FILE

__all__ = [
    "MANIFEST_FILE",
    "BackupError",
    "Manifest",
    "Restored",
    "data_dir_in_use",
    "read_manifest",
    "restore",
    "take_backup",
    "take_dated_backup",
    "verify_backup",
]

MANIFEST_FILE = "graphmem-backup.json"
FORMAT = 1
_LOG_FILE = "data.mdb"
_LOG_LOCK = "lock.mdb"
_ENV_SUFFIX = ".lmdb"
_LOCK_SUFFIX = "-lock"
_MAX_DBS = 16
_CHUNK = 1 << 20


class BackupError(Exception):
    """A backup or restore cannot go ahead; the message says why and what to do."""


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """What a backup holds: the log position and node id its copy of the log ends at, and
    the sha256 of every file (paths relative to the backup, `/`-separated)."""

    format: int
    graphmem_version: str
    created: str
    position: int
    node_id: str
    files: dict[str, str]


def take_backup(data_dir: Path, dest: Path) -> Manifest:
    """Copy the live data dir `data_dir` to the new folder `dest`, with its manifest."""
    data_dir, dest = data_dir.resolve(), dest.expanduser().absolute()
    if not (data_dir / _LOG_FILE).is_file():
        raise BackupError(f"no graphmem log in {data_dir} (set GRAPHMEM_DIR or --data-dir)")
    if dest.resolve().is_relative_to(data_dir):
        raise BackupError(f"{dest} is inside the data dir {data_dir}; back up to a folder outside")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty folder; name a new folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.partial-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        _copy_tree(data_dir, staging)
        manifest = _manifest_of(staging)
        (staging / MANIFEST_FILE).write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
        _fsync(staging / MANIFEST_FILE)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


DATED_PREFIX = "graphmem-"


def take_dated_backup(data_dir: Path, into: Path, keep: int) -> tuple[Manifest, Path, list[Path]]:
    """A backup into a new `graphmem-<UTC time>` folder of `into`, then retention: of the
    dated backups there (folders so named holding a manifest; nothing else is touched), only
    the newest `keep` stay. Returns the manifest, the new folder and the folders removed."""
    # To the microsecond: two backups in one second still sort in the order taken.
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    dest = into / f"{DATED_PREFIX}{stamp}"
    while dest.exists():
        dest = into / f"{DATED_PREFIX}{stamp}-{secrets.token_hex(2)}"
    manifest = take_backup(data_dir, dest)
    dated = sorted(
        p
        for p in into.iterdir()
        if p.name.startswith(DATED_PREFIX) and p.is_dir() and (p / MANIFEST_FILE).is_file()
    )
    # Names sort by time; the one just taken is never removed, whatever `keep` says.
    removed = [p for p in dated[: max(len(dated) - keep, 0)] if p != dest]
    for path in removed:
        shutil.rmtree(path)
    return manifest, dest, removed


def _copy_tree(source: Path, target: Path) -> None:
    """Every environment by LMDB's compacting copy, every other regular file as is; lock
    files and symlinks are left out (a lock file belongs to running processes), and so is the
    graph's image (projections.graph_image), which a restored log would not match anyway."""
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        there = target / here.relative_to(source)
        there.mkdir(exist_ok=True)
        dirs.sort()
        if _LOG_FILE in files:
            _copy_env(here, there, subdir=True)
        for name in sorted(files):
            path = here / name
            if name in (_LOG_FILE, _LOG_LOCK) and _LOG_FILE in files:
                continue
            if _LOG_FILE in files and (name == IMAGE_FILE or name.startswith(f".{IMAGE_FILE}.")):
                continue  # the graph's image: derived from the log, made again by the next save
            if name.endswith(_LOCK_SUFFIX) or path.is_symlink() or not path.is_file():
                continue
            if name.endswith(_ENV_SUFFIX):
                _copy_env(path, there / name, subdir=False)
            else:
                shutil.copyfile(path, there / name)


def _copy_env(path: Path, to: Path, *, subdir: bool) -> None:
    # Read-only: the copy takes one read transaction and never holds the writer's lock.
    env = lmdb.open(str(path), subdir=subdir, readonly=True, max_dbs=_MAX_DBS)
    try:
        env.copy(str(to), compact=True)
    finally:
        env.close()


def _manifest_of(folder: Path) -> Manifest:
    env = lmdb.open(str(folder), readonly=True, lock=False, max_dbs=_MAX_DBS)
    try:
        log_db, meta_db = env.open_db(b"log"), env.open_db(b"meta")
        with env.begin() as txn:
            cursor = txn.cursor(db=log_db)
            position = keys.from_u64(cursor.key()) if cursor.last() else 0
            node_id = bytes(txn.get(keys.META_NODE_ID, db=meta_db) or b"").decode()
    finally:
        env.close()
    files = {}
    for path in _files(folder):
        _fsync(path)
        files[path.relative_to(folder).as_posix()] = _sha256(path)
    return Manifest(
        format=FORMAT,
        graphmem_version=graphmem_version(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        position=position,
        node_id=node_id,
        files=files,
    )


def _files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST_FILE:
            yield path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_manifest(backup: Path) -> Manifest:
    """The manifest of the backup folder `backup`."""
    path = backup / MANIFEST_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BackupError(
            f"{backup} is not a graphmem backup (it has no {MANIFEST_FILE}); name the folder "
            "`graphmem backup` wrote"
        ) from None
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except msgspec.DecodeError as problem:
        raise BackupError(f"{path} is damaged ({problem}); use another backup") from None
    if manifest.format != FORMAT:
        raise BackupError(
            f"{path} is backup format {manifest.format}; this graphmem reads format {FORMAT}"
        )
    if _LOG_FILE not in manifest.files:
        raise BackupError(f"{path} lists no {_LOG_FILE}: not a backup of a data dir")
    return manifest


def verify_backup(backup: Path, manifest: Manifest) -> list[str]:
    """The problems of the files of `backup` against `manifest` (empty: every file there and
    its checksum right)."""
    problems = []
    for name, expected in sorted(manifest.files.items()):
        path = backup / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            problems.append(f"{name}: not a path inside the backup")
        elif not path.is_file():
            problems.append(f"{name}: missing")
        elif _sha256(path) != expected:
            problems.append(f"{name}: checksum differs from the manifest (the file was changed)")
    return problems


def data_dir_in_use(data_dir: Path) -> bool:
    """Whether a process holds the data dir's log open (a server, a running command).
    Never call it in a process that has the log open itself: closing any descriptor of the
    lock file drops all of this process's POSIX locks on it, LMDB's included.

    Every process with an LMDB environment open holds a shared POSIX lock on the first byte
    of its lock file, from open to close, idle or not; an exclusive lock on that byte is then
    refused. It is only tested, and released at once (LMDB's own opener waits for it).
    """
    lock_file = data_dir / _LOG_LOCK
    if not lock_file.is_file():
        return False
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:  # not ours to write: whoever holds it, we can neither restore nor tell
        return False
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            return True
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)
        return False
    finally:
        os.close(fd)


class Restored(msgspec.Struct, frozen=True):
    """What a restore did: the backup's manifest, where the data dir's former contents went
    (None when it was empty or new), and the node id the data dir writes as from now on
    with the ids it no longer writes as (unchanged and empty with keep_node_id)."""

    manifest: Manifest
    aside: Path | None
    node_id: str
    retired: frozenset[str]


def restore(
    backup: Path,
    data_dir: Path,
    *,
    force: bool,
    retire: frozenset[str] = frozenset(),
    keep_node_id: bool = False,
) -> Restored:
    """Verify `backup` and make it the data dir `data_dir`, under a new node id (see
    eventstore.identity: the backup's id, and `retire`, ids the node wrote as by
    GRAPHMEM_NODE_ID, are never written as again) unless `keep_node_id`."""
    backup, data_dir = backup.expanduser().resolve(), data_dir.expanduser().absolute()
    manifest = read_manifest(backup)
    problems = verify_backup(backup, manifest)
    if problems:
        raise BackupError(
            f"the backup in {backup} does not verify, nothing was restored: {'; '.join(problems)}"
        )
    occupied = data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir()))
    if occupied and not force:
        raise BackupError(
            f"the data dir {data_dir} is not empty; restore into a new folder (--data-dir), "
            "or pass --force to move its contents aside first"
        )
    if occupied and data_dir_in_use(data_dir):
        raise BackupError(
            f"the data dir {data_dir} is open in a running graphmem (a server or a command); "
            "stop it first, then restore"
        )
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = data_dir.parent / f".{data_dir.name}.restoring-{secrets.token_hex(4)}"
    try:
        shutil.copytree(backup, staging, ignore=shutil.ignore_patterns(MANIFEST_FILE))
        # The copy is checked too: what is swapped in is what the manifest vouches for.
        problems = verify_backup(staging, manifest)
        if problems:
            raise BackupError(f"copying the backup went wrong: {'; '.join(problems)}")
        node_id, retired = manifest.node_id, frozenset[str]()
        if not keep_node_id:
            node_id, retired = renew_node_id(staging, retire | _replicated_as(staging))
            # It described the old id's link (what the hub held of it, to send): not this one's.
            (staging / STATE_FILE).unlink(missing_ok=True)
        for path in _files(staging):
            _fsync(path)
        aside = _move_aside(data_dir) if occupied else None
        if data_dir.exists():
            data_dir.rmdir()
        staging.rename(data_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Restored(manifest, aside, node_id, retired)


def _replicated_as(data_dir: Path) -> frozenset[str]:
    """The node id a replicating server of this data dir last wrote as (its state file)."""
    state = read_state(data_dir / STATE_FILE) or {}
    node = state.get("node")
    return frozenset({node}) if isinstance(node, str) and node else frozenset()


def _move_aside(data_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}")
    while aside.exists():
        aside = aside.with_name(f"{aside.name}-{secrets.token_hex(2)}")
    data_dir.rename(aside)
    return aside
