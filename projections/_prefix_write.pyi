# The compiled writers (projections/_prefix_write.c); see projections.prefix_write.
from typing import Any

def conflicts_snapshot(graph: Any, /) -> bytes: ...
def pack_occurrences(
    contents: list[str], order: Any, ends: Any, stamps: tuple[Any, Any, Any], /
) -> tuple[bytes, list[bytes]]: ...
