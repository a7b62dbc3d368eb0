"""The C kernel of projections.plain_prefix (projections/_prefix_scan.c)."""

def scan(
    raws: list[bytes],
    start: int,
    index: dict[str, int],
    origin_ids: dict[str, int],
    origins: list[str],
    names: list[str],
    types: list[str],
    contents: list[str],
    relation_types: list[str],
    stubs: list[int],
    position: int,
    last: tuple[int, str, int],
    /,
) -> tuple[int, int, tuple[int, str, int], tuple[bytes, ...]]: ...
