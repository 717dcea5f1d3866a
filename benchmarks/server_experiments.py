"""What-if experiments for ``bench_server.py --experiment NAME`` — NOT production code.

They monkeypatch the server's internals inside the benchmark's server process
(``server_probe.py``) to measure a proposed change, or to look inside, before anyone writes it
properly in ``server/``. They depend on private names and may break when the server changes.

The experiments measured on 2026-11-29 (group commit, orjson storage, lean settle, arm reset,
spread pings, GC freezing, the restore's split commit) are now the server's own code
(``server/commits.py``, ``server/gcpolicy.py``, ``server/rooms.py``); docs/PERFORMANCE.md keeps
their what-if figures.

``nodelay``
    ``TCP_NODELAY`` on every server connection (Nagle off). The server has done this itself
    since issue 8 (``server/net.py``), so the experiment now changes nothing; kept so older
    figures can be reproduced with older servers.

``no-gc-freeze``
    The server without its garbage-collector policy (``server/gcpolicy.py``): what it buys.

``commit-thread``
    The server's ``--commit-thread`` (commits on a worker thread): what it costs and buys.

``log-slow-commits``, ``trace-slow-turns``
    Diagnostics only: log SQLite commits slower than 5 ms; log reactor turns over 20 ms, split
    into timers and I/O.
"""

from __future__ import annotations

from typing import Any


def nodelay() -> None:
    from mineduel.server import net

    orig = net.LineProtocol.connectionMade

    def connectionMade(self: Any) -> None:
        self.transport.setTcpNoDelay(True)
        orig(self)

    net.LineProtocol.connectionMade = connectionMade


def no_gc_freeze() -> None:
    """The server process without ``FreezeAfterFullCollections`` (the default collector)."""
    from mineduel.server import gcpolicy

    gcpolicy.FreezeAfterFullCollections.install = lambda self: (lambda: None)  # type: ignore[method-assign]


def commit_thread() -> None:
    """``mine-duel-server --commit-thread``: each batch commits on a worker thread."""
    from mineduel.server import cli

    orig = cli.parse_args

    def parse_args(argv: Any) -> Any:
        config, level = orig(argv)
        return config.with_(commit_thread=True), level

    cli.parse_args = parse_args


def log_slow_commits() -> None:
    """Diagnostic, changes nothing: log every SQLite commit slower than 5 ms (and the restore slices)."""
    import time

    from twisted.logger import Logger

    from mineduel.server import storage

    log = Logger(namespace="bench.slow")
    orig = storage.SQLiteStorage.commit

    def commit(self: Any, write: Any) -> None:
        t = time.perf_counter()
        orig(self, write)
        took = time.perf_counter() - t
        if took > 0.005:
            log.warning("slow_commit ms={ms:.1f} rooms={rooms} actions={actions}", ms=took * 1000,
                     rooms=len(write.rooms), actions=len(write.actions))

    storage.SQLiteStorage.commit = commit


def trace_slow_turns() -> None:
    """Diagnostic, changes nothing: log reactor turns over 20 ms, split into timers (runUntilCurrent,
    e.g. the group-commit flush, pings, room deadlines) and I/O (doIteration: reads and writes)."""
    import time

    from twisted.internet import reactor
    from twisted.logger import Logger

    log = Logger(namespace="bench.turns")
    orig_run = reactor.runUntilCurrent
    orig_do = reactor.doIteration
    last = {"timers": 0.0, "calls": 0}

    def runUntilCurrent() -> None:
        t = time.perf_counter()
        n = len(reactor._pendingTimedCalls)
        orig_run()
        last["timers"] = time.perf_counter() - t
        last["calls"] = n - len(reactor._pendingTimedCalls)

    def doIteration(delay: Any) -> None:
        t = time.perf_counter()
        orig_do(delay)
        io = time.perf_counter() - t
        if io + last["timers"] > 0.020:
            log.warning("slow_turn timers_ms={t:.1f} io_ms={io:.1f} (incl. wait {d:.1f}) due_calls={n}",
                     t=last["timers"] * 1000, io=io * 1000, d=(delay or 0) * 1000, n=last["calls"])

    reactor.runUntilCurrent = runUntilCurrent
    reactor.doIteration = doIteration


EXPERIMENTS = {
    "nodelay": nodelay,
    "no-gc-freeze": no_gc_freeze,
    "commit-thread": commit_thread,
    "log-slow-commits": log_slow_commits,
    "trace-slow-turns": trace_slow_turns,
}


def apply(names: list[str]) -> None:
    for name, fn in EXPERIMENTS.items():
        if name in names:
            fn()
