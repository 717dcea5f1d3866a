#!/usr/bin/env python3
"""Quick match (issue 20): how long players wait, how close their opponents are, what pairing costs.

    .venv/bin/python benchmarks/bench_quick_match.py [--players 10000] [--rate 50] [--runs 3]
    .venv/bin/python benchmarks/bench_quick_match.py --scenario crowd      # pairing with 10,000 waiting
    .venv/bin/python benchmarks/bench_server.py --mode quick-match [same options]   # the same, by its issue's name
    .venv/bin/python benchmarks/bench_quick_match.py --server [--players 1000] [--rate 50]  # a real server, loopback

Pure queue (the default, simulated time — fast and deterministic): ``--players`` players join the
queue of ``server/matchmaking.py`` at a steady ``--rate`` per second, with the default
``PairingPolicy``. Ratings from a realistic spread: 65 % established (rating normal around 1500,
sd 300; RD uniform 45–110), 15 % provisional (same ratings, RD 110–350) and 20 % newcomers
(1500, RD 500). Every player has its own address. ``pair(now)`` runs on every join and on the
server's 0.5 s timer. ``--not-ready F``: a fraction F of pairs fails the Ready check — one of the
two (chosen by the seeded random) is penalised and gone, the other goes back in the queue 10 s
later with its waiting time kept, as PROTOCOL.md §17 says. Printed: time to a match (from the
first join to the pairing that sticks) median/p95/p99/max, players still waiting at the end, the
rating gap of the pairs (all, and established against established), and the CPU
(``time.process_time``) per arrival (its join + pair) and per timer call.

``--scenario crowd``: the cost with 10,000 waiting. 10,000 connections of ONE address (which may
not meet each other) join at t = 0..2 s and wait; then, at ``--rate``, players of other addresses
arrive during 20 s (each meets one of the crowd). Measured twice: while the crowd's reach is still
widening (t = 10 s) and once it has reached "anyone" (t = 100 s). (The server's per-address
limit makes such a crowd impossible in practice; here it is the worst case for the data
structure: every examination's window is full of waiters it may not meet.)

``--server``: the same arrivals against a real ``mine-duel-server`` (``server_probe.py`` around
it, its lag probe on) on 127.0.0.1, default limits except ``--max-connections``. The players
(``--players``, default 1,000 here: bounded, 20 s at 50/s) are written into the fresh SQLite file
first (``players`` rows with the spread above, keyed by the hash of each bot's random key), so the
server pairs realistic ratings. Each bot connects from its own loopback address (127.10.x.y) at
its arrival time via ``LineClient``: ``hello``, ``identify``, ``quick_match``; on ``matched`` it
sends ``ready`` (with a client seed) and waits for ``match_start``, then idles until the end. A
fraction ``--not-ready`` of the bots (seeded) never confirm: the server dissolves the room after
10 s, they are out, their opponents are back in the queue and matched again. Printed: time from
``quick_match`` sent to the ``matched`` of the match that started (p50/p95/max), the rating gap of
those pairs (from ``matched``), the time from ``ready`` to ``match_start``, server CPU per player
(``/proc/PID/stat``, the whole flow: connect, identify, queue, room, start) and the server's
longest loop stall (the lag probe). ``--server-arg=ARG`` passes one more option to the server
(the smoke test uses ``--server-arg=--quick-any-after=1``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mineduel.server.matchmaking import PairingPolicy, QuickMatchQueue, Waiting

TICK = 0.5
"""The server's pairing timer (PROTOCOL.md §17: pair on every join and every 0.5 s)."""
CONFIRM = 10.0
"""Seconds a matched pair has to confirm Ready; a failed pair's confirmer goes back after it."""


def quick_match_args(argv: list[str]) -> list[str] | None:
    """``bench_server.py``'s hook: the arguments for this benchmark if ``--mode quick-match`` is among them."""
    for i, arg in enumerate(argv):
        if arg == "--mode=quick-match":
            return argv[:i] + argv[i + 1:]
        if arg == "--mode" and argv[i + 1:i + 2] == ["quick-match"]:
            return argv[:i] + argv[i + 2:]
    return None


@dataclass(frozen=True)
class Player:
    name: str
    rating: float
    deviation: float
    kind: str  # "established" | "provisional" | "newcomer"


