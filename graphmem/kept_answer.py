"""An answer kept across starts for a request read before the server loaded, and settled
against the SDK's own answer once it comes (graphmem.early_handshake, graphmem.early_reads)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KeptAnswer"]


@dataclass
class KeptAnswer:
    """An answer kept across starts (the SDK's own line, in `cache_file`) for one request
    read early, and the bytes written early for it (None: the SDK's answer goes out)."""

    cache_file: Path | None
    answered: bytes | None = None
    method: str = "initialize"

    def settle(self, data: bytes, *, success: bool) -> tuple[bytes | None, str | None]:
        """The SDK's answer line to the request: what to write (None: already written) and,
        when the kept answer was wrong, why (for the log)."""
        if self.answered is None:
            if success:
                self._keep(data)
            return data, None
        if data == self.answered:
            return None, None
        self._keep(data) if success else self._forget()
        return None, f"the kept {self.method} answer differs from the SDK's; replaced"

    def _keep(self, data: bytes) -> None:
        if self.cache_file is None:
            return
        # Best effort, atomically: a read-only or full data dir only costs the next start time.
        with contextlib.suppress(OSError):
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            partial = self.cache_file.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(data)
            os.replace(partial, self.cache_file)

    def _forget(self) -> None:
        if self.cache_file is not None:
            with contextlib.suppress(OSError):
                self.cache_file.unlink()
