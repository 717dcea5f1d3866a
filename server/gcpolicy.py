"""Garbage-collector policy for the server process: long-lived state out of full collections.

A server holding 5,000 matches and 10,000 connections has ~400,000 objects the cyclic
collector tracks, and a full (generation 2) collection walks all of them: measured 160–490 ms
with the event loop stopped, every few seconds under load (docs/PERFORMANCE.md). Almost all of
them live as long as a room or a connection and die by reference counting: measured, a closed
connection and a finished room leave no reference cycles behind. So after every full collection
the survivors are frozen (``gc.freeze``) and later collections walk only what is newer.

Young collections are made 30 times rarer too (``YOUNG_THRESHOLD``): in the loaded server each
one stopped the loop for 20–65 ms whatever its size (measured with the probe of
benchmarks/bench_server.py; the cause is inside CPython's collector), and with them rarer the
round-trip p99 at 5,000 matches went from 15.6 to 9.2 ms.

The price would be cyclic garbage among frozen objects, which is never collected;
``full_collections()`` reports what each full collection still found, so a regression shows in
the log (``gc_full``) instead of as slow growth.

Only ``mine-duel-server`` installs it: a game client hosting a server keeps the default policy.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

log = Logger(namespace="mineduel.gc")

YOUNG_THRESHOLD = 20_000
"""Allocations between young collections (CPython's default is 700)."""


class FreezeAfterFullCollections:
    """Freeze the heap at start and one reactor turn after every full collection."""

    def __init__(self, clock: IReactorTime) -> None:
        self.clock = clock
        self.collections = 0
        self.collected = 0
        self.longest = 0.0
        self._started = 0.0
        self._pending = False

    def install(self) -> Callable[[], None]:
        """Freeze now and after each full collection; returns the uninstaller."""
        thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, 10, 10)
        gc.freeze()
        gc.callbacks.append(self._callback)

        def uninstall() -> None:
            gc.set_threshold(*thresholds)
            if self._callback in gc.callbacks:
                gc.callbacks.remove(self._callback)

        return uninstall

    def _callback(self, phase: str, info: Mapping[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        self.collections += 1
        self.collected += info.get("collected", 0)
        self.longest = max(self.longest, took)
        log.debug("gc_full ms={ms:.1f} collected={collected}", ms=took * 1000, collected=info.get("collected", 0))
        if not self._pending:
            self._pending = True  # not from inside the collector: on the next reactor turn
            self.clock.callLater(0, self._freeze)

    def _freeze(self) -> None:
        self._pending = False
        gc.freeze()


__all__ = ["FreezeAfterFullCollections"]
