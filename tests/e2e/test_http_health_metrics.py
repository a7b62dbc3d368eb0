"""`/health` and `/metrics` of a real `graphmem serve --http`, behind its bearer token, the
metrics read by prometheus_client's own text parser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.e2e.cli_support import fault_line, graphmem
from tests.e2e.http_support import HttpService, bearer_client, free_port, http_service
from tests.e2e.support import call

pytestmark = pytest.mark.anyio

TOKEN = "metrics-token-0123456789abcdef"
WAIT = 15.0


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpService]:
    root = tmp_path_factory.mktemp("http-metrics")
    with http_service(root / "data", root / "service.log", GRAPHMEM_HTTP_TOKEN=TOKEN) as running:
        yield running


def get(service: HttpService, path: str, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(timeout=WAIT) as client:
        return client.get(f"http://{service.host}:{service.port}{path}", headers=headers)


def samples(service: HttpService) -> list[Sample]:
    response = get(service, "/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return [s for family in text_string_to_metric_families(response.text) for s in family.samples]


def value(found: list[Sample], name: str, **labels: str) -> float:
    (sample,) = [s for s in found if s.name == name and labels.items() <= s.labels.items()]
    return sample.value


@pytest.mark.parametrize("path", ["/health", "/metrics"])
@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef"])
def test_health_and_metrics_need_the_same_token_as_mcp(
    service: HttpService, path: str, token: str | None
) -> None:
    response = get(service, path, token)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_health_says_ready_with_the_log_and_read_model_positions(service: HttpService) -> None:
    response = get(service, "/health")
    assert response.status_code == 200
    health = response.json()
    assert health["live"] is True
    assert health["ready"] is True
    assert health["read_model_lag"] == 0
    assert health["log_position"] == health["read_model_position"]


async def test_metrics_count_tool_calls_by_outcome_and_the_events_they_appended(
    service: HttpService,
) -> None:
    before = samples(service)
    appended_before = value(before, "graphmem_events_appended_total")
    async with bearer_client(service.url, TOKEN, mode="legacy") as client:  # has sessions
        for name in ("m1", "m2", "m3"):
            created = await call(
                client,
                "create_entities",
                {"entities": [{"name": name, "entityType": "t", "observations": ["o"]}]},
            )
            assert not created.is_error
        refused = await call(client, "no_such_tool_at_all", {})
        assert refused.is_error
    found = samples(service)
    assert value(found, "graphmem_tool_calls_total", tool="create_entities", outcome="ok") >= 3
    assert value(found, "graphmem_tool_calls_total", tool="unknown", outcome="error") >= 1
    assert not [s for s in found if s.labels.get("tool") == "no_such_tool_at_all"]
    assert value(found, "graphmem_tool_call_seconds_count", tool="create_entities") >= 3
    assert value(found, "graphmem_events_appended_total") - appended_before == 6
    assert value(found, "graphmem_group_commit_events_count") >= 1
    position = value(found, "graphmem_log_position")
    assert position >= 6
    assert value(found, "graphmem_read_model_lag_events") == 0
    assert value(found, "graphmem_up") == 1
    assert value(found, "graphmem_log_bytes") > 0
    assert value(found, "graphmem_checkpoint_age_events") >= 0
    assert value(found, "graphmem_http_sessions_open") >= 0
    assert value(found, "process_resident_memory_bytes") > 0
    # The canonical line of each call names its HTTP session and the events it wrote.
    logged = [
        json.loads(line) for line in service.log_path.read_text().splitlines() if line[:1] == "{"
    ]
    lines = [e for e in logged if e["event"] == "tool_called" and e["tool"] == "create_entities"]
    assert len(lines) >= 3
    assert [(bool(e["session"]), e["events"], e["outcome"]) for e in lines] == [
        (True, 2, "ok")
    ] * len(lines)


def test_health_answers_get_only(service: HttpService) -> None:
    with httpx.Client(timeout=WAIT) as client:
        response = client.post(
            f"http://{service.host}:{service.port}/health",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    assert response.status_code == 405


def test_every_graphmem_metric_family_parses_with_its_help_text(service: HttpService) -> None:
    response = get(service, "/metrics")
    families = list(text_string_to_metric_families(response.text))
    ours = {f.name for f in families if f.name.startswith("graphmem_")}
    assert {
        "graphmem_tool_calls",
        "graphmem_tool_call_seconds",
        "graphmem_events_appended",
        "graphmem_group_commit_events",
        "graphmem_log_position",
        "graphmem_read_model_lag_events",
    } <= ours
    assert all(f.documentation for f in families if f.name in ours)


SCRAPER = "scraper-token-0123456789abcdef"


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpService]:
    """A service with client tokens and a separate metrics token."""
    root = tmp_path_factory.mktemp("http-scraped")
    with http_service(
        root / "data",
        root / "service.log",
        GRAPHMEM_HTTP_TOKEN=TOKEN,
        GRAPHMEM_METRICS_TOKEN=SCRAPER,
    ) as running:
        yield running


@pytest.mark.parametrize("path", ["/health", "/metrics"])
def test_the_metrics_token_opens_health_and_metrics(scraped: HttpService, path: str) -> None:
    assert get(scraped, path, SCRAPER).status_code == 200
    assert get(scraped, path, TOKEN).status_code == 200  # a client token still does
    assert get(scraped, path, None).status_code == 401


def test_the_metrics_token_opens_nothing_else(scraped: HttpService) -> None:
    with httpx.Client(timeout=WAIT) as client:
        response = client.post(
            scraped.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Authorization": f"Bearer {SCRAPER}",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert response.status_code == 401


def test_a_short_metrics_token_stops_the_service_before_it_starts(tmp_path: Path) -> None:
    done = graphmem(
        tmp_path / "data",
        "serve",
        "--http",
        "127.0.0.1:1",
        env={"GRAPHMEM_METRICS_TOKEN": "short"},
    )
    assert done.returncode == 2
    assert "GRAPHMEM_METRICS_TOKEN" in fault_line(done)


def test_metrics_leave_out_replication_and_embeddings_when_they_are_off(
    service: HttpService,
) -> None:
    names = {s.name for s in samples(service)}
    assert not {n for n in names if n.startswith(("graphmem_replication_", "graphmem_embedding"))}


@pytest.fixture(scope="module")
def replicating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpService]:
    """A service of the graph family (embeddings on) replicating to a hub nobody listens at."""
    root = tmp_path_factory.mktemp("http-replicating")
    with http_service(
        root / "data",
        root / "service.log",
        GRAPHMEM_HTTP_TOKEN=TOKEN,
        GRAPHMEM_TOOLS="memory,graph",
        GRAPHMEM_NODE_ID="n1",
        GRAPHMEM_REPLICATE=f"nats://127.0.0.1:{free_port('127.0.0.1')}",
    ) as running:
        yield running


async def test_metrics_show_replication_per_origin_and_the_embedding_backlog(
    replicating: HttpService,
) -> None:
    async with bearer_client(replicating.url, TOKEN, mode="legacy") as client:
        created = await call(
            client,
            "create_entities",
            {"entities": [{"name": "r1", "entityType": "t", "observations": ["o"]}]},
        )
        assert not created.is_error
    found = samples(replicating)
    # This node's own origin: the log's frontier holds the two events just written.
    assert value(found, "graphmem_replication_received_seq", origin="n1") >= 2
    assert value(found, "graphmem_replication_hub_reachable") == 0  # nobody listens there
    assert value(found, "graphmem_embedding_pending_entities") >= 0
    families = {
        f.name: f for f in text_string_to_metric_families(get(replicating, "/metrics").text)
    }
    for name in (
        "graphmem_replication_received_seq",
        "graphmem_replication_lag_events",
        "graphmem_replication_hub_reachable",
        "graphmem_embedding_pending_entities",
    ):
        assert families[name].type == "gauge" and families[name].documentation
