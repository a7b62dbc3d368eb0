"""The data dir's log, opened for a one-shot command: never created where there is none."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from eventstore.lmdb_log import LmdbEventLog
from graphmem.cli.command import CliError
from graphmem.config import Settings

__all__ = ["open_log"]


@contextmanager
def open_log(settings: Settings) -> Iterator[LmdbEventLog]:
    """The data dir's log; a CliError if the data dir holds none."""
    if not (settings.data_dir / "data.mdb").is_file():
        raise CliError(f"no graphmem log in {settings.data_dir} (set GRAPHMEM_DIR or --data-dir)")
    # The settings' clock (GRAPHMEM_CLOCK_OFFSET_DAYS): what `check` judges stamps against.
    with LmdbEventLog.open(
        settings.data_dir, durability=settings.durability, clock=settings.hybrid_clock()
    ) as event_log:
        yield event_log
