"""Supersession: a dated write closes earlier current siblings, never a later one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actors.supersession import Sibling, Supersession, supersede
from projections.naming import NEVER_SUPERSEDE_RELATION_TYPES, SYMMETRIC_RELATION_TYPES

JAN_2025, JAN_2026, JAN_2027 = 1_735_689_600_000, 1_767_225_600_000, 1_798_761_600_000


def test_a_dated_write_closes_the_current_siblings_at_its_valid_at() -> None:
    outcome = supersede("WORKS_ON", JAN_2026, [Sibling("project-x", JAN_2025), Sibling("y", None)])
    assert outcome == Supersession(
        dated=True, closed=("project-x", "y"), closed_at=JAN_2026, invalid_at=None
    )


def test_a_sibling_valid_from_the_same_instant_is_closed() -> None:
    assert supersede("WORKS_ON", JAN_2026, [Sibling("x", JAN_2026)]).closed == ("x",)


def test_a_past_fact_recorded_late_leaves_the_newer_one_current_and_is_itself_over() -> None:
    outcome = supersede(
        "WORKS_ON", JAN_2025, [Sibling("later", JAN_2027), Sibling("sooner", JAN_2026)]
    )
    assert outcome.closed == ()
    assert outcome.invalid_at == JAN_2026  # the earliest later fact ended it


def test_an_undated_write_supersedes_nothing_and_leaves_the_window_alone() -> None:
    assert supersede("USES", None, [Sibling("Vue", None)]) == Supersession()


def test_never_supersede_types_keep_every_target_current() -> None:
    for relation_type in NEVER_SUPERSEDE_RELATION_TYPES:
        outcome = supersede(relation_type, JAN_2026, [Sibling("child-1", JAN_2025)])
        assert outcome == Supersession(dated=True)


def test_every_symmetric_type_is_a_never_supersede_type() -> None:
    # Direction carries no meaning for them, so "same source" could not be decided anyway.
    assert SYMMETRIC_RELATION_TYPES <= NEVER_SUPERSEDE_RELATION_TYPES


dates = st.none() | st.integers(0, 10**13)


@given(st.integers(0, 10**13), st.lists(st.tuples(st.text(max_size=3), dates), max_size=8))
def test_each_sibling_is_either_closed_or_later_than_the_write(
    valid_at: int, raw: list[tuple[str, int | None]]
) -> None:
    siblings = [Sibling(to, at) for to, at in raw]
    outcome = supersede("WORKS_ON", valid_at, siblings)
    later = [s.valid_at for s in siblings if s.valid_at is not None and s.valid_at > valid_at]
    assert len(outcome.closed) + len(later) == len(siblings)
    assert outcome.invalid_at == (min(later) if later else None)
    assert outcome.closed_at == (valid_at if outcome.closed else None)
    assert outcome.invalid_at is None or outcome.invalid_at > valid_at
