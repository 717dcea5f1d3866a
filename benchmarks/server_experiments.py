"""What-if experiments for ``bench_server.py --experiment NAME`` — NOT production code.

They monkeypatch the server's internals inside the benchmark's server process
(``server_probe.py``) to measure how much a proposed change would buy before anyone writes it
properly in ``server/``. They depend on private names and may break when the server changes.

``group-commit``
    One SQLite transaction per reactor turn instead of one per accepted change. Every
    ``Rooms._commit_write`` appends its ``Write`` to a batch; a ``callLater(0)`` flush (the
    next reactor turn, before the next poll) applies all of them in order in **one**
    transaction, then releases every message the server wanted to send meanwhile, in order. So
    nothing is acknowledged or shown to anyone before it is on disk, as today; only the fsync
    is shared. What the prototype leaves out (a real version needs it): on a failed batch,
    roll back every room the batch touched (the first ``_snapshot`` of each) and turn the held
    replies into ``internal_error`` — here it only logs.

``nodelay``
    ``TCP_NODELAY`` on every server connection (Nagle off).

``fast-board``
    ``protocol.board_json`` (two per action) from per-byte lookup tables and ``str.translate``;
    the same strings.

``lean-settle``
    ``Rooms._settle_and_publish`` (run before every request) returns at once when no turn
    deadline or grace is due, instead of snapshotting and comparing the room.

``spread-pings``
    The 5 s heartbeat sent to 1/50 of the connections every 0.1 s instead of to all of them at once.

``gc-freeze``
    ``gc.freeze()`` at start and after every full collection (see :func:`gc_freeze`).

``arm-reset``
    A room's timer is kept when it fires no later than needed, instead of being cancelled and
    re-created after every action (see :func:`arm_reset`).

``restore-gc``
    No automatic garbage collection during the sliced restore; ``gc.freeze()`` at its end.
    (Adopted by the server in ef8e965; now a no-op on top of it.)

``restore-slice-5ms``
    ``restore_slice`` = 5 ms (each slice's SQLite commit and JSON come on top of the slice).
    (Adopted by the server in ef8e965 as the default; now a no-op.)

``restore-split``
    Each restore slice's commit in a reactor turn of its own, serialising the rooms as they are
    at commit time (see :func:`restore_split`).

``log-slow-commits``, ``trace-slow-turns``
    Diagnostics only: log SQLite commits slower than 5 ms; log reactor turns over 20 ms, split
    into timers and I/O.

``orjson-storage``
    Room blobs and record actions serialised with ``orjson`` (sorted keys) instead of
    ``json.dumps(sort_keys=True)``.
"""

from __future__ import annotations

from typing import Any


