"""A benchmark's figures printed as JSON, and written to a file when one is asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit_figures(figures: Any, path: Path | None) -> None:
    """Print `figures` as indented JSON; also write it to `path` unless that is None."""
    text = json.dumps(figures, indent=2)
    print(text)
    if path is not None:
        path.write_text(text + "\n")
