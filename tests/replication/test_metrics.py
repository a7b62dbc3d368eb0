"""`/metrics` of a real `graphmem serve --http` replicating through a real nats-server: the
link's reachability and this node's lag, as prometheus_client's parser reads them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from graphmem.replication.hub import Hub
from tests.e2e.http_support import HttpService, bearer_client, http_service
from tests.e2e.support import call, legacy_session

pytestmark = pytest.mark.anyio

TOKEN = "replica-metrics-0123456789abcdef"
WAIT = 60.0


def scrape(service: HttpService) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with httpx.Client(timeout=WAIT) as client:
        response = client.get(
            f"http://{service.host}:{service.port}/metrics",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    assert response.status_code == 200, response.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


async def test_metrics_show_the_hub_reached_and_nothing_left_to_send(
    hub: Hub, tmp_path: Path
) -> None:
    with http_service(
        tmp_path / "data",
        tmp_path / "service.log",
        GRAPHMEM_HTTP_TOKEN=TOKEN,
        GRAPHMEM_NODE_ID="m1",
        GRAPHMEM_REPLICATE=hub.url,
        GRAPHMEM_REPLICA_GROUP="metrics",
        GRAPHMEM_REPLICA_DISCOVER_SECONDS="0.2",
    ) as service:
        async with bearer_client(service.url, TOKEN, mode="legacy") as client:
            entity = {"name": "x", "entityType": "t", "observations": ["o"]}
            assert not (await call(client, "create_entities", {"entities": [entity]})).is_error
        wanted = {
            ("graphmem_replication_hub_reachable", ()): 1.0,
            ("graphmem_replication_lag_events", (("origin", "m1"),)): 0.0,
        }
        found = await until(service, lambda got: {k: got.get(k) for k in wanted} == wanted)
        assert found[("graphmem_replication_received_seq", (("origin", "m1"),))] >= 2


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def until(service: HttpService, check: Callable[[Samples], bool]) -> Samples:
    """Scrape until `check` holds (the link writes its state about once a second), bounded by
    WAIT."""
    deadline = time.monotonic() + WAIT
    found = scrape(service)
    while not check(found) and time.monotonic() < deadline:
        await anyio.sleep(0.1)
        found = scrape(service)
    assert check(found), found
    return found


async def test_metrics_show_another_origin_received_with_no_lag(hub: Hub, tmp_path: Path) -> None:
    env = {
        "GRAPHMEM_REPLICATE": hub.url,
        "GRAPHMEM_REPLICA_GROUP": "metrics",
        "GRAPHMEM_REPLICA_DISCOVER_SECONDS": "0.2",
    }
    received = ("graphmem_replication_received_seq", (("origin", "a"),))
    lag = ("graphmem_replication_lag_events", (("origin", "a"),))
    reachable = ("graphmem_replication_hub_reachable", ())
    with http_service(
        tmp_path / "b",
        tmp_path / "b.log",
        GRAPHMEM_HTTP_TOKEN=TOKEN,
        GRAPHMEM_NODE_ID="b",
        **env,
    ) as b:
        async with legacy_session(
            tmp_path / "a",
            GRAPHMEM_NODE_ID="a",
            GRAPHMEM_REPLICATE=env["GRAPHMEM_REPLICATE"],
            GRAPHMEM_REPLICA_GROUP=env["GRAPHMEM_REPLICA_GROUP"],
            GRAPHMEM_REPLICA_DISCOVER_SECONDS=env["GRAPHMEM_REPLICA_DISCOVER_SECONDS"],
        ) as a:
            for name in ("x", "y"):
                entity = {"name": name, "entityType": "t", "observations": ["o"]}
                assert not (await call(a, "create_entities", {"entities": [entity]})).is_error
            # a's events (its four and its start-up's) reach b through the hub: the hub's
            # count of a's stream shows in b's lag, which falls to none behind.
            await until(
                b,
                lambda found: (
                    found.get(received, 0) >= 4
                    and found.get(lag) == 0
                    and found.get(reachable) == 1
                ),
            )