def population(n: int, seed: int) -> list[Player]:
    """The spread described in the module docstring, shuffled by the seed."""
    rng = random.Random(seed)
    players = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.20:
            players.append(Player(f"p{i}", 1500.0, 500.0, "newcomer"))
        elif roll < 0.35:
            players.append(Player(f"p{i}", rng.gauss(1500.0, 300.0), rng.uniform(110.0, 350.0), "provisional"))
        else:
            players.append(Player(f"p{i}", rng.gauss(1500.0, 300.0), rng.uniform(45.0, 110.0), "established"))
    return players


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Run:
    waits: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    gaps_established: list[float] = field(default_factory=list)
    arrival_cpu: list[float] = field(default_factory=list)
    tick_cpu: list[float] = field(default_factory=list)
    queue_sizes: list[int] = field(default_factory=list)
    not_ready: int = 0
    left_waiting: int = 0


def simulate(players: list[Player], rate: float, seed: int, not_ready: float, policy: PairingPolicy) -> Run:
    """Steady arrivals at ``rate``/s into the pure queue, simulated time; see the module docstring."""
    rng = random.Random(seed + 1)
    q = QuickMatchQueue(policy)
    run = Run()
    by_name = {p.name: p for p in players}
    first_join: dict[str, float] = {}
    returns: list[tuple[float, Waiting]] = []  # confirmers going back after a failed Ready

    def settle(pairs: list[tuple[Waiting, Waiting]], now: float) -> None:
        for a, b in pairs:
            if not_ready and rng.random() < not_ready:
                run.not_ready += 1
                gone, back = (a, b) if rng.random() < 0.5 else (b, a)
                q.penalise(gone.player, now + CONFIRM)
                returns.append((now + CONFIRM, back))
                first_join.pop(gone.player, None)
                continue
            for w in (a, b):
                run.waits.append(now - first_join.pop(w.player))
            gap = abs(a.rating - b.rating)
            run.gaps.append(gap)
            if by_name[a.player].kind == by_name[b.player].kind == "established":
                run.gaps_established.append(gap)

    end = len(players) / rate + policy.any_after + 5.0
    arrival = 0
    next_tick = 0.0
    while True:
        t_arrival = arrival / rate if arrival < len(players) else float("inf")
        t_return = returns[0][0] if returns else float("inf")
        now = min(t_arrival, t_return, next_tick)
        if now > end:
            break
        if now == t_return:
            _, back = returns.pop(0)
            c0 = time.process_time()
            q.join(back)
            settle(q.pair(now), now)
            run.arrival_cpu.append(time.process_time() - c0)
        elif now == t_arrival:
            p = players[arrival]
            arrival += 1
            first_join[p.name] = now
            c0 = time.process_time()
            q.join(Waiting(p.name, p.rating, p.deviation, f"10.{arrival >> 16 & 255}.{arrival >> 8 & 255}.{arrival & 255}", now))
            settle(q.pair(now), now)
            run.arrival_cpu.append(time.process_time() - c0)
        else:
            c0 = time.process_time()
            settle(q.pair(now), now)
            run.tick_cpu.append(time.process_time() - c0)
            run.queue_sizes.append(len(q))
            next_tick += TICK
    run.left_waiting = len(q)
    return run


def crowd(rate: float, policy: PairingPolicy, crowd_size: int = 10_000, seconds: float = 20.0, seed: int = 1) -> dict[str, Any]:
    """Per-arrival cost with ``crowd_size`` waiting (one address), at t = 10 s and t = 100 s."""
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for start in (10.0, 100.0):
        q = QuickMatchQueue(policy)
        for i in range(crowd_size):
            q.join(Waiting(f"c{i}", rng.gauss(1500.0, 300.0), rng.uniform(45.0, 500.0), "crowd", i * 2.0 / crowd_size))
        c0 = time.process_time()
        q.pair(2.0)
        fill = time.process_time() - c0
        t = 2.0
        before = 0.0
        while t + TICK <= start:  # the timer runs meanwhile (at 60 s the whole crowd reaches "anyone")
            t += TICK
            c0 = time.process_time()
            q.pair(t)
            before = max(before, time.process_time() - c0)
        costs: list[float] = []
        ticks: list[float] = []
        paired = 0
        n = int(seconds * rate)
        for k in range(n):
            now = start + k / rate
            while t + TICK <= now:
                t += TICK
                c0 = time.process_time()
                paired += len(q.pair(t))
                ticks.append(time.process_time() - c0)
            c0 = time.process_time()
            q.join(Waiting(f"n{k}", rng.gauss(1500.0, 300.0), rng.uniform(45.0, 500.0), f"other{k}", now))
            paired += len(q.pair(now))
            costs.append(time.process_time() - c0)
        out[f"t={start:.0f}s"] = {"waiting": len(q), "arrivals": n, "pairs": paired, "fill_pair_call_ms": fill * 1e3, "tick_ms_max_before": before * 1e3,
                                  "arrival_ms_p50": statistics.median(costs) * 1e3, "arrival_ms_p99": quantile(costs, 0.99) * 1e3,
                                  "arrival_ms_max": max(costs) * 1e3,
                                  "tick_ms_p50": statistics.median(ticks) * 1e3 if ticks else 0.0,
                                  "tick_ms_max": max(ticks) * 1e3 if ticks else 0.0}
    return out


