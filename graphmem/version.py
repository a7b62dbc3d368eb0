"""The installed graphmem's version: what `graphmem --version` prints and a backup records."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["graphmem_version"]


def graphmem_version() -> str:
    """The version of the installed distribution (pyproject.toml's `version`)."""
    try:
        return version("graphmem")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.0.0"
