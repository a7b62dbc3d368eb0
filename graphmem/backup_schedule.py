"""Scheduled backups while `graphmem serve` runs (GRAPHMEM_BACKUP_DIR): every
GRAPHMEM_BACKUP_EVERY_HOURS, `graphmem backup --into DIR --keep N` in a child process.

A child process, not a call: LMDB forbids opening an environment twice in one process (closing
the second copy's lock file would drop the first's locks), and the server holds its log open.
One line per run (`backup_scheduled_run`), whatever its outcome; a failed run is logged and the
next one is tried on time, never retried in a loop.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import structlog

from graphmem.config import Settings

__all__ = ["BackupScheduler"]

log = structlog.get_logger(__name__)

# A backup of a large data dir takes a while; one that runs longer than this is stuck.
RUN_TIMEOUT = 6 * 3600.0


class BackupScheduler(threading.Thread):
    """The thread that runs the scheduled backups until `stop`."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(name="graphmem-backups", daemon=True)
        assert settings.backup_dir is not None
        self.settings = settings
        self.backup_dir = settings.backup_dir
        self._stopped = threading.Event()

    def stop(self, timeout: float = 60.0) -> None:
        """No new run; a run under way is waited for (bounded), so a backup is not cut off
        by the shutdown and retention has run when the server exits."""
        self._stopped.set()
        if self.is_alive():
            self.join(timeout)

    def run(self) -> None:
        period = self.settings.backup_every_hours * 3600.0
        while not self._stopped.wait(period):
            self.run_once()

    def run_once(self) -> bool:
        """Take one backup now; whether it succeeded."""
        started = time.perf_counter()
        command = [
            sys.executable,
            "-m",
            "graphmem",
            "--data-dir",
            str(self.settings.data_dir),
            "backup",
            "--into",
            str(self.backup_dir),
            "--keep",
            str(self.settings.backup_keep),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
            )
            ok, said = done.returncode == 0, (done.stdout or done.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as problem:
            ok, said = False, str(problem)
        log.info(
            "backup_scheduled_run",
            ok=ok,
            into=str(self.backup_dir),
            keep=self.settings.backup_keep,
            said=said.splitlines()[-1] if said else "",
            seconds=round(time.perf_counter() - started, 3),
        )
        return ok