def summarise(run: Run) -> dict[str, Any]:
    return {
        "matched": len(run.waits), "not_ready": run.not_ready, "left_waiting": run.left_waiting,
        "wait_s_p50": statistics.median(run.waits), "wait_s_p95": quantile(run.waits, 0.95),
        "wait_s_p99": quantile(run.waits, 0.99), "wait_s_max": max(run.waits),
        "gap_p50": statistics.median(run.gaps), "gap_p95": quantile(run.gaps, 0.95), "gap_max": max(run.gaps),
        "gap_established_p50": statistics.median(run.gaps_established) if run.gaps_established else float("nan"),
        "gap_established_p95": quantile(run.gaps_established, 0.95),
        "arrival_ms_p50": statistics.median(run.arrival_cpu) * 1e3, "arrival_ms_p99": quantile(run.arrival_cpu, 0.99) * 1e3,
        "arrival_ms_max": max(run.arrival_cpu) * 1e3,
        "tick_ms_p50": statistics.median(run.tick_cpu) * 1e3, "tick_ms_max": max(run.tick_cpu) * 1e3,
        "queue_p50": statistics.median(run.queue_sizes), "queue_max": max(run.queue_sizes),
    }


def print_steady(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"Quick match, pure queue: {args.players:,} players at {args.rate:g}/s, not ready {args.not_ready:g}, "
          f"median of {len(results)} run(s) (seeds {args.seed}..{args.seed + len(results) - 1})")
    print(f"  matched {med['matched']:,.0f}, not-ready pairs {med['not_ready']:.0f}, still waiting at the end {med['left_waiting']:.0f}")
    print(f"  time to a match   p50 {med['wait_s_p50']:.2f} s   p95 {med['wait_s_p95']:.2f} s   "
          f"p99 {med['wait_s_p99']:.2f} s   max {med['wait_s_max']:.1f} s")
    print(f"  rating gap        p50 {med['gap_p50']:.0f}   p95 {med['gap_p95']:.0f}   max {med['gap_max']:.0f}   "
          f"(established vs established: p50 {med['gap_established_p50']:.0f}, p95 {med['gap_established_p95']:.0f})")
    print(f"  CPU per arrival   p50 {med['arrival_ms_p50'] * 1e3:.0f} µs   p99 {med['arrival_ms_p99'] * 1e3:.0f} µs   "
          f"max {med['arrival_ms_max']:.2f} ms  (join + pair)")
    print(f"  CPU per 0.5 s tick p50 {med['tick_ms_p50'] * 1e3:.0f} µs   max {med['tick_ms_max']:.2f} ms;  "
          f"queue length p50 {med['queue_p50']:.0f}, max {med['queue_max']:.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=["steady", "crowd"], default="steady")
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=50.0, help="arrivals per second")
    parser.add_argument("--not-ready", type=float, default=0.02, help="fraction of pairs failing the Ready check")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server", action="store_true", help="against a real server on loopback (bounded counts)")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="--server: one more mine-duel-server argument, e.g. --server-arg=--quick-any-after=1")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    args = parser.parse_args(argv)
    policy = PairingPolicy()
    if args.server:
        return against_server(args)
    if args.scenario == "crowd":
        result = crowd(args.rate, policy)
        print(f"Quick match, pure queue with 10,000 waiting (one address) and {args.rate:g} arrivals/s of others for 20 s")
        for when, r in result.items():
            print(f"  {when}: waiting {r['waiting']:,}, pairs {r['pairs']}; CPU per arrival p50 {r['arrival_ms_p50'] * 1e3:.0f} µs, "
                  f"p99 {r['arrival_ms_p99'] * 1e3:.0f} µs, max {r['arrival_ms_max']:.2f} ms; per tick p50 "
                  f"{r['tick_ms_p50'] * 1e3:.0f} µs, max {r['tick_ms_max']:.2f} ms")
            print(f"      the crowd's own first pair() {r['fill_pair_call_ms']:.0f} ms (10,000 examined), "
                  f"slowest timer call before the arrivals {r['tick_ms_max_before']:.0f} ms")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
        return 0
    results = []
    for i in range(args.runs):
        players = population(args.players, args.seed + i)
        results.append(summarise(simulate(players, args.rate, args.seed + i, args.not_ready, policy)))
    print_steady(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


# ----- against a real server on loopback ---------------------------------------------------------------

SERVER = "127.0.0.1"


def bot_address(i: int) -> str:
    """Each bot its own loopback address, so the server's per-address rules see strangers."""
    return f"127.10.{i // 250}.{1 + i % 250}"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def seed_players(db: Path, players: list[Player], keys: list[str]) -> None:
    """The bots' players, with their ratings, in the server's fresh database."""
    from mineduel.server.players import key_hash, public_id
    from mineduel.server.storage import PlayerRow, SQLiteStorage, Write

    rows = []
    for p, key in zip(players, keys, strict=True):
        hashed = key_hash(key)
        rows.append(PlayerRow(hashed, public_id(hashed), f"Bot{p.name[1:]}", p.rating, p.deviation, 0.06, 10, 5, 5, 0))
    storage = SQLiteStorage(db)
    storage.commit(Write(players=rows))
    storage.close()


def against_server(args: argparse.Namespace) -> int:
    players = population(args.players, args.seed)
    rng = random.Random(args.seed)
    keys = [base64.urlsafe_b64encode(rng.randbytes(32)).rstrip(b"=").decode("ascii") for _ in players]
    with tempfile.TemporaryDirectory(prefix="qm-bench-") as tmp:
        work = Path(tmp)
        db = work / "qm.sqlite3"
        seed_players(db, players, keys)
        with socket.socket() as s:
            s.bind((SERVER, 0))
            port = s.getsockname()[1]
        probe = work / "probe.jsonl"
        cmd = [sys.executable, str(Path(__file__).resolve().parent / "server_probe.py"), "--probe", str(probe), "--",
               "--host", SERVER, "--port", str(port), "--no-discovery", "--db", str(db), "--log-level", "warn",
               "--max-connections", str(args.players + 100), *args.server_arg]
        with open(work / "server.log", "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            try:
                for _ in range(200):
                    try:
                        socket.create_connection((SERVER, port), timeout=1).close()
                        break
                    except OSError:
                        time.sleep(0.05)
                result = load(port, players, keys, args.rate, proc.pid, args.not_ready, args.seed)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
        gaps = [json.loads(line).get("max_gap", 0.0) for line in probe.read_text().splitlines() if line.startswith("{")]
        result["loop_stall_max_ms"] = max(gaps, default=0.0) * 1e3
        errors = [ln for ln in (work / "server.log").read_text(errors="replace").splitlines() if "Traceback" in ln or "CRITICAL" in ln]
        result["server_error_lines"] = len(errors)
    w, g, r = result["waits"], result["gaps"], result["ready_to_start"]
    print(f"Quick match against a real server on loopback: {args.players:,} players at {args.rate:g}/s (seed {args.seed})")
    print(f"  matched and started {len(w):,} of {args.players:,}; never confirming (--not-ready {args.not_ready:g}) "
          f"{result['no_shows_total']} ({result['no_shows']} put out after a match, the rest never matched), their "
          f"opponents back in the queue {result['requeued']}; bot failures {result['failures']}")
    for sample in result["failure_sample"]:
        print(f"  failed: {sample}")
    if w:
        print(f"  quick_match -> matched   p50 {statistics.median(w):.2f} s   p95 {quantile(w, 0.95):.2f} s   max {max(w):.1f} s")
        print(f"  rating gap               p50 {statistics.median(g):.0f}   p95 {quantile(g, 0.95):.0f}   max {max(g):.0f}")
    if r:
        print(f"  ready -> match_start     p50 {statistics.median(r) * 1e3:.1f} ms   p95 {quantile(r, 0.95) * 1e3:.1f} ms")
    print(f"  server CPU per player (connect, identify, queue, room, start): {result['server_cpu_ms_per_player']:.2f} ms; "
          f"longest loop stall {result['loop_stall_max_ms']:.1f} ms; server error lines {result['server_error_lines']}")
    if args.json:
        Path(args.json).write_text(json.dumps({k: v for k, v in result.items() if k not in ("waits", "gaps", "ready_to_start")}
                                              | {"wait_s_p50": statistics.median(w) if w else None,
                                                 "wait_s_p95": quantile(w, 0.95) if w else None}, indent=1))
    return 1 if result["failures"] or result["server_error_lines"] else 0


def load(port: int, players: list[Player], keys: list[str], rate: float, pid: int, not_ready: float, seed: int) -> dict[str, Any]:
    """The bots, on a Twisted reactor in this process; returns what they saw. A fraction
    ``not_ready`` of them (seeded) never confirm a match."""
    from twisted.internet import defer, reactor, task
    from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

    from mineduel.server.client import LineClient
    from mineduel.shared.wire import messages as m

    out: dict[str, Any] = {"waits": [], "gaps": [], "ready_to_start": [], "failures": 0, "failure_sample": [],
                           "no_shows": 0, "no_shows_unmatched": 0, "requeued": 0}
    pick = random.Random(seed + 2)
    no_shows = {i for i in range(len(players)) if pick.random() < not_ready}
    if (len(players) - len(no_shows)) % 2 and no_shows:  # an even number who confirm, so that all of them can meet
        no_shows.remove(max(no_shows))
    out["no_shows_total"] = len(no_shows)
    clients: list[LineClient] = []
    cpu0 = cpu_seconds(pid)

    async def bot(i: int, start: float) -> None:
        p = players[i]
        await task.deferLater(reactor, max(0.0, start + i / rate - time.monotonic()), lambda: None)
        endpoint = TCP4ClientEndpoint(reactor, SERVER, port, timeout=10, bindAddress=(bot_address(i), 0))
        client = LineClient(f"qm-bench/{i}", keep=True)
        await connectProtocol(endpoint, client)
        clients.append(client)
        await client.hello()
        await client.request(m.Identify(keys[i], f"Bot{i}"))
        sent = time.monotonic()
        await client.request(m.QuickMatch())
        while True:
            matched = await client.wait_for(m.Matched)
            matched_at = time.monotonic()
            if i in no_shows:  # never confirms: the server dissolves the room and puts it out
                await client.wait_for(m.QueueStatus, lambda q: q.status == "left")
                out["no_shows"] += 1
                return
            ready = time.monotonic()
            await client.request(m.Ready(client_seed=f"{random.getrandbits(64):x}"))
            outcome = await client.wait_for(None, lambda o: o.get("type") in ("match_start", "room_closed"))
            if outcome["type"] == "match_start":
                break
            out["requeued"] += 1  # its opponent did not confirm: back in the queue, its time kept
            await client.wait_for(m.QueueStatus, lambda q: q.status == "waiting")
        out["waits"].append(matched_at - sent)
        if matched.seat == 0:  # each pair once
            out["gaps"].append(abs(matched.opponent.rating - p.rating))
        out["ready_to_start"].append(time.monotonic() - ready)

    async def guarded(i: int, start: float) -> None:
        try:
            await bot(i, start)
        except defer.CancelledError:
            if i in no_shows:  # still waiting when everyone who confirms had started: nobody left to meet
                out["no_shows_unmatched"] += 1
                return
            out["failures"] += 1
            out["failure_sample"].append(f"bot {i}: still waiting at the time limit")
        except Exception as exc:  # noqa: BLE001 - a bot's failure is counted and sampled, the run goes on
            out["failures"] += 1
            if len(out["failure_sample"]) < 5:
                out["failure_sample"].append(f"bot {i}: {exc!r}")

    async def everyone() -> None:
        start = time.monotonic() + 0.2
        bots = [defer.ensureDeferred(guarded(i, start)) for i in range(len(players))]
        limit = len(players) / rate + 90.0
        timer = reactor.callLater(limit, lambda: [b.cancel() for b in bots])  # type: ignore[attr-defined]
        await defer.DeferredList([b for i, b in enumerate(bots) if i not in no_shows])  # everyone who confirms
        for i, b in enumerate(bots):
            if i in no_shows:
                b.cancel()  # (a no-show still waiting has nobody left to meet)
        await defer.DeferredList(bots)
        if timer.active():
            timer.cancel()
        out["server_cpu_ms_per_player"] = (cpu_seconds(pid) - cpu0) * 1e3 / len(players)
        for c in clients:
            c.abort()

    def main(_reactor: Any) -> defer.Deferred[None]:
        return defer.ensureDeferred(everyone())

    try:
        task.react(main)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
    return out


if __name__ == "__main__":
    sys.exit(main())
