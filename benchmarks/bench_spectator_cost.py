#!/usr/bin/env python3
"""What one spectator costs the server per action, in instructions (issue 19), load-independent.

    .venv/bin/python benchmarks/bench_spectator_cost.py --callgrind          # both valgrind runs, and the difference
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=starmap_next \
        .venv/bin/python benchmarks/bench_spectator_cost.py --spectators 1 --rounds 30   # one of them
    .venv/bin/python benchmarks/bench_spectator_cost.py --cpu                # CPU time per action instead (noisy on a shared machine)

The real server core (``ServerCore`` on a clock that keeps its timers in a heap, as the reactor
does: ``HeapClock``; the server's GC policy, ``server/gcpolicy.py``) with the real Twisted outbox
(``net.ServerFactory``: ``net.line`` and its cache of encoded views, ``LineProtocol.deliver``,
``write_now``) writing to real ``tcp.Connection`` transports on socketpairs (callgrind counts the
user-space instructions only: the kernel's share of a write is what ``bench_server.py`` adds). ``--rooms`` rooms play ``--rounds`` actions each, every
room with ``--spectators`` watcher connections from the start of its match. ``--mix bots`` (the
default) moves as ``bench_server.py``'s bots do (any legal cell from the seat's own view, so
explores end matches by KO; a flag now and then; both players ``rematch`` after the end, each
wish a change the spectators see too); ``--mix safe`` only mid-match actions (explores and plants
on cells without any mine, read from the server's truth as ``tests/support/harness.py``'s oracle).

After the set-up and 5 rounds of warm-up, the measured rounds run inside ``itertools.starmap``,
so ``--toggle-collect=starmap_next`` counts them and nothing else: ``--callgrind`` prints the
instructions per action without spectators and what one spectator per room adds. Deterministic
(fixed seeds), so it judges a change on a busy machine where wall-clock figures cannot.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _socket_transport(protocol: Any) -> tuple[Any, Any]:
    """A real ``tcp.Connection`` on one end of a socketpair, so every write takes the server's own
    path (``write_now``: the socket's ``send``); the other end is returned to count what arrived.
    Nothing reads during the run: a room's ~35 actions fit the sockets' buffers."""
    import socket

    from twisted.internet import reactor, tcp

    class Connection(tcp.Connection):
        def getPeer(self) -> Any:
            return None

        def getHost(self) -> Any:
            return None

    mine, theirs = socket.socketpair()
    mine.setblocking(False)
    theirs.setblocking(False)
    conn = Connection(mine, protocol, reactor)
    conn.connected = 1
    return conn, theirs


def _received(sock: Any) -> int:
    """Bytes waiting at the far end of a socket transport (read and dropped)."""
    total = 0
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return total
        if not chunk:
            return total
        total += len(chunk)


class HeapClock:
    """``IReactorTime`` on a heap, as the reactor keeps its timers (``task.Clock`` sorts its whole
    list on every ``callLater``: a cost per connection per action no real server pays)."""

    def __init__(self, now: float) -> None:
        import heapq
        import itertools

        self.now = now
        self.heap: list[tuple[float, int, Any]] = []
        self.push = heapq.heappush
        self.pop = heapq.heappop
        self.count = itertools.count()

    def seconds(self) -> float:
        return self.now

    def callLater(self, delay: float, f: Any, *args: Any, **kw: Any) -> Any:
        from twisted.internet.base import DelayedCall

        call = DelayedCall(self.now + delay, f, args, kw, lambda c: None, self._moved, self.seconds)
        self.push(self.heap, (call.time, next(self.count), call))
        return call

    def _moved(self, call: Any) -> None:  # reset earlier: pushed again (the old entry is skipped)
        self.push(self.heap, (call.time, next(self.count), call))

    def advance(self, seconds: float) -> None:
        self.now += seconds
        heap = self.heap
        while heap and heap[0][0] <= self.now:
            at, _, call = self.pop(heap)
            if not call.active() or at != call.time:
                continue
            if call.delayed_time:  # reset later: its entry moves on (as the reactor does)
                call.activate_delay()
                self.push(heap, (call.time, next(self.count), call))
                continue
            call.called = 1
            call.func(*call.args, **call.kw)


def play(rooms: int, rounds: int, spectators: int, seed: int = 1, warmup: int = 5, mix: str = "safe") -> tuple[int, int, float]:
    """Set up, play ``warmup`` rounds, then measure ``rounds``: (accepted actions, bytes written to
    spectators, CPU seconds) of the measured rounds."""
    import itertools
    import random

    from mineduel.server import net
    from mineduel.server.config import Config
    from mineduel.server.gcpolicy import FreezeAfterFullCollections
    from mineduel.server.session import ServerCore
    from mineduel.server.storage import MemoryStorage
    from mineduel.shared.rules.bitboard import FULL, cells
    from mineduel.shared.rules.engine import Phase
    from mineduel.shared.rules.views import targets_of
    from mineduel.shared.wire import codec

    clock = HeapClock(1_700_000_000.0)
    factory = net.ServerFactory(clock)
    config = Config(
        rate_per_second=1e9, rate_burst=1e9, idle_timeout=1e9, ping_interval=1e9, max_connections_per_address=10**6,
        address_rate_per_second=1e9, address_rate_burst=1e9, connection_rate_per_address=1e9,
        connection_burst_per_address=1e9, max_rooms_per_address=10**6, max_records_per_address=10**9,
        max_records_per_pair=10**9, max_spectating_per_address=10**6,
    )
    core = ServerCore(clock=clock, randbytes=random.Random(seed).randbytes, storage=MemoryStorage(),
                      outbox=factory, config=config)
    factory.core = core
    pids = iter(range(1, 10**7))
    far: dict[int, Any] = {}  # connection -> the socket its bytes arrive at

    def connect(address: str) -> int:
        pid = next(pids)
        proto = factory.buildProtocol(None)
        proto.pid = pid
        proto.transport, far[pid] = _socket_transport(proto)
        factory.protocols[pid] = proto
        core.connection_made(pid, address, "127.0.0.1", 47650)
        send(pid, {"type": "hello", "protocol": 1, "client": "bench/1"})
        return pid

    def send(pid: int, msg: dict[str, Any]) -> None:
        core.line_received(pid, codec.encode(msg)[:-1])
        core.commits.flush()

    matches = []
    watchers: list[int] = []
    for i in range(rooms):
        a, b = connect(f"10.0.{i // 250}.{i % 250 + 1}"), connect(f"10.1.{i // 250}.{i % 250 + 1}")
        core.line_received(a, codec.encode({"type": "create_room", "name": "Ann", "client_seed": f"a{i}"})[:-1])
        core.commits.flush()
        code = next(c for c, r in core.rooms.rooms.items() if any(s.peer == a for s in r.seats))
        send(b, {"type": "join", "room": code, "name": "Bob", "client_seed": f"b{i}"})
        for _ in range(spectators):
            w = connect(f"10.2.{i // 250}.{i % 250 + 1}")
            send(w, {"type": "spectate", "room": code})
            watchers.append(w)
        send(a, {"type": "ready"})
        send(b, {"type": "ready"})
        matches.append((code, a, b))
    accepted = 0

    rng = random.Random(seed)

    def round_() -> None:
        """Every room's seat to move makes one action (its own reactor turn); ``mix`` "bots": a
        finished match's two players send ``rematch`` instead (each its own turn)."""
        nonlocal accepted
        for code, _, _ in matches:
            room = core.rooms.rooms[code]
            match = room.match
            if match is None:
                continue
            state = match.state
            if state.over:
                if mix == "bots":
                    for seat in room.seats:
                        if seat.peer is not None:
                            clock.advance(0.01)
                            send(seat.peer, {"type": "rematch"})
                continue
            seat = state.to_move
            peer = next(s.peer for s in room.seats if s.sid == match.players[seat])
            if mix == "bots":  # as server_bots.choose_move: any legal cell, so explores may end in a KO
                explore, plant, flag, _ = targets_of(state.phase, state.revealed, state.mines[seat], state.markers[seat],
                                                     state.markers[1 - seat], state.quota_left)
                if state.phase is Phase.END_WAIT:
                    if flag and rng.random() < 0.25:
                        msg: dict[str, Any] = {"type": "flag", "cell": list(divmod(rng.choice(list(cells(flag))), 8))}
                    else:
                        msg = {"type": "end_turn"}
                else:
                    msg = {"type": "explore" if explore else "plant", "cell": list(divmod(rng.choice(list(cells(explore or plant))), 8))}
            else:  # "safe": mid-match actions only (no cell next to... any mine: no KO, no end)
                safe = FULL & ~(state.revealed | state.any_marker | state.any_mine)
                if state.phase in (Phase.OPEN_EXPLORE, Phase.EXPLORE):
                    msg = {"type": "explore", "cell": list(divmod(next(cells(safe)), 8))}
                elif state.phase in (Phase.OPEN_PLANT, Phase.PLANT):
                    msg = {"type": "plant", "cell": list(divmod(next(cells(safe or state.plantable(seat))), 8))}
                else:
                    msg = {"type": "end_turn"}
            seq = match.seq
            clock.advance(0.25)
            send(peer, msg)
            accepted += room.match is match and match.seq > seq

    for _ in range(warmup):
        round_()
    gc.collect()
    FreezeAfterFullCollections(clock).install()  # the server's own GC policy (server/gcpolicy.py)
    accepted = 0
    for w in watchers:
        _received(far[w])
    # The measured part runs inside ``itertools.starmap`` only: under callgrind
    # ``--toggle-collect=starmap_next`` counts these rounds and nothing else (imports, set-up).
    cpu = time.process_time()
    for _ in itertools.starmap(round_, itertools.repeat((), rounds)):
        pass
    cpu = time.process_time() - cpu
    watched = sum(_received(far[w]) for w in watchers)
    for sock in far.values():
        _received(sock)
    return accepted, watched, cpu


def callgrind(args: argparse.Namespace) -> int:
    """Two runs under valgrind (0 and 1 spectator per room), only the measured rounds counted."""
    per: dict[int, float] = {}
    for spectators in (0, 1):
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=starmap_next",
               sys.executable, str(Path(__file__).resolve()),
               "--rooms", str(args.rooms), "--rounds", str(args.rounds), "--spectators", str(spectators), "--mix", args.mix]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        found = re.search(r"Collected : (\d+)", proc.stderr)
        assert found is not None, proc.stderr[-2000:]
        actions, watched = (int(x) for x in proc.stdout.split()[:2])
        per[spectators] = int(found.group(1)) / actions
        extra = f", {watched / actions:.0f} bytes to each spectator per action" if spectators else ""
        print(f"  {spectators} spectator(s) per room: {int(found.group(1)):,} instructions, {actions} actions{extra}",
              file=sys.stderr, flush=True)
    print(f"instructions per action, {args.rooms} rooms x {args.rounds} rounds, {args.mix} moves: without spectators {per[0] / 1000:,.1f}k, "
          f"with 1 per room {per[1] / 1000:,.1f}k: +{(per[1] - per[0]) / 1000:,.1f}k (x{per[1] / per[0]:.3f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--spectators", type=int, default=0)
    parser.add_argument("--mix", choices=["safe", "bots"], default="bots",
                        help="bots: moves as bench_server.py's bots (random legal cells, KOs, rematches); safe: mid-match only")
    parser.add_argument("--callgrind", action="store_true", help="run both valgrind runs and print the difference")
    parser.add_argument("--cpu", action="store_true", help="print CPU time per action (0 and 1 spectator, alternating, 5 times)")
    args = parser.parse_args(argv)
    if args.callgrind:
        return callgrind(args)
    if args.cpu:
        import statistics

        times: dict[int, list[float]] = {0: [], 1: []}
        for _ in range(5):
            for spectators in (0, 1):
                actions, _, cpu = play(args.rooms, args.rounds, spectators, mix=args.mix)
                times[spectators].append(cpu / actions * 1e6)
        m0, m1 = statistics.median(times[0]), statistics.median(times[1])
        print(f"CPU per action, median of 5: {m0:.1f} µs without, {m1:.1f} µs with 1 spectator per room (x{m1 / m0:.3f})")
        return 0
    actions, watched, _ = play(args.rooms, args.rounds, args.spectators, mix=args.mix)
    print(actions, watched)
    return 0


if __name__ == "__main__":
    sys.exit(main())
