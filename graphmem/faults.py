"""Faults of the stored log and of the file system, told to people in one line each.

A damaged log or a disk that refuses the data dir is not a bug: every edge (the command line,
start-up, a tool call) reports it as what happened and what to do, never as a traceback.
"""

from __future__ import annotations

from eventstore.log import DamagedLogError, StorageError, StorageKind

__all__ = ["FAULTS", "damaged_advice", "explain"]

FAULTS = (DamagedLogError, StorageError)
"""The exceptions `explain` words; catch these at an edge."""


def damaged_advice(position: int, *, checked: bool = False) -> str:
    """What to do about a log damaged at `position` (`checked`: `graphmem check` ran)."""
    before = (
        f", or save the graph as it was before it with `graphmem export --as-of {position - 1} "
        "-o FILE` and import FILE into a new data dir"
        if position > 1
        else ""
    )
    report = "" if checked else "run `graphmem check` for a full report, then "
    return f"{report}restore the data dir from a backup{before}"


def explain(fault: DamagedLogError | StorageError) -> str:
    """One line: what happened, and what to do."""
    if isinstance(fault, DamagedLogError):
        where = f" in {fault.path}" if fault.path else ""
        return (
            f"the log{where} is damaged at position {fault.position} ({fault.reason}); "
            f"{damaged_advice(fault.position)}"
        )
    path, detail = fault.path, fault.detail
    match fault.kind:
        case StorageKind.READ_ONLY:
            return (
                f"the data dir {path} is read-only ({detail}); make it writable or point "
                "GRAPHMEM_DIR elsewhere"
            )
        case StorageKind.DISK_FULL:
            return (
                f"the disk is full ({detail}; data dir {path}): free space and retry; nothing "
                "was written"
            )
        case StorageKind.FILE_TOO_LARGE:
            return (
                f"the disk is full or a file size limit was reached ({detail}; data dir "
                f"{path}): free space or raise the limit (ulimit -f) and retry; nothing was "
                "written"
            )
        case StorageKind.NOT_A_DIRECTORY:
            return (
                f"the data dir {path} is not a directory ({detail}); point GRAPHMEM_DIR at a "
                "directory"
            )
        case StorageKind.NOT_A_LOG:
            return (
                f"the data dir {path} does not hold a readable graphmem log ({detail}); "
                "restore it from a backup or point GRAPHMEM_DIR elsewhere"
            )
        case StorageKind.MAP:
            return (
                f"the log in {path} cannot grow ({detail}): free memory or address space and "
                "retry; nothing was written"
            )
        case StorageKind.OTHER:
            return (
                f"the data dir {path} cannot be used ({detail}); check the disk and the "
                "directory's permissions, then retry; nothing was written"
            )
