"""Hooks named in configuration load as callables, and a bad name stops start-up clearly."""

from __future__ import annotations

import pytest

from actors.hooks import HookEvent
from graphmem.hook_loader import HookConfigError, load_hooks

SEEN: list[str] = []


def audit(event: HookEvent) -> None:
    SEEN.append(event.name)


NOT_CALLABLE = 42


def test_a_module_callable_name_loads_that_callable() -> None:
    hooks = load_hooks([f"{__name__}:audit"], use_entry_points=False)
    assert hooks == [audit]


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("no_colon", "is not 'module:callable'"),
        ("no_such_module_xyz:hook", "does not import"),
        (f"{__name__}:missing", "has no missing"),
        (f"{__name__}:NOT_CALLABLE", "is not callable"),
    ],
)
def test_a_bad_hook_name_says_what_is_wrong(name: str, fragment: str) -> None:
    with pytest.raises(HookConfigError, match=fragment):
        load_hooks([name], use_entry_points=False)


def test_no_configured_hooks_and_no_entry_points_load_nothing() -> None:
    assert load_hooks([], use_entry_points=True) == []
