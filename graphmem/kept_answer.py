"""An answer kept across starts for a request read before the server loaded, and settled
against the SDK's own answer once it comes (graphmem.early_handshake, graphmem.early_reads).

An answer is kept in two places: the data dir's `handshake/` folder, and the same file name in
the user's cache (`shared_file`, platformdirs' user cache dir). The name is a function of the
install and the configuration, never of the data dir, so a store's first start finds the
answers an earlier start kept for another store (a host's new project, a test's fresh dir)
and answers `initialize` and `tools/list` early too. The data dir's copy is read first (a
cache cleaner or a read-only home only costs the first start again); the SDK's answer is
compared with whichever was written, and a difference replaces both.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

__all__ = ["KeptAnswer", "shared_copy"]


def shared_copy(name: str) -> Path | None:
    """The user's copy of the answer kept as `name`, in the folder of answers kept for every
    store (XDG_CACHE_HOME on Linux); None when there is no home to find it in."""
    try:
        return Path(platformdirs.user_cache_dir("graphmem")) / "handshake" / name
    except (OSError, RuntimeError, KeyError):
        return None


@dataclass
class KeptAnswer:
    """An answer kept across starts (the SDK's own line, in `cache_file` and `shared_file`)
    for one request read early, and the bytes written early for it (None: the SDK's answer
    goes out)."""

    cache_file: Path | None
    answered: bytes | None = None
    method: str = "initialize"
    shared_file: Path | None = None
    # Files that did not hold the answer read (`read`): given it once the SDK agrees.
    _missing: list[Path] = field(default_factory=list)

    def _files(self) -> list[Path]:
        """Where the answer is kept: the data dir's file first, then the user's shared one."""
        return [path for path in (self.cache_file, self.shared_file) if path is not None]

    def read(self) -> bytes | None:
        """The kept answer: the data dir's, else the user's shared one (None: neither)."""
        files = self._files()
        for index, path in enumerate(files):
            try:
                answer = path.read_bytes()
            except OSError:
                continue
            self._missing = [*files[:index], *files[index + 1 :]]
            return answer
        return None

    def written_ahead(self, data: bytes) -> None:
        """`data`, graphmem's own answer (graphmem.wire.front: the SDK's bytes, made without
        it), was written for the request: it is kept for the next start, and compared with
        the SDK's own answer if the SDK comes to answer the request."""
        self._keep(data)
        self.answered = data

    def settle(self, data: bytes, *, success: bool) -> tuple[bytes | None, str | None]:
        """The SDK's answer line to the request: what to write (None: already written) and,
        when the kept answer was wrong, why (for the log)."""
        if self.answered is None:
            if success:
                self._keep(data)
            return data, None
        if data == self.answered:
            # Found in one place only (a new store): the other copy is made now.
            self._keep(data, only=self._missing)
            return None, None
        self._keep(data) if success else self._forget()
        return None, f"the kept {self.method} answer differs from the SDK's; replaced"

    def _keep(self, data: bytes, only: list[Path] | None = None) -> None:
        for path in self._files() if only is None else only:
            # Best effort, atomically: a read-only or full folder only costs the next start.
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(f".{os.getpid()}.tmp")
                partial.write_bytes(data)
                os.replace(partial, path)

    def _forget(self) -> None:
        for path in self._files():
            with contextlib.suppress(OSError):
                path.unlink()
