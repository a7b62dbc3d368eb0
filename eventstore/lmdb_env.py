"""The one LMDB environment per data dir per process: its registry, map growth and sync timer.

py-lmdb 3 refuses to open an environment twice in one process, so every LmdbEventLog on the
same dir shares one SharedEnv, reference counted and closed by its last user.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import lmdb

if sys.platform != "win32":
    import resource

from eventstore import keys
from eventstore.log import Durability, LogError, StorageError, StorageKind
from eventstore.mapped_pages import release_mapped_pages

_logger = logging.getLogger(__name__)

_MAX_DBS = 8
_MIN_MAP_SIZE = 64 * 1024
# Grow before a write once the file uses this share of the map, so that MapFullError (which
# costs a wasted attempt) stays the exception.
_GROW_AT_NUM, _GROW_AT_DEN = 3, 4
# Hand the log's mapped pages back (eventstore.mapped_pages) each time the file has grown by
# this much since the last time, checking every so many commits. Each commit reads the pages
# the last one wrote through the map, so what a writer holds of the file is about its growth
# since the last release: at 8 MiB a store filled through MCP writes held 11.5 MiB of it, at
# 1 MiB 0.7 (a release costs ~0.16 ms, a check ~1 us; the fill's CPU did not move).
_RELEASE_EVERY_BYTES = 1 << 20
_RELEASE_CHECK_COMMITS = 16
# ...and every this many commits whatever grew: a write reads pages of the free list and the
# B-tree that growth does not count (200 one-entity writes on a store whose compactions had
# freed many checkpoint pages left 16.8 MiB of data.mdb resident).
_RELEASE_EVERY_COMMITS = 64


_KIND_OF_ERRNO = {
    errno.EROFS: StorageKind.READ_ONLY,
    errno.EACCES: StorageKind.READ_ONLY,
    errno.EPERM: StorageKind.READ_ONLY,
    errno.ENOSPC: StorageKind.DISK_FULL,
    errno.EDQUOT: StorageKind.DISK_FULL,
    errno.EFBIG: StorageKind.FILE_TOO_LARGE,
    errno.ENOTDIR: StorageKind.NOT_A_DIRECTORY,
    errno.EEXIST: StorageKind.NOT_A_DIRECTORY,  # makedirs: a file is in the way
}
# LMDB's own verdicts on the file: not an environment, or one damaged past reading.
_NOT_A_LOG = (
    lmdb.InvalidError,
    lmdb.CorruptedError,
    lmdb.PageNotFoundError,
    lmdb.VersionMismatchError,
    lmdb.IncompatibleError,
)


def storage_error(error: lmdb.Error | OSError, path: str | os.PathLike[str]) -> StorageError:
    """What the file system (through LMDB or os) refused, as a StorageError of its kind.

    py-lmdb raises OSError for some errno failures and a bare lmdb.Error ("what: strerror")
    for others, so the kind is found from the errno if there is one, else from the text.
    """
    where = os.fspath(path)
    detail = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    if isinstance(error, OSError) and error.errno in _KIND_OF_ERRNO:
        return StorageError(_KIND_OF_ERRNO[error.errno], where, f"lmdb: {detail}")
    if isinstance(error, _NOT_A_LOG):
        return StorageError(StorageKind.NOT_A_LOG, where, f"lmdb: {detail}")
    text = str(error)
    for code, kind in _KIND_OF_ERRNO.items():
        if os.strerror(code) in text:
            return StorageError(kind, where, f"lmdb: {os.strerror(code)}")
    if os.strerror(errno.EIO) in text:
        found = _diagnose_short_write(where)
        if found is not None:
            return StorageError(found[0], where, f"lmdb: {detail}; {found[1]}")
    return StorageError(StorageKind.OTHER, where, f"lmdb: {detail}")


# Less than this left on the disk, or under the file size limit, explains a failed write.
_LOW_SPACE = 1 << 20


def _diagnose_short_write(path: str) -> tuple[StorageKind, str] | None:
    """Why a write came up short, if the disk or the file size limit says so.

    LMDB reports a write that stored only part of its pages as EIO, not as the ENOSPC or
    EFBIG that stopped it: a full disk (or a file size limit) is seen so, from the outside.
    """
    try:
        stats = os.statvfs(path)
        size = os.path.getsize(os.path.join(path, "data.mdb"))
    except OSError:
        return None
    free = stats.f_bavail * stats.f_frsize
    if free < _LOW_SPACE:
        return StorageKind.DISK_FULL, f"{free} bytes free on its file system"
    if sys.platform != "win32":
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and size + _LOW_SPACE > limit:
            return StorageKind.FILE_TOO_LARGE, f"the file size limit is {limit} bytes"
    return None


class ResizeGate:
    """Shared by transactions, exclusive for set_mapsize.

    Resizing the map invalidates every open transaction of the process (and LMDB forbids it
    while a write transaction is open), so a resize waits for all transactions to end and
    holds new ones back. Shared holds are reentrant per thread: a transaction function may
    read through the log while its own write transaction is open.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._resizing = False
        self._held = threading.local()

    @contextmanager
    def shared(self) -> Iterator[None]:
        depth: int = getattr(self._held, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._resizing:
                    self._cond.wait()
                self._active += 1
        self._held.depth = depth + 1
        try:
            yield
        finally:
            self._held.depth = depth
            if depth == 0:
                with self._cond:
                    self._active -= 1
                    if self._active == 0:
                        self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        if getattr(self._held, "depth", 0):
            raise LogError("cannot resize the map while this thread has a transaction open")
        with self._cond:
            while self._resizing:
                self._cond.wait()
            self._resizing = True
            while self._active:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._resizing = False
                self._cond.notify_all()


class SharedEnv:
    """An open environment, its sub-databases, and what every log on it shares."""

    def __init__(self, path: str, durability: Durability, map_size: int) -> None:
        strict = durability is Durability.STRICT
        self.path = path
        self.sync_on_commit = strict
        self.env = lmdb.open(
            path,
            map_size=max(map_size, _MIN_MAP_SIZE),
            max_dbs=_MAX_DBS,
            sync=strict,
            metasync=strict,
        )
        self.gate = ResizeGate()
        # LMDB's writer lock is not reentrant: a thread that began a write transaction and
        # begins another (through any log on this env) would deadlock on itself.
        self.writing = threading.local()
        self.pid = os.getpid()
        self.refs = 1
        try:
            self.psize: int = self.env.stat()["psize"]
            self.log_db = self.env.open_db(b"log")
            self.origins_db = self.env.open_db(b"origins")
            self.meta_db = self.env.open_db(b"meta")
            self.checkpoints_db = self.env.open_db(b"checkpoints")
            self.env.reader_check()  # free reader slots of crashed processes: they pin pages
            self.stored_node_id, self.former_node_ids = self._init_meta()
        except BaseException:
            self.env.close()
            raise
        self._dirty = threading.Event()
        self._syncer: _Syncer | None = None
        self._closed = False
        self._commits = 0
        self._released_at_page = 0
        self._released_at_log_pages = 0
        self._released_at_commit = 0

    def _init_meta(self) -> tuple[str, frozenset[str]]:
        """The stored node id (created on first open) and the former ones (see
        eventstore.identity)."""
        # Nothing else in this process can use the env yet, so resizing needs no gate here.
        while True:
            try:
                with self.env.begin(write=True, db=self.meta_db) as txn:
                    version = txn.get(keys.META_FORMAT)
                    if version is None:
                        txn.put(keys.META_FORMAT, keys.FORMAT_VERSION)
                    elif version != keys.FORMAT_VERSION:
                        raise LogError(f"{self.path}: unknown log format {version!r}")
                    node_id = txn.get(keys.META_NODE_ID)
                    if node_id is None:
                        node_id = secrets.token_hex(8).encode()
                        txn.put(keys.META_NODE_ID, node_id)
                    former = bytes(txn.get(keys.META_FORMER_NODE_IDS) or b"").decode()
                    return bytes(node_id).decode(), frozenset(former.split("\n")) - {""}
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)

    def start_syncer(self, interval: float) -> None:
        if self._syncer is None and not self.sync_on_commit:
            self._syncer = _Syncer(self, interval)
            self._syncer.start()

    def committed(self) -> None:
        self._commits += 1
        if self._commits % _RELEASE_CHECK_COMMITS == 0:
            self.release_pages_if_grown()
        if self.sync_on_commit:
            return
        self._dirty.set()

    def release_pages_if_grown(self) -> int:
        """Release the mapped pages (see eventstore.mapped_pages) once the file or the log in
        it has grown by _RELEASE_EVERY_BYTES since the last release; returns the bytes of
        mapping advised. The log's own pages count too: once another process (a compaction
        child) deletes old checkpoints, appends reuse their pages and the file stops growing,
        while each append still touches the pages it writes (~15 MiB held after a fill)."""
        last_page = self.env.info()["last_pgno"]
        log_pages = self._log_pages()
        grown = max(last_page - self._released_at_page, log_pages - self._released_at_log_pages)
        due = self._commits - self._released_at_commit >= _RELEASE_EVERY_COMMITS
        if grown * self.psize < _RELEASE_EVERY_BYTES and not due:
            return 0
        return self.release_pages()

    def _log_pages(self) -> int:
        with self.env.begin(db=self.log_db) as txn:
            stat = txn.stat(self.log_db)
        return int(stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"])

    def release_pages(self) -> int:
        """Release the mapped pages (see eventstore.mapped_pages) now: after reading or
        writing a checkpoint, whose pages (megabytes at 50k entities) nothing reads again
        until the next one; returns the bytes of mapping advised."""
        self._released_at_page = self.env.info()["last_pgno"]
        self._released_at_log_pages = self._log_pages()
        self._released_at_commit = self._commits
        with self.gate.shared():  # a resize remaps the file: not meanwhile
            if self._closed:
                return 0
            return release_mapped_pages(os.path.join(self.path, "data.mdb"))

    def sync(self) -> None:
        self._dirty.clear()
        with self.gate.shared():
            if not self._closed:
                self.env.sync(True)

    def sync_if_dirty(self) -> None:
        if self._dirty.is_set():
            self.sync()

    def nearly_full(self) -> bool:
        info = self.env.info()
        used = (info["last_pgno"] + 1) * self.psize
        return used * _GROW_AT_DEN >= info["map_size"] * _GROW_AT_NUM

    def grow(self, *, only_if_nearly_full: bool = False) -> None:
        """Double the map; LMDB persists the new size with this process's next commit."""
        with self.gate.exclusive():
            if only_if_nearly_full and not self.nearly_full():
                return  # another thread grew it while we waited
            info = self.env.info()
            used = (info["last_pgno"] + 1) * self.psize
            wanted = max(info["map_size"], used) * 2
            try:
                self.env.set_mapsize(wanted)
            except lmdb.Error as error:
                # MDB_MAP_FULL is the map's limit, not the disk's: growing it is the remedy,
                # and when the map cannot grow that is what the caller must hear.
                fault = storage_error(error, self.path)
                raise StorageError(
                    StorageKind.MAP,
                    self.path,
                    f"the memory map cannot grow to {wanted} bytes ({fault.detail})",
                ) from error

    def adopt_resize(self) -> None:
        """Take on the map size another process grew the environment to."""
        with self.gate.exclusive():
            self.env.set_mapsize(0)

    def close(self) -> None:
        if self._syncer is not None:
            self._syncer.stop()
        # Exclusive: a sync still running on a timer that outlived its join must finish first.
        with self.gate.exclusive():
            self._closed = True
            try:
                self.env.sync(True)
            finally:
                self.env.close()


class _Syncer(threading.Thread):
    """The everysec timer: flush to disk about every interval, only after a commit."""

    def __init__(self, shared: SharedEnv, interval: float) -> None:
        super().__init__(name=f"graphmem-lmdb-sync:{shared.path}", daemon=True)
        self._shared = shared
        self._interval = interval
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self._shared.sync_if_dirty()
            except lmdb.Error:
                # The timer is the edge here: a failed flush is retried on the next tick, and
                # close() syncs (and raises) once more.
                self._shared.committed()
                _logger.exception("lmdb_sync_failed", extra={"path": self._shared.path})

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.join(timeout)


_registry: dict[str, SharedEnv] = {}
_registry_lock = threading.Lock()


def acquire(
    path: str | os.PathLike[str], durability: Durability, map_size: int, sync_interval: float
) -> SharedEnv:
    """The process's environment for `path`, opened on first use.

    The first opener's durability and sync interval decide the environment's flags; a strict
    log on an environment opened everysec syncs after each of its own commits instead.
    """
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise storage_error(error, path) from error
    key = os.path.realpath(path)
    with _registry_lock:
        shared = _registry.get(key)
        if shared is not None:
            if shared.pid != os.getpid():
                raise LogError(f"{key} was opened before fork(); open logs after forking")
            shared.refs += 1
            return shared
        try:
            shared = SharedEnv(key, durability, map_size)
        except (lmdb.Error, OSError) as error:
            raise storage_error(error, key) from error
        shared.start_syncer(sync_interval)
        _registry[key] = shared
        return shared


def release(shared: SharedEnv) -> None:
    with _registry_lock:
        shared.refs -= 1
        if shared.refs > 0:
            return
        del _registry[shared.path]
    shared.close()
