"""The hybrid logical clock: follows wall time, never goes back, bounds remote skew."""

from __future__ import annotations

from eventstore.hlc import COUNTER_BITS, HybridLogicalClock, WallClock, ms_of, stamp_of, wall_ms
from tests.eventstore.backends import SteppingClock


def test_tick_follows_the_wall_clock_when_it_moves_forward() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000, 2_000))

    first = clock.tick(0)
    second = clock.tick(first)

    assert (first, second) == (stamp_of(1_000), stamp_of(2_000))


def test_tick_is_monotonic_while_the_wall_clock_goes_backwards() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(5_000, 4_999, 100, 0, 5_000, 7_000))
    stamps = [0]
    for _ in range(6):
        stamps.append(clock.tick(stamps[-1]))

    assert stamps[1:] == [
        stamp_of(5_000),
        stamp_of(5_000, 1),
        stamp_of(5_000, 2),
        stamp_of(5_000, 3),
        stamp_of(5_000, 4),
        stamp_of(7_000),
    ]


def test_tick_after_a_restart_continues_from_the_stored_stamp() -> None:
    stored = stamp_of(10_000, 7)
    clock = HybridLogicalClock(now_ms=SteppingClock(3_000))

    assert clock.tick(stored) == stamp_of(10_000, 8)


def test_the_counter_carries_into_the_milliseconds_when_it_overflows() -> None:
    full = stamp_of(1_000, (1 << COUNTER_BITS) - 1)
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000))

    carried = clock.tick(full)

    assert carried == stamp_of(1_001, 0)
    assert ms_of(carried) == 1_001


def test_observe_adopts_a_remote_stamp_within_the_skew() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000), max_skew_ms=500)
    remote = stamp_of(1_400, 3)

    assert clock.observe(stamp_of(900), remote) == remote


def test_observe_clamps_a_remote_stamp_far_ahead_to_now_plus_skew() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000), max_skew_ms=500)

    observed = clock.observe(stamp_of(900), stamp_of(10_000_000))

    assert observed == stamp_of(1_500)


def test_observe_never_goes_back_behind_the_last_stamp_or_now() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000), max_skew_ms=500)

    assert clock.observe(stamp_of(1_200, 5), stamp_of(10)) == stamp_of(1_200, 5)
    assert clock.observe(stamp_of(10), stamp_of(20)) == stamp_of(1_000)


def test_a_tick_after_observing_is_later_than_the_observed_stamp() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(1_000), max_skew_ms=500)

    observed = clock.observe(0, stamp_of(1_300, 9))

    assert clock.tick(observed) == stamp_of(1_300, 10)


def test_a_wall_clock_without_offset_reads_real_time() -> None:
    before = wall_ms()
    reading = WallClock()()
    assert before <= reading <= wall_ms()


def test_a_shifted_wall_clock_reads_real_time_plus_fractional_days() -> None:
    clock = WallClock.shifted_by_days(1.5)
    before = wall_ms()
    reading = clock()
    after = wall_ms()
    assert clock.offset_ms == 36 * 3600 * 1000
    assert before + clock.offset_ms <= reading <= after + clock.offset_ms


def test_now_is_the_reading_the_next_stamp_follows() -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(7_000, 8_000))
    assert clock.now_ms() == 7_000
    assert ms_of(clock.tick(0)) == 8_000
