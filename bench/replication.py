"""Replication through a NATS JetStream hub: the four figures of issue 17, item 7.

Every node is a whole graphmem app in this process (its own data dir, LMDB log, writer,
replicator and NATS link: graphmem.app.start_actors with replicate=True); the hub is a real
nats-server from the replication extra (graphmem.replication.hub) on free loopback ports.
Several nodes share one interpreter and its GIL, so these figures are conservative.

- `latency`: a write on node A until it is visible in node B's reads (B's graph answers it),
  through the hub; one entity per write, `--writes` of them; p50 / p90 / max.
- `catchup`: node A writes `--events` events (commands of 100 entities); once the hub holds
  them a fresh node starts, and the seconds until its log holds all of A's give events/s
  (receiving, appending and folding).
- `heal`: three nodes, each through its own cuttable TCP proxy (bench/tcp_proxy.py); one is
  cut off, all three write `--events` each, the link comes back; seconds from the heal until
  every node holds every node's events.
- `cost`: the same sequence of single-entity writes on a node replicating to a live hub and
  on one with replication off, in alternating rounds; median seconds per write, and the ratio;
  and each "on" round against the "off" round beside it (`paired`: the median of those ratios,
  their quartiles, how many pairs were within 10 %), both logs the same length at every pair.

Run: python -m bench.replication [all|latency|catchup|heal|cost]
         [--json bench/results/replication.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from actors.command_inputs import EntityInput
from actors.commands import CreateEntities
from bench.rpc import RpcClient, base_env
from eventstore.lmdb_log import LmdbEventLog
from graphmem.app import STOP_TIMEOUT, App, start_actors
from graphmem.config import ReplicationSettings, Settings
from graphmem.logs import configure_logging
from graphmem.replication.hub import Hub, HubLimits
from graphmem.replication.nats_link import COALESCE_BULK

PROXY = Path(__file__).with_name("tcp_proxy.py")


class Node:
    def __init__(
        self, root: Path, name: str, url: str | None, discover: float = 0.2, group: str = "bench"
    ) -> None:
        self.name, self.dir, self.url, self.discover = name, root / name, url, discover
        self.group = group
        self.app: App | None = None
        self.log: LmdbEventLog | None = None

    def start(self) -> Node:
        settings = Settings(
            data_dir=self.dir,
            node_id=self.name,
            watch_schemas=False,
            schema_dirs=(),
            replication=ReplicationSettings(
                url=self.url, group=self.group, discover_seconds=self.discover
            ),
        )
        self.log = LmdbEventLog.open(self.dir, node_id=self.name)
        self.app = start_actors(settings, self.log, replicate=self.url is not None)
        return self

    def stop(self) -> None:
        if self.app is not None:
            self.app.supervisor.stop(block=True, timeout=STOP_TIMEOUT)
            self.app = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def create(self, *names: str) -> None:
        assert self.app is not None
        entities = [EntityInput(name=n, entity_type="thing", observations=["x"]) for n in names]
        self.app.graph.execute_blocking(CreateEntities(entities=entities))

    def has(self, name: str) -> bool:
        assert self.app is not None
        return self.app.graph.query_blocking(lambda graph: graph.has_entity(name))

    def held(self, origin: str) -> int:
        assert self.log is not None
        return self.log.last_origin_seq(origin)


def _wait(check: Callable[[], bool], timeout: float, step: float = 0.001) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise TimeoutError("the condition did not hold in time")
        time.sleep(step)
    return time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


HUB_STORE = 32 << 30
# After each cost round: the longest coalescing window (the tail round of an "on" burst comes
# at most that long after the round before it) and room for that round to finish.
SETTLE = COALESCE_BULK + 0.1


def latency(root: Path, hub: Hub, writes: int) -> dict[str, Any]:
    a, b = Node(root, "lat-a", hub.url).start(), Node(root, "lat-b", hub.url).start()
    try:
        a.create("warm-up")
        _wait(lambda: b.has("warm-up"), 60, 0.01)
        samples = []
        for i in range(writes):
            started = time.perf_counter()
            a.create(f"w{i}")
            while not b.has(f"w{i}"):
                time.sleep(0.0005)
                if time.perf_counter() - started > 30:
                    raise TimeoutError(f"write {i} never reached b")
            samples.append(time.perf_counter() - started)
            time.sleep(0.005)  # writes apart, as an agent makes them
    finally:
        a.stop()
        b.stop()
    ms = sorted(s * 1000 for s in samples)
    return {
        "writes": writes,
        "p50_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[int(len(ms) * 0.9) - 1], 2),
        "max_ms": round(ms[-1], 2),
        "target": "p50 <= 50 ms",
    }


def catchup(root: Path, hub: Hub, events: int) -> dict[str, Any]:
    a = Node(root, "cu-a", hub.url).start()
    try:
        per = 100
        for i in range(events // per):
            a.create(*(f"c{i}-{j}" for j in range(per)))
        total = a.held("cu-a")
        # The hub holds them all before the fresh node starts: a pure catch-up.
        fresh = Node(root, "cu-probe", hub.url).start()
        _wait(lambda: fresh.held("cu-a") == total, 600, 0.05)
        fresh.stop()
        started = time.perf_counter()
        c = Node(root, "cu-c", hub.url).start()
        try:
            _wait(lambda: c.held("cu-a") == total, 600, 0.002)
            seconds = time.perf_counter() - started
        finally:
            c.stop()
    finally:
        a.stop()
    return {
        "events": total,
        "seconds": round(seconds, 3),
        "events_per_s": round(total / seconds),
        "includes": "node start, discovery, receive, append and fold",
        "target": ">= 20,000 events/s",
    }


def heal(root: Path, hub: Hub, events: int) -> dict[str, Any]:
    proxies: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}

    def up(name: str, port: int) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(PROXY), str(port), str(hub.port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proxies[name] = (port, proc)
        _wait(lambda: _connectable(port), 15, 0.01)

    def down(name: str) -> None:
        _, proc = proxies[name]
        proc.kill()
        proc.wait(10)

    names = ["heal-a", "heal-b", "heal-c"]
    for name in names:
        up(name, _free_port())
    nodes = [Node(root, n, f"nats://127.0.0.1:{proxies[n][0]}").start() for n in names]
    try:
        for node in nodes:
            node.create(f"{node.name}-first")
        _wait(lambda: _converged(nodes), 60, 0.01)
        down("heal-b")
        per = 50
        for node in nodes:
            for i in range(events // per):
                node.create(*(f"{node.name}-{i}-{j}" for j in range(per)))
        _wait(lambda: nodes[0].held("heal-c") == nodes[2].held("heal-c"), 60, 0.01)
        started = time.perf_counter()
        up("heal-b", proxies["heal-b"][0])
        # When b's client is back on the hub (its reconnect loop retries every second).
        reconnected = started + _wait(lambda: _client_connected(hub, "graphmem-heal-b"), 60)
        # CPU used from the reconnect on, by the nodes (this process) and the hub: set
        # against the wall time, it says whether the work or a busy machine takes the time.
        cpu_started, hub_started = time.process_time(), _cpu_seconds(hub)
        _wait(lambda: _converged(nodes), 120, 0.002)
        done = time.perf_counter()
        cpu = time.process_time() - cpu_started
        hub_cpu = _cpu_seconds(hub) - hub_started
        seconds = done - started
        moved = sum(n.held(n.name) for n in nodes)
    finally:
        for node in nodes:
            node.stop()
        for _, proc in proxies.values():
            proc.kill()
            proc.wait(10)
    return {
        "entities_per_node_during_partition": events,
        "events_held_per_node_after": moved,
        "seconds_from_heal_to_converged": round(seconds, 3),
        "seconds_from_reconnect_to_converged": round(done - reconnected, 3),
        "cpu_seconds_nodes_from_reconnect": round(cpu, 3),
        "cpu_seconds_hub_from_reconnect": round(hub_cpu, 3),
        "note": "heal to reconnect is the NATS client's retry (reconnect_time_wait 1 s)",
        "target": "converged within 1 s of the last message",
    }


def cost(root: Path, hub: Hub, writes: int, rounds: int) -> dict[str, Any]:
    # A group of its own: in the default group it would receive (and fold) the events the
    # other figures' nodes left on the hub, which is catch-up, not the cost of a write.
    on = Node(root, "cost-on", hub.url, discover=1.0, group="cost").start()  # the default
    off = Node(root, "cost-off", None).start()
    timings: dict[str, list[float]] = {"on": [], "off": []}
    # The process's CPU (every thread: the writer, the link, this caller) per write: on a
    # loaded box wall time mostly measures the other tenants; CPU is what replication adds.
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    link: list[float] = []  # the receiving link thread's own share of "on"
    # The sender process's CPU per write (this node's events out to the hub): not in the
    # node's process time, so counted apart, and added for the whole cost.
    sender: list[float] = []
    # Where the rest goes, per write of an "on" round: the hub's CPU, the messages it took in
    # (publishes and acks requested: /varz in_msgs), the sender's write and read syscalls, and
    # this process's write syscalls (the wake byte per commit among them) against an "off" round.
    hub_cpu: list[float] = []
    hub_msgs: list[float] = []
    sender_syscalls: list[float] = []
    own_writes: dict[str, list[float]] = {"on": [], "off": []}
    # Each node's log length when each of its rounds starts: both must grow alike (the same
    # writes, nothing received), so that every pair compares stores of the same size.
    sizes: dict[str, list[int]] = {"on": [], "off": []}
    try:
        for r in range(rounds):
            for label, node in (("on", on), ("off", off)) if r % 2 else (("off", off), ("on", on)):
                assert node.log is not None
                sizes[label].append(node.log.last_position())
                started, cpu_started = time.perf_counter(), time.process_time()
                link_started = _thread_cpu("replication-link")
                sender_started = _sender_cpu()
                hub_started, msgs_started = _cpu_seconds(hub), _hub_in_msgs(hub)
                calls_started, own_started = _sender_syscalls(), _own_syscw()
                for i in range(writes):
                    node.create(f"{label}-{r}-{i}")
                timings[label].append((time.perf_counter() - started) / writes)
                # The burst's tail round (at most a coalescing window later) is part of its
                # cost, and must not land in the next burst's: both settle as long.
                time.sleep(SETTLE)
                cpu[label].append((time.process_time() - cpu_started) / writes)
                own_writes[label].append((_own_syscw() - own_started) / writes)
                if label == "on":
                    hub_cpu.append((_cpu_seconds(hub) - hub_started) / writes)
                    hub_msgs.append((_hub_in_msgs(hub) - msgs_started) / writes)
                    sender_syscalls.append(_since(_sender_syscalls(), calls_started) / writes)
                    link.append((_thread_cpu("replication-link") - link_started) / writes)
                    sender.append(_sender_cpu_since(sender_started) / writes)
    finally:
        on.stop()
        off.stop()
    mean_on, mean_off = statistics.median(timings["on"]), statistics.median(timings["off"])
    cpu_on, cpu_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    with_sender = [c + s for c, s in zip(cpu["on"], sender, strict=True)]
    whole = statistics.median(with_sender)
    return {
        "writes_per_round": writes,
        "rounds": rounds,
        "median_ms_per_write_on": round(mean_on * 1000, 3),
        "median_ms_per_write_off": round(mean_off * 1000, 3),
        "cost_percent": round((mean_on / mean_off - 1) * 100, 1),
        "median_cpu_ms_per_write_on": round(cpu_on * 1000, 3),
        "median_cpu_ms_per_write_off": round(cpu_off * 1000, 3),
        "cpu_cost_percent": round((cpu_on / cpu_off - 1) * 100, 1),
        "median_link_thread_cpu_ms_per_write": round(statistics.median(link) * 1000, 4),
        "median_sender_process_cpu_ms_per_write": round(statistics.median(sender) * 1000, 4),
        "median_cpu_ms_per_write_on_with_sender": round(whole * 1000, 3),
        "cpu_cost_percent_with_sender": round((whole / cpu_off - 1) * 100, 1),
        "median_hub_cpu_ms_per_write": round(statistics.median(hub_cpu) * 1000, 4),
        "median_hub_messages_in_per_write": round(statistics.median(hub_msgs), 3),
        "median_sender_syscalls_per_write": round(statistics.median(sender_syscalls), 3),
        "median_write_syscalls_per_write_on": round(statistics.median(own_writes["on"]), 3),
        "median_write_syscalls_per_write_off": round(statistics.median(own_writes["off"]), 3),
        # The same measures, each "on" round against the "off" round next to it (the pair of
        # round r runs back to back, in alternating order): a load that drifts over the run
        # moves both of a pair, where the medians above compare rounds minutes apart.
        "paired": {
            "wall": _paired(timings["on"], timings["off"]),
            "cpu": _paired(cpu["on"], cpu["off"]),
            "cpu_with_sender": _paired(with_sender, cpu["off"]),
        },
        "store_events_at_round_start": {
            "equal_in_every_pair": sizes["on"] == sizes["off"],
            "max_difference": max(abs(a - b) for a, b in zip(*sizes.values(), strict=True)),
        },
        "target": "<= 10 %",
    }


def _paired(on: list[float], off: list[float]) -> dict[str, Any]:
    """Per pair, the cost of "on" over its adjacent "off" round in per cent: the median, the
    quartiles, and how many pairs were within the 10 % target."""
    costs = sorted((a / b - 1) * 100 for a, b in zip(on, off, strict=True))
    quartiles = statistics.quantiles(costs, n=4) if len(costs) > 1 else costs * 3
    return {
        "median_cost_percent": round(statistics.median(costs), 1),
        "quartiles_percent": [round(quartiles[0], 1), round(quartiles[2], 1)],
        "pairs_within_10_percent": sum(cost <= 10 for cost in costs),
        "pairs": len(costs),
    }


def cost_stdio(root: Path, hub: Hub, writes: int, rounds: int) -> dict[str, Any]:
    """The same comparison as `cost`, as a client sees a write: one create_entities call at a
    time to a real `graphmem serve` over stdio, replicating or not."""
    clients = {}
    for label, extra in (
        ("on", {"GRAPHMEM_REPLICATE": hub.url, "GRAPHMEM_REPLICA_GROUP": "cost-stdio"}),
        ("off", {}),
    ):
        env = base_env(
            GRAPHMEM_DIR=str(root / f"stdio-{label}"),
            GRAPHMEM_NODE_ID=f"stdio-{label}",
            GRAPHMEM_LOG_LEVEL="WARNING",
            GRAPHMEM_SCHEMAS_DIR=str(root / "no-schemas"),
            **extra,
        )
        argv = [sys.executable, "-m", "graphmem", "serve"]
        clients[label] = RpcClient(argv, env, root / f"stdio-{label}.log")
        clients[label].initialize()
    timings: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for r in range(rounds):
            for label in ("on", "off") if r % 2 else ("off", "on"):
                calls = [
                    clients[label]
                    .call(
                        "create_entities",
                        {
                            "entities": [
                                {
                                    "name": f"{label}-{r}-{i}",
                                    "entityType": "t",
                                    "observations": ["x"],
                                }
                            ]
                        },
                    )
                    .seconds
                    for i in range(writes)
                ]
                timings[label].append(statistics.median(calls))
    finally:
        for client in clients.values():
            client.close()
    on, off = statistics.median(timings["on"]), statistics.median(timings["off"])
    return {
        "writes_per_round": writes,
        "rounds": rounds,
        "median_ms_per_call_on": round(on * 1000, 3),
        "median_ms_per_call_off": round(off * 1000, 3),
        "cost_percent": round((on / off - 1) * 100, 1),
        "target": "<= 10 %",
    }


def _sender_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of this process's sender processes, by pid."""
    found = {}
    for child in psutil.Process().children():
        try:
            if "graphmem.replication.sender" in child.cmdline():
                found[child.pid] = _task_cpu(child.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _task_cpu(pid: int) -> float:
    """CPU seconds of process `pid`'s live threads, in nanoseconds' resolution (Linux
    schedstat; psutil's cpu_times count 10 ms ticks, as coarse as a whole round's cost)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


def _sender_cpu_since(before: dict[int, float]) -> float:
    """The sender processes' CPU seconds since `before` (a restarted one's from 0)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in _sender_cpu().items())


