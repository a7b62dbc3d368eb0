"""The search index alone: build time, memory and query latency as the graph grows.

A GraphProjection of N entities holding bench.dataset's data (three short observations each,
the word `meeting` in all, a token `uid<i:08d>` in entity i only) is folded in memory; then a
SearchProjection is built from it the way the writer does after a start (`note_names`, then the
first search builds it), and queried: selective (a unique token), broad (`meeting`), short (two
characters), and a selective search right after a one-observation write (the cost of bringing
one segment up to date). No server, no MCP: this isolates the index from the per-call floor.
Build time is given as wall and CPU time: on a shared machine the CPU time is the steadier.

Run (the machine is shared: pin it): taskset -c 1 python -m bench.search_index
[--sizes 1000,50000,200000,1000000] [--impl path/to/search.py] [--segment-size N] [--json FILE].
`--impl` loads another SearchProjection (e.g. an older search.py from `git show`) to compare.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, entity_name, entity_record, unique_token
from eventstore.events import EntityCreated, Envelope, ObservationAdded
from projections.graph import GraphProjection
from projections.search import SearchProjection

SELECTIVE_CALLS = 200
WRITE_CALLS = 100


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * 4096 / 2**20


def _envelopes(n: int) -> Iterator[Envelope]:
    rng = random.Random(0)
    position = 0
    for i in range(n):
        record = entity_record(i, rng)
        name = str(record["name"])
        observations = record["observations"]
        assert isinstance(observations, list)
        events: list[Any] = [EntityCreated(name=name, entity_type=str(record["entityType"]))]
        events += [ObservationAdded(entity=name, content=str(o)) for o in observations]
        tx = position + 1
        for event in events:
            position += 1
            yield Envelope(
                position=position, origin="n1", origin_seq=position, hlc=tx, tx=tx, event=event
            )


def build_graph(n: int) -> GraphProjection:
    graph = GraphProjection()
    envelopes = _envelopes(n)
    while chunk := [e for _, e in zip(range(100_000), envelopes, strict=False)]:
        graph.apply_all(chunk)
    return graph


def _load(impl: Path | None) -> type[Any]:
    if impl is None:
        return SearchProjection
    spec = importlib.util.spec_from_file_location("search_impl", impl)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["search_impl"] = module
    spec.loader.exec_module(module)
    return module.SearchProjection  # type: ignore[no-any-return]


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result


def _p50(samples: list[float]) -> float:
    return statistics.median(samples)


def measure(n: int, make_search: Callable[[], Any]) -> dict[str, Any]:
    started = time.perf_counter()
    graph = build_graph(n)
    graph_s = time.perf_counter() - started
    gc.collect()
    rss_before = _rss_mb()
    search = make_search()
    search.note_names(graph.entity_names())
    cpu = time.process_time()
    build_ms, _ = _timed(lambda: search.search(graph, "uid-none"))
    build_cpu_ms = (time.process_time() - cpu) * 1000
    gc.collect()
    rss_after = _rss_mb()
    rng = random.Random(1)

    selective = []
    for _ in range(SELECTIVE_CALLS):
        i = rng.randrange(n)
        ms, found = _timed(partial(search.search, graph, unique_token(i)))
        assert isinstance(found, list) and len(found) == 1, (i, found)
        selective.append(ms)
    broad_calls = 3 if n >= 200_000 else 10
    broad = [_timed(lambda: search.search(graph, COMMON_WORD))[0] for _ in range(broad_calls)]
    short = [_timed(lambda: search.search(graph, "q7"))[0] for _ in range(20)]

    after_write = []
    position = graph.position
    for k in range(WRITE_CALLS):
        i = rng.randrange(n)
        name = entity_name(i)
        position += 1
        event = ObservationAdded(entity=name, content=f"note {k} after a write")
        envelope = Envelope(
            position=position,
            origin="n1",
            origin_seq=position,
            hlc=position,
            tx=position,
            event=event,
        )
        graph.apply_all([envelope])
        search.note([envelope])
        j = rng.randrange(n)
        ms, found = _timed(partial(search.search, graph, unique_token(j)))
        assert isinstance(found, list) and len(found) == 1
        after_write.append(ms)
    filter_bytes = getattr(search, "filter_bytes", lambda: None)()
    return {
        "n": n,
        "graph_fold_s": round(graph_s, 2),
        "build_ms": round(build_ms, 1),
        "build_cpu_ms": round(build_cpu_ms, 1),
        "index_rss_mb": round(rss_after - rss_before, 1),
        "filter_mb": None if filter_bytes is None else round(filter_bytes / 2**20, 2),
        "selective_p50_ms": round(_p50(selective), 3),
        "selective_p95_ms": round(sorted(selective)[int(0.95 * len(selective))], 3),
        "selective_after_write_p50_ms": round(_p50(after_write), 3),
        "broad_p50_ms": round(_p50(broad), 1),
        "short_p50_ms": round(_p50(short), 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search_index")
    parser.add_argument(
        "--sizes", default="1000,50000,200000,1000000", help="comma-separated entity counts"
    )
    parser.add_argument("--impl", type=Path, default=None, help="another search.py to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument(
        "--segment-size", type=int, default=None, help="SearchProjection(segment_size=...)"
    )
    args = parser.parse_args(argv)
    search_class = _load(args.impl)
    options = {} if args.segment_size is None else {"segment_size": args.segment_size}
    rows = []
    for n in (int(s.replace("_", "")) for s in args.sizes.split(",")):
        row = measure(n, lambda: search_class(**options))
        rows.append(row)
        print(json.dumps(row), flush=True)
        gc.collect()
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
