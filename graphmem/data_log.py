"""The data dir's event log, opened as the settings say to write it.

A module of its own, light (the log and the settings, no actors, no server, no MCP SDK):
`graphmem import` opens the log through it without loading the server (graphmem.app).
"""

from __future__ import annotations

from eventstore.lmdb_log import LmdbEventLog
from graphmem.config import Settings

__all__ = ["open_event_log"]


def open_event_log(settings: Settings) -> LmdbEventLog:
    """The data dir's log as the settings say to write it."""
    # LmdbEventLog.open creates the data dir, and says so when the file system refuses.
    return LmdbEventLog.open(
        settings.data_dir,
        durability=settings.durability,
        node_id=settings.node_id,
        clock=settings.hybrid_clock(),
    )