def group_commit() -> None:
    import time

    from mineduel.server import net, rooms, session, storage
    from mineduel.shared import protocol
    from twisted.logger import Logger

    log = Logger(namespace="bench.group_commit")
    Rooms = rooms.Rooms

    def commit_many(self: storage.SQLiteStorage, writes: list[storage.Write]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for write in writes:
                for key, value in write.meta.items():
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
                for match in write.drop_actions:
                    db.execute("DELETE FROM actions WHERE match_id = ?", (match,))
                for code, blob in write.rooms.items():
                    if blob is None:
                        db.execute("DELETE FROM rooms WHERE code = ?", (code,))
                    else:
                        db.execute("INSERT OR REPLACE INTO rooms VALUES (?, ?)", (code, storage._dumps(blob)))
                db.executemany("INSERT INTO actions VALUES (?, ?, ?)",
                               [(m, s, storage._dumps(a)) for m, s, a in write.actions])
                db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", write.results)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    storage.SQLiteStorage.commit_many = commit_many

    def state(self: Any) -> dict[str, Any]:
        st = self.__dict__.get("_gc")
        if st is None:
            st = self._gc = {"batch": [], "held": [], "scheduled": False}
        return st

    def flush(self: Any) -> None:
        st = state(self)
        st["scheduled"] = False
        batch, st["batch"] = st["batch"], []
        held, st["held"] = st["held"], []
        if batch:
            try:
                t = time.perf_counter()
                self.storage.commit_many(batch)
                took = time.perf_counter() - t
                if took > 0.005:
                    log.warn("slow_group_commit ms={ms:.1f} writes={n}", ms=took * 1000, n=len(batch))
            except Exception:
                log.failure("group commit failed: {n} writes lost (prototype: no rollback)", n=len(batch))
                return
        for op, factory, peer, data in held:
            proto = factory.protocols.get(peer)
            if proto is None or proto.transport is None:
                continue
            if op == "send":
                proto.transport.write(data)
            else:
                proto.transport.loseConnection()

    def _commit_write(self: Any, write: Any) -> None:
        write.meta.setdefault("clock", repr(self.now()))
        st = state(self)
        st["batch"].append(write)
        if not st["scheduled"]:
            st["scheduled"] = True
            self.clock.callLater(0, flush, self)

    Rooms._commit_write = _commit_write
    Rooms._gc_flush = flush

    orig_send = net.ServerFactory.send
    orig_close = net.ServerFactory.close

    def send(self: Any, peer: int, message: Any) -> None:
        st = state(self.core.rooms)
        if st["batch"]:
            st["held"].append(("send", self, peer, protocol.encode(message)))
        else:
            orig_send(self, peer, message)

    def close(self: Any, peer: int) -> None:
        st = state(self.core.rooms)
        if st["batch"]:
            st["held"].append(("close", self, peer, None))
        else:
            orig_close(self, peer)

    net.ServerFactory.send = send
    net.ServerFactory.close = close

    orig_stop = session.ServerCore.stop

    def stop(self: Any, reason: str = "shutdown") -> None:
        flush(self.rooms)
        orig_stop(self, reason)
        flush(self.rooms)

    session.ServerCore.stop = stop


def orjson_storage() -> None:
    import orjson
    from mineduel.server import storage

    def _dumps(value: Any) -> str:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()

    storage._dumps = _dumps


def nodelay() -> None:
    from mineduel.server import net

    orig = net.LineProtocol.connectionMade

    def connectionMade(self: Any) -> None:
        self.transport.setTcpNoDelay(True)
        orig(self)

    net.LineProtocol.connectionMade = connectionMade


def fast_board() -> None:
    """``protocol.board_json`` from per-byte lookup tables: the same strings, fewer Python steps."""
    from mineduel.shared import protocol

    spread = []  # bit i of a byte -> octal digit i (bit 3i)
    for byte in range(256):
        v = 0
        for i in range(8):
            if byte >> i & 1:
                v |= 1 << (3 * i)
        spread.append(v)

    def octal(mask: int) -> int:
        out = 0
        for r in range(8):
            out |= spread[(mask >> (8 * r)) & 255] << (24 * r)
        return out

    opened_t = str.maketrans("012", ".om")
    markers_t = str.maketrans("012", ".mo")
    mines_t = str.maketrans("01", ".x")
    num_ch = ("." if n < 0 else str(n) for n in range(-1, 9))
    num_ch = tuple(num_ch)  # index n + 1

    def rows(text: str) -> list[str]:
        return [text[0:8], text[8:16], text[16:24], text[24:32], text[32:40], text[40:48], text[48:56], text[56:64]]

    def board_json(view: Any) -> dict[str, list[str]]:
        # format(..., "064o") puts cell 63 first: reverse to get cell 0 first.
        opened = format(octal(view.revealed) + octal(view.revealed_by_me), "064o")[::-1].translate(opened_t)
        markers = format(octal(view.my_markers) + 2 * octal(view.opponent_markers), "064o")[::-1].translate(markers_t)
        mines = format(view.my_mines, "064b")[::-1].translate(mines_t)
        numbers = "".join([num_ch[n + 1] for n in view.numbers])
        return {"numbers": rows(numbers), "opened_by": rows(opened), "markers": rows(markers), "my_mines": rows(mines)}

    protocol.board_json = board_json


def lean_settle() -> None:
    """``Rooms._settle_and_publish`` returns at once when no deadline or grace is due yet."""
    from mineduel.server import rooms

    orig = rooms.Rooms._settle_and_publish
    eps = rooms.EPS

    def _settle_and_publish(self: Any, room: Any) -> None:
        match = room.match
        if match is not None and not match.over:
            now = self.now() + eps
            if match.deadline is not None and match.deadline <= now:
                return orig(self, room)
            for seat in room.seats:
                if seat.grace is not None and seat.expired is None and seat.grace <= now:
                    return orig(self, room)
            return None
        return orig(self, room)

    rooms.Rooms._settle_and_publish = _settle_and_publish


def spread_pings(slices: int = 50) -> None:
    """Heartbeats in ``slices`` groups: every ``ping_interval / slices`` seconds one group is
    pinged, so each connection still gets a ping every ``ping_interval``, but the 10,000 pings
    (and the 10,000 pongs they cause) no longer land in one reactor turn."""
    from mineduel.server import session
    from mineduel.shared.protocol import ServerType
    from twisted.internet.task import LoopingCall

    orig_start = session.ServerCore.start

    def start(self: Any) -> None:
        orig_start(self)
        for loop in list(self._loops):
            if getattr(loop.f, "__func__", None) is session.ServerCore._ping_all:
                loop.stop()
                self._loops.remove(loop)
        turn = [0]

        def ping_slice() -> None:
            k = turn[0]
            turn[0] = (k + 1) % slices
            msg = {"type": ServerType.PING.value, "server_time": round(self.rooms.now(), 3)}
            for pid, conn in list(self.conns.items())[k::slices]:
                if not conn.closed:
                    self.outbox.send(pid, msg)

        loop = LoopingCall(ping_slice)
        loop.clock = self.clock
        loop.start(self.config.ping_interval / slices, now=False)
        self._loops.append(loop)

    session.ServerCore.start = start


def gc_freeze() -> None:
    """After every full (generation 2) collection, ``gc.freeze()`` the survivors: later full
    collections only walk objects created since, so they stay short as the heap grows.
    Price: cyclic garbage made of frozen objects is never collected (e.g. a connection that was
    open at a freeze and closes later keeps its transport/protocol cycle) unless something calls
    ``gc.unfreeze()`` and collects again."""
    import gc

    from twisted.internet import reactor

    pending = [False]

    def freeze() -> None:
        pending[0] = False
        gc.freeze()

    def callback(phase: str, info: dict) -> None:
        if phase == "stop" and info.get("generation") == 2 and not pending[0]:
            pending[0] = True
            reactor.callLater(0, freeze)

    gc.callbacks.append(callback)
    reactor.callWhenRunning(gc.freeze)


def restore_gc() -> None:
    """No automatic collection while rooms are restored (they are long-lived and make no
    cycles); at the end ``gc.freeze()`` the restored heap and collect normally again."""
    import gc

    from mineduel.server import rooms

    orig = rooms.Rooms.restore_all

    def restore_all(self: Any) -> Any:
        was = gc.isenabled()
        gc.disable()

        def done(n: Any) -> Any:
            gc.freeze()
            if was:
                gc.enable()
            return n

        return orig(self).addBoth(done)

    rooms.Rooms.restore_all = restore_all


def restore_slice_5ms() -> None:
    """``Config.restore_slice`` 5 ms instead of 10 ms (the slice's commit comes on top of it)."""
    from mineduel.server import cli

    orig = cli.parse_args

    def parse_args(argv: Any) -> Any:
        config, level = orig(argv)
        return config.with_(restore_slice=0.005), level

    cli.parse_args = parse_args


def log_slow_commits() -> None:
    """Diagnostic, changes nothing: log every SQLite commit slower than 5 ms (and the restore slices)."""
    import time

    from mineduel.server import storage
    from twisted.logger import Logger

    log = Logger(namespace="bench.slow")
    orig = storage.SQLiteStorage.commit

    def commit(self: Any, write: Any) -> None:
        t = time.perf_counter()
        orig(self, write)
        took = time.perf_counter() - t
        if took > 0.005:
            log.warn("slow_commit ms={ms:.1f} rooms={rooms} actions={actions}", ms=took * 1000,
                     rooms=len(write.rooms), actions=len(write.actions))

    storage.SQLiteStorage.commit = commit


def restore_split() -> None:
    """The sliced restore with each slice's commit in a reactor turn of its own (the server's
    turn restores rooms for ``restore_slice`` seconds *and then* commits them: two costs in one
    turn). Otherwise as the server's ``restore_all`` (no automatic collection while restoring,
    the restored heap frozen at the end).

    The commit serialises each room when it runs, not when the room was restored: between the
    two turns a request may already have changed and stored a just-restored room, and the
    slice must not overwrite that with the older state (a first version of this experiment,
    which wrote the blobs captured at restore time, could; measured figures were the same)."""
    import gc
    import time
    from collections import deque

    from mineduel.server import rooms
    from mineduel.server.storage import Write
    from twisted.internet.defer import Deferred
    from twisted.logger import Logger

    log = Logger(namespace="mineduel.rooms")

    def restore_all(self: Any) -> Any:
        codes = self.storage.room_codes()
        self._pending.update(codes)
        queue = deque(codes)
        done: Deferred[int] = Deferred()
        count = [0]
        collecting = gc.isenabled()
        gc.disable()

        def step() -> None:
            started = time.perf_counter()
            restored = []
            while queue and time.perf_counter() - started < self.config.restore_slice:
                code = queue.popleft()
                if code in self._pending:
                    self._restore_room(code, Write())  # its blob is written by commit()
                    restored.append(code)
                    count[0] += 1
            self.clock.callLater(0, commit, restored)

        def commit(restored: list[str]) -> None:
            write = Write(rooms={c: self.rooms[c].to_blob() for c in restored if c in self.rooms})
            if write:
                self._commit_write(write)
            if queue:
                self.clock.callLater(0, step)
            else:
                gc.freeze()
                if collecting:
                    gc.enable()
                log.info("restore_done rooms={count}", count=count[0])
                done.callback(count[0])

        self.clock.callLater(0, step)
        return done

    rooms.Rooms.restore_all = restore_all


def arm_reset() -> None:
    """``Rooms._arm`` keeps the room's pending timer when it fires no later than needed (an early
    wake-up settles nothing and re-arms), instead of cancel + ``callLater`` after every action:
    every cancellation counts towards Twisted's rebuild of its whole timer heap (10,000 idle
    timers + 5,000 room timers: a ~30 ms turn every ~12 s at 1,200 actions/s). It never calls
    ``DelayedCall.reset`` to an earlier time, which is a linear search of that heap in Twisted."""
    from mineduel.server import rooms

    def _arm(self: Any, room: Any) -> None:
        match = room.match
        times = []
        if match is not None and not match.over and room.match_seats() is not None:
            if match.deadline is not None:
                times.append(match.deadline)
            for seat in room.seats:
                if seat.grace is not None and seat.expired is None:
                    times.append(seat.grace)
        call = room.call if room.call is not None and room.call.active() else None
        if times:
            delay = max(0.0, min(times) - self.now())
            if call is not None and call.getTime() <= self.clock.seconds() + delay + 1e-6:
                return  # fires in time (maybe early: _on_timer then re-arms)
        if call is not None:
            call.cancel()
        room.call = None
        if times:
            room.call = self.clock.callLater(delay, self._on_timer, room.code)

    rooms.Rooms._arm = _arm


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
            log.warn("slow_turn timers_ms={t:.1f} io_ms={io:.1f} (incl. wait {d:.1f}) due_calls={n}",
                     t=last["timers"] * 1000, io=io * 1000, d=(delay or 0) * 1000, n=last["calls"])

    reactor.runUntilCurrent = runUntilCurrent
    reactor.doIteration = doIteration


EXPERIMENTS = {  # applied in this order (restore-split replaces what restore-gc wraps)
    "group-commit": group_commit,
    "orjson-storage": orjson_storage,
    "nodelay": nodelay,
    "fast-board": fast_board,
    "lean-settle": lean_settle,
    "spread-pings": spread_pings,
    "gc-freeze": gc_freeze,
    "arm-reset": arm_reset,
    "restore-split": restore_split,
    "restore-gc": restore_gc,
    "restore-slice-5ms": restore_slice_5ms,
    "log-slow-commits": log_slow_commits,
    "trace-slow-turns": trace_slow_turns,
}


def apply(names: list[str]) -> None:
    for name, fn in EXPERIMENTS.items():
        if name in names:
            fn()
