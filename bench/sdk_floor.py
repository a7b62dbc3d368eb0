"""The MCP Python SDK's own per-call floor, beside graphmem and the official server at N = 0.

Run: python -m bench.sdk_floor [--calls 2000] [--graphmem-rev REV]

Times the same tiny call (`open_nodes` on an empty store) through the raw client on: the
official server, graphmem, and a bare low-level SDK server (bench/bare_server.py) whose only
tool returns a constant result without doing anything, once on the SDK's stock stdio transport
and once on graphmem's. The bare server on graphmem's transport is the least a server built on
the SDK's dispatcher can cost per call here. graphmem answers plain tool calls on its own fast
path (graphmem.wire.fast_calls), off that dispatcher; it is timed a second time with the fast path
off (GRAPHMEM_FAST_CALLS=0), every call through the SDK, to show what the fast path saves.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.rpc import RpcClient, base_env
from bench.servers import ServerName, graphmem_source, sample, seed, start
from bench.workload import percentile

LOGS = Path(__file__).resolve().parent / ".cache" / "logs"
BARE_SERVER = Path(__file__).resolve().parent / "bare_server.py"


def _time(client: RpcClient, calls: int) -> dict[str, float]:
    arguments = {"names": ["nobody"]}
    for _ in range(50):
        client.call("open_nodes", arguments)
    before = sample(client.pid).cpu_seconds
    ms = [client.call("open_nodes", arguments).seconds * 1e3 for _ in range(calls)]
    cpu = (sample(client.pid).cpu_seconds - before) * 1e3 / calls
    return {"p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95), "cpu_ms_per_call": cpu}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--graphmem-rev", default=None, metavar="REV")
    args = parser.parse_args(argv)
    LOGS.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-floor-") as tmp:
        root = Path(tmp)
        src, source = graphmem_source(args.graphmem_rev, root)
        empty = root / "empty.jsonl"
        empty.write_bytes(b"")
        servers: tuple[ServerName, ...] = ("official", "graphmem")
        for server in servers:
            store = seed(server, empty, root / server, LOGS / "seed.log", src)
            with start(store, LOGS / f"floor-{server}.stderr.log") as client:
                rows[server] = _time(client, args.calls)
            if server == "graphmem":  # every call through the SDK's pipeline, for comparison
                log = LOGS / "floor-graphmem-sdk-path.stderr.log"
                with start(store, log, GRAPHMEM_FAST_CALLS="0") as client:
                    rows["graphmem, SDK call path"] = _time(client, args.calls)
        env = base_env(**({"PYTHONPATH": str(src)} if src else {}))
        for transport in ("stock", "graphmem"):
            argv_bare = [sys.executable, str(BARE_SERVER), transport]
            log = LOGS / f"floor-bare-{transport}.stderr.log"
            with RpcClient(argv_bare, env, log, cwd=src) as client:
                client.initialize()
                rows[f"bare SDK, {transport} stdio"] = _time(client, args.calls)
    print(f"graphmem from {source}; {args.calls} open_nodes calls each on an empty store")
    official = rows["official"]["p50_ms"]
    for name, row in rows.items():
        print(
            f"  {name:<26} p50 {row['p50_ms']:.3f} ms  p95 {row['p95_ms']:.3f} ms  "
            f"cpu {row['cpu_ms_per_call']:.3f} ms/call  ({row['p50_ms'] / official:.2f}x official)"
        )


if __name__ == "__main__":
    main()