def _sender_syscalls() -> dict[int, float]:
    """Read and write syscalls so far of this process's sender processes, by pid (Linux)."""
    found: dict[int, float] = {}
    for pid in _sender_cpu():
        with contextlib.suppress(OSError):
            found[pid] = _proc_io(pid, "syscr") + _proc_io(pid, "syscw")
    return found


def _since(now: dict[int, float], before: dict[int, float]) -> float:
    return sum(value - before.get(pid, 0.0) for pid, value in now.items())


def _own_syscw() -> float:
    """This process's write syscalls so far (Linux; 0.0 elsewhere)."""
    try:
        return _proc_io(os.getpid(), "syscw")
    except OSError:
        return 0.0


def _proc_io(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/io") as io:
        for line in io:
            name, _, value = line.partition(":")
            if name == field:
                return float(value)
    return 0.0


def _hub_in_msgs(hub: Hub) -> float:
    """Messages the hub took in so far (its monitoring endpoint's counter)."""
    url = f"http://127.0.0.1:{hub.monitor_port}/varz"
    with urllib.request.urlopen(url, timeout=2) as response:
        return float(json.load(response)["in_msgs"])


def _thread_cpu(name: str) -> float:
    """CPU seconds of this process's threads called `name` (Linux /proc; 0.0 elsewhere),
    ticks of 1/CLK_TCK: over a round of writes, the link's own share of their cost."""
    ticks = 0
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            try:
                with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _connectable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def _cpu_seconds(hub: Hub) -> float:
    assert hub.proc is not None
    return _task_cpu(hub.proc.pid)


def _client_connected(hub: Hub, name: str) -> bool:
    url = f"http://127.0.0.1:{hub.monitor_port}/connz"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            connections = json.load(response).get("connections") or []
    except OSError:
        return False
    return any(c.get("name") == name for c in connections)


def _converged(nodes: list[Node]) -> bool:
    want = {n.name: n.held(n.name) for n in nodes}
    return all(all(n.held(k) == v for k, v in want.items()) for n in nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "figure",
        nargs="?",
        default="all",
        choices=["all", "latency", "catchup", "heal", "cost", "cost-stdio"],
    )
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--heal-events", type=int, default=2_000)
    parser.add_argument("--cost-writes", type=int, default=300)
    parser.add_argument("--cost-rounds", type=int, default=6)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("WARNING", human=True)
    results: dict[str, Any] = {"loadavg_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-repl-") as tmp:
        root = Path(tmp)
        # Every phase starts nodes of its own, and each node's stream reserves 1 GiB of the
        # hub's store (the default 8 GiB holds eight): room for all of them (reserved, not used).
        hub = Hub(root / "hub", limits=HubLimits(max_file_store=HUB_STORE)).start()
        try:
            if args.figure in ("all", "latency"):
                results["latency"] = latency(root, hub, args.writes)
                print(json.dumps({"latency": results["latency"]}), flush=True)
            if args.figure in ("all", "catchup"):
                results["catchup"] = catchup(root, hub, args.events)
                print(json.dumps({"catchup": results["catchup"]}), flush=True)
            if args.figure in ("all", "heal"):
                results["heal"] = heal(root, hub, args.heal_events)
                print(json.dumps({"heal": results["heal"]}), flush=True)
            if args.figure in ("all", "cost"):
                results["cost"] = cost(root, hub, args.cost_writes, args.cost_rounds)
                print(json.dumps({"cost": results["cost"]}), flush=True)
            if args.figure in ("all", "cost-stdio"):
                results["cost_stdio"] = cost_stdio(root, hub, args.cost_writes, args.cost_rounds)
                print(json.dumps({"cost_stdio": results["cost_stdio"]}), flush=True)
        finally:
            hub.stop()
    results["loadavg_after"] = os.getloadavg()
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({"loadavg": [results["loadavg_before"], results["loadavg_after"]]}))


if __name__ == "__main__":
    main()
