"""The Cypher service in a running app (no MCP): stopping it ends a query in progress at
once, leaves no worker process behind, and refuses queries after. Skipped without the extra."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psutil
import pytest

from graphmem.app import running
from graphmem.cypher import available
from graphmem.cypher.service import CypherAnswer, CypherEngineError
from tests.tools.support import settings_for

pytestmark = pytest.mark.skipif(not available(), reason="needs the cypher extra")

SLOW = (
    "UNWIND range(1, 20000) AS x UNWIND range(1, 20000) AS y "
    "WITH x, y WHERE x * y % 7 = 3 RETURN count(*) AS n"
)


def test_stopping_ends_a_running_query_and_leaves_no_worker(tmp_path: Path) -> None:
    home = tmp_path / "graph-memory"
    home.mkdir(parents=True)
    # The engine would let the query run a minute: only the stop can end it sooner.
    (home / "config.json").write_text(json.dumps({"query": {"cypher_timeout_ms": 60_000}}))
    outcome: list[CypherAnswer | BaseException] = []
    with running(settings_for(tmp_path, tools="memory,graph"), serve_stale=True, embed=True) as app:
        service = app.cypher
        assert service is not None
        assert service.query("RETURN 1 AS one", {}).results == [{"one": 1}]
        pid = service.worker_pid
        assert pid is not None

        def slow() -> None:
            try:
                outcome.append(service.query(SLOW, {}))
            except BaseException as problem:
                outcome.append(problem)

        thread = threading.Thread(target=slow)
        thread.start()
        service.stop()
        thread.join(30)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], CypherEngineError)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        with pytest.raises(CypherEngineError, match="stopping"):
            service.query("RETURN 1 AS one", {})
