#!/usr/bin/env python3
"""Run ``mine-duel-server`` unchanged, plus a reactor lag probe (and optionally cProfile), in one process.

    python benchmarks/server_probe.py --probe FILE [--probe-interval 0.002] [--profile OUT.prof] \
        [--experiment NAME ...] -- <mine-duel-server arguments>

The server is ``mineduel.server.cli.main`` itself; this wrapper only adds, inside the same
process and reactor:

* a **lag probe**: a ``callLater`` chain every ``--probe-interval`` seconds. Each tick records
  the gap since the previous tick; the longest gap bounds the longest time the event loop was
  busy without running timers (a stall of S seconds shows as a gap of about S, never more than
  S + interval). Every 0.1 s it appends a JSON line to FILE:
  ``{"t": <time.monotonic()>, "ticks": n, "max_gap": <s, this window>, "gaps_over_20ms": n}``;
* ``gc`` events: every garbage collection of 2 ms or more (generation, seconds);
* events on the same file: ``reactor_running`` (with ``startup``: seconds from process start
  to the first reactor turn, i.e. opening the database and listing its rooms), and ``restored``
  (with ``rooms``) when the server's sliced restore finishes (``ServerHandle.restored``);
* with ``--queues``, every 0.1 s a ``queues`` event: per connection with output waiting, keyed by
  the peer's port, ``[server, kernel]``: the bytes waiting for it in the server (Twisted's buffer
  and the held snapshots of output coalescing, ``server/net.py``; what ``max_unsent`` bounds) and
  in the kernel's send queue (TIOCOUTQ): what a slow reader's queue looks like from inside.

``time.monotonic()`` is system-wide on Linux, so the load generator can line these up with its
own clock.
"""

from __future__ import annotations

import time

T0 = time.monotonic()  # before the other imports: ``startup`` counts from here

import argparse  # noqa: E402 - after T0, on purpose
import json  # noqa: E402 - after T0, on purpose
import sys  # noqa: E402 - after T0, on purpose
from typing import Any  # noqa: E402 - after T0, on purpose


class LagProbe:
    def __init__(self, reactor: Any, path: str, interval: float) -> None:
        self.reactor = reactor
        self.out = open(path, "a", buffering=1)  # noqa: SIM115 - open, line-buffered, for the whole server run
        self.interval = interval
        self.last = 0.0
        self.ticks = 0
        self.window_max = 0.0
        self.window_over = 0
        self.window_start = 0.0

    def event(self, name: str, **fields: object) -> None:
        self.out.write(json.dumps({"event": name, "t": time.monotonic(), **fields}) + "\n")

    def watch_gc(self) -> None:
        """Record every garbage collection that takes 2 ms or more (a stall the probe also sees)."""
        import gc

        started = [0.0]

        def callback(phase: str, info: dict) -> None:
            if phase == "start":
                started[0] = time.monotonic()
            else:
                took = time.monotonic() - started[0]
                if took >= 0.002:
                    self.event("gc", generation=info.get("generation"), seconds=took, collected=info.get("collected"))

        gc.callbacks.append(callback)

    def start(self) -> None:
        now = time.monotonic()
        self.event("reactor_running", startup=now - T0)
        self.last = self.window_start = now
        self.reactor.callLater(self.interval, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        gap = now - self.last
        self.last = now
        self.ticks += 1
        self.window_max = max(self.window_max, gap)
        if gap > 0.020:
            self.window_over += 1
        if now - self.window_start >= 0.1:
            self.out.write(json.dumps({"t": now, "ticks": self.ticks, "max_gap": self.window_max,
                                       "gaps_over_20ms": self.window_over}) + "\n")
            self.window_start = now
            self.window_max = 0.0
            self.window_over = 0
        self.reactor.callLater(self.interval, self._tick)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", required=True, help="file receiving the probe's JSON lines")
    parser.add_argument("--probe-interval", type=float, default=0.002)
    parser.add_argument("--profile", default=None, help="write cProfile stats of the whole server run here")
    parser.add_argument("--census", action="store_true",
                        help="on SIGUSR1, write the 25 most numerous GC-tracked types to the probe file")
    parser.add_argument("--queues", action="store_true",
                        help="every 0.1 s, write the bytes waiting for each connection to the probe file")
    parser.add_argument("--experiment", action="append", default=[],
                        help="apply a what-if patch from server_experiments.py (not production code)")
    parser.add_argument("server_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    server_args = args.server_args[1:] if args.server_args[:1] == ["--"] else args.server_args

    from twisted.internet import reactor

    from mineduel.server import cli, service

    if args.experiment:
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import server_experiments

        server_experiments.apply(args.experiment)
    probe = LagProbe(reactor, args.probe, args.probe_interval)
    original = service.start_server

    def start_server(*a: Any, **kw: Any) -> service.ServerHandle:
        handle = original(*a, **kw)
        handle.restored.addCallback(lambda n: probe.event("restored", rooms=n))
        if args.queues:
            import fcntl
            import termios

            from twisted.internet.task import LoopingCall

            from mineduel.server.net import unsent_bytes

            def kernel_unsent(transport: Any) -> int:
                """Bytes the kernel still holds in the socket's send queue (Linux: TIOCOUTQ)."""
                sock = getattr(transport, "socket", None)
                if sock is None:
                    return 0
                try:
                    out = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
                except OSError:
                    return 0
                return int.from_bytes(out, sys.byteorder)

            def queues() -> None:
                waiting = {}
                for proto in list(handle.factory.protocols.values()):
                    if proto.transport is not None:
                        size = unsent_bytes(proto.transport) + getattr(proto, "held_bytes", lambda: 0)()
                        kernel = kernel_unsent(proto.transport)
                        if size or kernel:
                            waiting[str(getattr(proto.transport.getPeer(), "port", "?"))] = [size, kernel]
                if waiting:
                    probe.event("queues", waiting=waiting)

            LoopingCall(queues).start(0.1, now=False)
        return handle

    service.start_server = start_server  # cli.main imports it at call time
    probe.watch_gc()
    if args.census:
        import signal

        def census() -> None:
            import gc
            from collections import Counter

            objects = gc.get_objects()
            top = Counter(type(o).__qualname__ for o in objects).most_common(25)
            probe.event("census", tracked=len(objects), top=top)

        signal.signal(signal.SIGUSR1, lambda *_: reactor.callFromThread(census))
    reactor.callWhenRunning(probe.start)
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        rc = profiler.runcall(cli.main, server_args)
        profiler.dump_stats(args.profile)
    else:
        rc = cli.main(server_args)
    probe.event("stopped")
    return rc


if __name__ == "__main__":
    sys.exit(main())
