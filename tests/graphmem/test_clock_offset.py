"""GRAPHMEM_CLOCK_OFFSET_DAYS shifts the one clock graphmem reads: stamps and "now" move as one."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from actors.commands import CreateEntities, EntityInput
from eventstore.hlc import DAY_MS, ms_of, wall_ms
from graphmem.app import running
from graphmem.cli.check import run_check
from graphmem.cli.command import CliError
from graphmem.config import Settings


def _settings(data_dir: Path, offset_days: str) -> Settings:
    return Settings.from_env(
        {"GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_CLOCK_OFFSET_DAYS": offset_days}
    )


def _write_and_read_clock(settings: Settings, name: str) -> tuple[list[int], int]:
    """Write one entity; the wall times of every stamp in the log, and the log's "now" after."""
    with running(settings, load_schemas=False) as app:
        app.graph.execute_blocking(CreateEntities([EntityInput(name, "person", ["was here"])]))
        stamps = [ms_of(envelope.hlc) for envelope in app.event_log.read_from(1)]
        return stamps, app.event_log.clock.now_ms()


def test_an_offset_moves_the_event_stamps_and_the_rules_now_by_the_same_days(
    tmp_path: Path,
) -> None:
    offset = round(400.5 * DAY_MS)
    before = wall_ms()

    stamps, now = _write_and_read_clock(_settings(tmp_path, "400.5"), "Alice")

    after = wall_ms()
    assert stamps
    assert before + offset <= min(stamps) <= max(stamps) <= now <= after + offset


def test_restarting_with_a_larger_offset_ages_the_graph(tmp_path: Path) -> None:
    first, _ = _write_and_read_clock(_settings(tmp_path, "1"), "Alice")
    stamps, now = _write_and_read_clock(_settings(tmp_path, "31"), "Bob")

    later = stamps[len(first) :]
    assert later and min(later) - max(first) >= 30 * DAY_MS
    assert now >= max(later)


def test_check_accepts_a_log_stamped_by_a_shifted_clock_when_run_with_the_same_offset(
    tmp_path: Path,
) -> None:
    _write_and_read_clock(_settings(tmp_path, "400"), "Alice")

    code = run_check(argparse.Namespace(), _settings(tmp_path, "400"))

    assert code == 0


def test_check_without_the_offset_reports_the_shifted_stamps_as_from_the_future(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_and_read_clock(_settings(tmp_path, "400"), "Alice")

    with pytest.raises(CliError):
        run_check(argparse.Namespace(), _settings(tmp_path, "0"))

    assert "not a sane time" in capsys.readouterr().out
