"""Memory of a long run against a fresh process on the same data, and of deleted history.

`soak`: a server driven in-process (bench.inprocess) by cycles of six calls — create an entity
(three observations), add an observation, relate it to the previous one, search for its token,
read a page of the graph (limit 10), delete the entity created `--window` cycles before — so
the live graph stays about `--window` entities while its history grows. RSS is sampled as the
calls go; at the end the server stops and a fresh process starts on the same data dir, answers
one search and one page, and reports its RSS: what the long run holds beyond it is what it
accumulated per call. With `--trace`, tracemalloc counts the Python heap the same way (slower).

`stdio`: the same cycles sent to a real `graphmem serve` subprocess over stdio (bench.rpc),
its RSS read from /proc; then a fresh `graphmem serve` on the same data dir answers one search
and one page. This adds the transport and the MCP SDK's per-call state to what is measured.

`deleted`: `--live` entities kept after `--deleted` were created and deleted (bench.inprocess
seed), then the RSS of a fresh process on that data dir: what deleted history costs a start.

Run: python -m bench.memory_soak soak [--calls 100000] [--window 500] [--trace]
     python -m bench.memory_soak stdio [--calls 100000] [--window 500]
     python -m bench.memory_soak deleted [--live 5000] [--deleted 60000]
     [--json bench/results/memory.json] [--label after]
Another tree (the code before a change): copy this file and bench/inprocess.py into it and run
it there, as for bench.paging.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.inprocess import Call, entity_arg, name_of, rss_mib, rss_parts_mib, seed, served
from bench.rpc import RpcClient, base_env

CYCLE_CALLS = 6


async def _cycle(call: Call, i: int, window: int) -> None:
    await call("create_entities", {"entities": [entity_arg(i)]})
    await call(
        "add_observations",
        {"observations": [{"entityName": name_of(i), "contents": [f"seen {i}"]}]},
    )
    if i > 0:
        relation = {"from": name_of(i), "to": name_of(i - 1), "relationType": "follows"}
        await call("create_relations", {"relations": [relation]})
    await call("search_nodes", {"query": f"uid{i:08d}"})
    await call("read_graph", {"limit": 10, "offset": i % window})
    if i >= window:
        await call("delete_entities", {"entityNames": [name_of(i - window)]})


def _memory() -> dict[str, float]:
    return {
        "rss_mib": round(rss_mib(), 1),
        **{f"rss_{k}_mib": v for k, v in rss_parts_mib().items()},
        "traced_mib": round(_traced_mib(), 1),
    }


def _process_memory(pid: int) -> dict[str, float]:
    parts = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:")):
                key = {"VmRSS:": "rss_mib", "RssAnon:": "rss_anon_mib", "RssFile:": "rss_file_mib"}
                parts[key[line.split()[0]]] = round(int(line.split()[1]) / 1024, 1)
    return parts


class _RpcCall:
    """bench.inprocess's `call`, over a real server's stdio."""

    def __init__(self, client: RpcClient) -> None:
        self.client = client

    async def __call__(self, tool: str, arguments: dict[str, Any]) -> Any:
        reply = self.client.call(tool, arguments)
        if reply.failed:
            raise RuntimeError(f"{tool} failed: {reply.describe()}")
        return reply


def _serve(data_dir: Path) -> RpcClient:
    env = base_env(GRAPHMEM_DIR=str(data_dir), GRAPHMEM_LOG_LEVEL="WARNING")
    client = RpcClient(
        [sys.executable, "-m", "graphmem", "serve"], env, data_dir.parent / "stderr.log"
    )
    client.initialize()
    return client


def stdio(args: argparse.Namespace) -> dict[str, Any]:
    cycles = args.calls // CYCLE_CALLS
    samples = []
    with tempfile.TemporaryDirectory(prefix="graphmem-stdio-") as scratch:
        data_dir = Path(scratch) / "data"
        with _serve(data_dir) as client:
            call = _RpcCall(client)
            every = max(1, cycles // 10)
            for i in range(cycles):
                asyncio.run(_cycle(call, i, args.window))
                if (i + 1) % every == 0:
                    samples.append({"calls": (i + 1) * CYCLE_CALLS, **_process_memory(client.pid)})
                    print(f"  {samples[-1]}", flush=True)
            long_run = _process_memory(client.pid)
        with _serve(data_dir) as client:
            client.call("search_nodes", {"query": "uid"})
            client.call("read_graph", {"limit": 10, "offset": 0})
            fresh = _process_memory(client.pid)
    first, last = samples[0], samples[-1]
    span = last["calls"] - first["calls"]
    result = {
        "calls": cycles * CYCLE_CALLS,
        "window": args.window,
        "samples": samples,
        "long_run": long_run,
        "fresh": fresh,
        "long_run_minus_fresh_rss_mib": round(long_run["rss_mib"] - fresh["rss_mib"], 1),
        "long_run_minus_fresh_anon_mib": round(long_run["rss_anon_mib"] - fresh["rss_anon_mib"], 1),
        "rss_kib_per_call_after_first_sample": round(
            (last["rss_mib"] - first["rss_mib"]) * 1024 / span, 3
        )
        if span
        else None,
    }
    print(
        f"{args.label}: stdio server, {result['calls']:,} calls: long run {long_run}, fresh "
        f"process {fresh}",
        flush=True,
    )
    return result


def _traced_mib() -> float:
    return tracemalloc.get_traced_memory()[0] / 2**20 if tracemalloc.is_tracing() else 0.0


async def _soak(data_dir: Path, calls: int, window: int, trace: bool) -> dict[str, Any]:
    cycles = calls // CYCLE_CALLS
    samples = []
    if trace:
        tracemalloc.start(1)
    async with served(data_dir) as call:
        started = time.perf_counter()
        every = max(1, cycles // 10)
        for i in range(cycles):
            await _cycle(call, i, window)
            if (i + 1) % every == 0:
                gc.collect()
                samples.append(
                    {
                        "calls": (i + 1) * CYCLE_CALLS,
                        "rss_mib": round(rss_mib(), 1),
                        **{f"rss_{k}_mib": v for k, v in rss_parts_mib().items()},
                        "traced_mib": round(_traced_mib(), 1),
                    }
                )
                print(f"  {samples[-1]}", flush=True)
        seconds = time.perf_counter() - started
        await call("search_nodes", {"query": "uid"})
        await call("read_graph", {"limit": 10, "offset": 0})
        gc.collect()
        live = _memory()
    first, last = samples[0], samples[-1]
    span = last["calls"] - first["calls"]
    return {
        "calls": cycles * CYCLE_CALLS,
        "window": window,
        "seconds": round(seconds, 1),
        "samples": samples,
        "long_run": live,
        "rss_kib_per_call_after_first_sample": round(
            (last["rss_mib"] - first["rss_mib"]) * 1024 / span, 3
        )
        if span
        else None,
        "traced_kib_per_call_after_first_sample": round(
            (last["traced_mib"] - first["traced_mib"]) * 1024 / span, 3
        )
        if span and trace
        else None,
    }


def _fresh(data_dir: Path, trace: bool) -> dict[str, Any]:
    """A new process on `data_dir`: its RSS (and traced heap) once started and queried."""
    argv = [sys.executable, "-m", "bench.memory_soak", "fresh", str(data_dir)]
    if trace:
        argv.append("--trace")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def _fresh_here(data_dir: Path, trace: bool) -> dict[str, Any]:
    if trace:
        tracemalloc.start(1)
    async with served(data_dir) as call:
        await call("search_nodes", {"query": "uid"})
        await call("read_graph", {"limit": 10, "offset": 0})
        gc.collect()
        return _memory()


def soak(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="graphmem-soak-") as scratch:
        result = asyncio.run(_soak(Path(scratch), args.calls, args.window, args.trace))
        result["fresh"] = _fresh(Path(scratch), args.trace)
    result["long_run_minus_fresh_rss_mib"] = round(
        result["long_run"]["rss_mib"] - result["fresh"]["rss_mib"], 1
    )
    print(
        f"{args.label}: {result['calls']:,} calls: long run RSS {result['long_run']['rss_mib']} "
        f"MiB, fresh process {result['fresh']['rss_mib']} MiB: "
        f"+{result['long_run_minus_fresh_rss_mib']} MiB; RSS growth "
        f"{result['rss_kib_per_call_after_first_sample']} KiB/call"
        + (
            f", traced heap {result['long_run']['traced_mib']} vs {result['fresh']['traced_mib']}"
            f" MiB ({result['traced_kib_per_call_after_first_sample']} KiB/call)"
            if args.trace
            else ""
        ),
        flush=True,
    )
    return result


def deleted(args: argparse.Namespace) -> dict[str, Any]:
    async def fill(data_dir: Path) -> None:
        async with served(data_dir) as call:
            await seed(call, args.live, args.deleted)

    with tempfile.TemporaryDirectory(prefix="graphmem-deleted-") as scratch:
        asyncio.run(fill(Path(scratch)))
        fresh = _fresh(Path(scratch), args.trace)
    result = {"live": args.live, "deleted": args.deleted, "fresh": fresh}
    print(
        f"{args.label}: fresh process on {args.live:,} live entities after {args.deleted:,} "
        f"deletions: RSS {fresh['rss_mib']} MiB"
        + (f", traced heap {fresh['traced_mib']} MiB" if args.trace else ""),
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["soak", "stdio", "deleted", "fresh"])
    parser.add_argument("data_dir", nargs="?", type=Path, help="fresh: the data dir")
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--live", type=int, default=5000)
    parser.add_argument("--deleted", type=int, default=60_000)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--label", default="current")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.mode == "fresh":
        print(json.dumps(asyncio.run(_fresh_here(args.data_dir, args.trace))))
        return
    modes = {"soak": soak, "stdio": stdio, "deleted": deleted}
    result = modes[args.mode](args)
    if args.json is not None:
        existing = json.loads(args.json.read_text()) if args.json.exists() else {}
        existing.setdefault(args.label, {})[args.mode] = result
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(existing, indent=2) + "\n")


if __name__ == "__main__":
    main()
