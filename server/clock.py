"""A reactor clock that the system clock cannot move.

Twisted schedules ``callLater`` on ``reactor.seconds()``, which is ``time.time()``: set the
system clock an hour ahead (NTP catching up, an operator, a laptop waking) and every turn
deadline and grace period falls due at once; set it back and they wait an hour. Deadlines are
durations (RULES.md O4, O5, O12), so they are measured on the monotonic clock instead. The
values still read as Unix time (the wall clock at start, then monotonic steps), because the
server clock, deadlines and records are written as Unix time (docs/PROTOCOL.md §2).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class SteadyClock:
    """``wall()`` at creation, then advanced by ``monotonic()`` only."""

    def __init__(self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._base = wall() - monotonic()

    def __call__(self) -> float:
        return self._base + self._monotonic()


def install_steady_clock(reactor: Any) -> SteadyClock:
    """Make ``reactor.seconds`` (and so every ``callLater``) steady.

    Call it before anything is scheduled: delayed calls already waiting keep their times, which
    is harmless only because the two clocks agree at this moment.
    """
    clock = SteadyClock()
    reactor.seconds = clock
    return clock
