"""The decay scheduler as the server starts it: on by default when the graph family is served,
off with GRAPHMEM_DECAY_SCHEDULE=off or decay.schedule_hours 0, and across restarts aged with
GRAPHMEM_CLOCK_OFFSET_DAYS a run happens at start only when one is due (the last run's time
is read from the log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.decay_scheduler import Tick, TickOutcome
from actors.graph_commands import GraphRelate
from eventstore.events import DecayApplied
from graphmem.app import App, running
from graphmem.config import Settings, SettingsError
from projections.graph_family import family_index

WAIT = 30.0


def _settings(data_dir: Path, offset_days: float, **env: str) -> Settings:
    return Settings.from_env(
        {
            "GRAPHMEM_DIR": str(data_dir),
            "GRAPHMEM_TOOLS": "memory,graph",
            "GRAPHMEM_CLOCK_OFFSET_DAYS": str(offset_days),
            "GRAPHMEM_LOG_LEVEL": "WARNING",
            **env,
        }
    )


def _runs(app: App) -> list[DecayApplied]:
    runs: list[DecayApplied] = app.graph.query_blocking(lambda g: g.decay_runs())
    return runs


def _settle(app: App) -> TickOutcome:
    """A tick after the one the scheduler sent itself at start (its mailbox is in order)."""
    scheduler = app.supervisor.proxy().child("decay_scheduler").get(timeout=WAIT)
    outcome: TickOutcome = scheduler.ask(Tick(), timeout=WAIT)
    return outcome


def _serve(settings: Settings) -> list[DecayApplied]:
    """Start as the server does, read the graph (a due run waits for a read to build the
    family index), let the scheduler tick, and list the runs."""
    with running(settings, load_schemas=False, schedule_decay=True) as app:
        app.graph.query_blocking(lambda graph: family_index(graph).entity_count)
        _settle(app)  # runs what was due
        assert not _settle(app).ran  # and nothing more
        return _runs(app)


def _seed(settings: Settings) -> None:
    with running(settings, load_schemas=False, schedule_decay=True) as app:
        app.graph.execute_blocking(
            GraphRelate(
                from_name="Alice",
                from_type="Person",
                to_name="Atlas",
                to_type="Project",
                relation="WORKS_ON",
                weight=0.8,
            )
        )
        outcome = _settle(app)
        assert not outcome.ran  # a graph younger than a day is not due


def test_a_restart_runs_decay_at_once_only_when_a_run_is_due(tmp_path: Path) -> None:
    _seed(_settings(tmp_path, 0))
    after_two_days = _serve(_settings(tmp_path, 2))
    assert len(after_two_days) == 1
    # Half a day after that run: not due, whatever happened in memory before the restart.
    assert _serve(_settings(tmp_path, 2.5)) == after_two_days
    later = _serve(_settings(tmp_path, 3.1))
    assert len(later) == 2 and later[1].at - later[0].at > 86_400_000


def test_decay_schedule_off_starts_no_scheduler_and_runs_nothing(tmp_path: Path) -> None:
    _seed(_settings(tmp_path, 0))
    settings = _settings(tmp_path, 5, GRAPHMEM_DECAY_SCHEDULE="off")
    with running(settings, load_schemas=False, schedule_decay=True) as app:
        with pytest.raises(KeyError):
            app.supervisor.proxy().child("decay_scheduler").get(timeout=WAIT)
        assert _runs(app) == []


def test_schedule_hours_zero_in_config_json_turns_the_scheduler_off(tmp_path: Path) -> None:
    _seed(_settings(tmp_path, 0))
    home = tmp_path / "graph-memory"
    home.mkdir(exist_ok=True)
    (home / "config.json").write_text(json.dumps({"decay": {"schedule_hours": 0}}))
    with running(_settings(tmp_path, 5), load_schemas=False, schedule_decay=True) as app:
        with pytest.raises(KeyError):
            app.supervisor.proxy().child("decay_scheduler").get(timeout=WAIT)
        assert _runs(app) == []


def test_schedule_hours_sets_the_period(tmp_path: Path) -> None:
    _seed(_settings(tmp_path, 0))
    home = tmp_path / "graph-memory"
    home.mkdir(exist_ok=True)
    (home / "config.json").write_text(json.dumps({"decay": {"schedule_hours": 240}}))
    assert _serve(_settings(tmp_path, 5)) == []  # ten days not yet passed
    assert len(_serve(_settings(tmp_path, 11))) == 1


def test_a_one_shot_command_never_starts_the_scheduler(tmp_path: Path) -> None:
    _seed(_settings(tmp_path, 0))
    with running(_settings(tmp_path, 5), load_schemas=False) as app, pytest.raises(KeyError):
        app.supervisor.proxy().child("decay_scheduler").get(timeout=WAIT)


def test_an_unknown_decay_schedule_setting_is_refused_saying_what_to_use(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="must be on or off"):
        _settings(tmp_path, 0, GRAPHMEM_DECAY_SCHEDULE="weekly")
