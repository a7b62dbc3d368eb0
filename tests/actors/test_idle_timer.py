"""The writer's idle timer (actors.idle_timer): it tells once the idle time may have passed,
says how much is left after a touch, and never tells after it is closed."""

from __future__ import annotations

import threading

import pykka

from actors.idle_timer import IdleTimer

WAIT = 30.0


def test_it_tells_once_armed_and_counts_from_the_last_touch() -> None:
    told = threading.Event()
    timer = IdleTimer(0.05, told.set)
    timer.touch()
    assert told.wait(WAIT)
    timer.fired()
    timer.seconds = 3600.0
    timer.touch()  # armed again, far off
    assert 3500 < timer.left() <= 3600
    timer.close()


def test_a_closed_timer_never_tells_and_a_dead_actor_is_not_an_error() -> None:
    told = threading.Event()
    timer = IdleTimer(0.01, told.set)
    timer.close()
    timer.touch()
    assert timer._timer is None  # nothing armed: nothing can tell

    def dead() -> None:
        raise pykka.ActorDeadError("stopped")

    fired = IdleTimer(0.0, dead)
    fired.touch()
    assert fired._timer is not None
    fired._timer.join(WAIT)  # its callback swallowed the error: the thread ended cleanly
    assert not fired._timer.is_alive()
