# The compiled lister (projections/_restored_keys.c); see projections.restored_keys.
from typing import Any

def listed_keys(records: tuple[Any, ...], columns: Any, /) -> list[tuple[str, str, str]]: ...
