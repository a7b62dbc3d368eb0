"""Finding the Project a working directory or path names (contract §8.1, project affinity): the
one whose `directory` equals the text, contains it, or is a parent folder of it, the longest
directory first (ties: by name).

A graph can hold thousands of Projects, so the directories are not scanned one by one: they
are joined into one text, searched with `str.find` (a containing directory is always at least
as long as the text, so any wins over every parent folder), and parent folders are looked up
by each prefix of the text that ends before a path separator.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping

__all__ = ["DirectoryIndex"]

# Never inside a directory the tools accept (control characters are refused in text inputs),
# so a match never spans two directories.
_SEPARATOR = "\x00"
_PATH_SEPARATORS = "/\\"


class DirectoryIndex:
    """Project directories (name -> directory) searchable by a path or a fragment of one."""

    def __init__(self, projects: Mapping[str, str]) -> None:
        ordered = sorted(projects.items(), key=lambda item: (item[1], item[0]))
        self._names = [name for name, _ in ordered]
        self._directories = [directory for _, directory in ordered]
        self._starts: list[int] = []
        offset = 0
        for directory in self._directories:
            self._starts.append(offset)
            offset += len(directory) + 1
        self._blob = _SEPARATOR.join(self._directories)
        self._by_folder: dict[str, list[str]] = {}
        for name, directory in ordered:
            folder = directory.rstrip(_PATH_SEPARATORS)
            if folder:
                self._by_folder.setdefault(folder, []).append(name)

    def find(self, context: str) -> str | None:
        """The Project whose directory equals or contains `context` (longest first), else the
        one whose directory is the nearest parent folder of it; None if none is."""
        if not context or _SEPARATOR in context:
            return None
        best: tuple[int, str] | None = None
        found = self._blob.find(context)
        while found != -1:
            k = bisect_right(self._starts, found) - 1
            candidate = (-len(self._directories[k]), self._names[k])
            if best is None or candidate < best:
                best = candidate
            following = self._starts[k + 1] if k + 1 < len(self._starts) else len(self._blob)
            found = self._blob.find(context, following)
        if best is not None:
            return best[1]
        for end in range(len(context) - 1, 0, -1):
            if context[end] in _PATH_SEPARATORS:
                names = self._by_folder.get(context[:end].rstrip(_PATH_SEPARATORS))
                if names:
                    return min(names)
        return None
