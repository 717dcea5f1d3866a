#!/usr/bin/env python3
"""Players and ratings on the server (issue 20): what identify, a rated end and the leaderboard cost.

    .venv/bin/python benchmarks/bench_players.py [--players 100000] [--rounds 2000] [--runs 3] [--db PATH]

Three measurements, each the median of ``--runs`` runs, in CPU time (``time.process_time``: the
fsync waits, noisy on a shared disk, are left out), on SQLite databases (``--db``, default a
temporary folder; ``synchronous=FULL`` as the server runs it):

* **identify**: ``--rounds`` connections each send ``identify`` through ``ServerCore`` (a fresh key:
  a new player row; then the same keys again: a known player, no write), one reactor turn (and so
  one commit) per request — the per-request cost including its fsync.
* **rated end vs unrated end**: ``--rounds`` matches each started and resigned in a rated room and
  in an unrated one; the difference is what the Glicko-2 update of both players and their two
  rows and two rated results add to the end's commit.
* **reads with ``--players`` players stored** (60 % ranked, RD ≤ 75): ``get_leaderboard`` (top 100
  and the asker's rank), ``get_profile`` (20 recent results), as the server answers them.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.harness import Harness

from mineduel.server.players import public_id
from mineduel.server.storage import PlayerRow, RatedResult, SQLiteStorage, Write

CLOCK = time.process_time
"""CPU time of this process: the fsyncs' waits (noisy on a shared disk) are left out; the
statements' and the encoding's CPU is what the figures compare."""


def key(n: int) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(f"bench{n}".encode()).digest()).rstrip(b"=").decode()


def limits() -> dict[str, object]:
    return {"identifies_per_address": 10**9, "new_players_per_address": 10**9, "rated_pair_limit": 10**9,
            "max_connections": 10**6}


def fresh(db: Path) -> Path:
    """A database path with nothing at it yet (a rerun into the same ``--db`` starts again)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def bench_identify(db: Path, rounds: int) -> tuple[float, float]:
    h = Harness(storage=SQLiteStorage(db), **limits())
    clients = [h.connect(f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}") for i in range(rounds)]
    t0 = CLOCK()
    for i, c in enumerate(clients):
        c.send(type="identify", key=key(i), name=f"P{i}")
    new = (CLOCK() - t0) / rounds
    again = [h.connect("10.200.0.1") for _ in range(rounds)]
    t0 = CLOCK()
    for i, c in enumerate(again):
        c.send(type="identify", key=key(i), name=f"P{i}")
    known = (CLOCK() - t0) / rounds
    h.storage.close()
    return new, known


def bench_end(db: Path, rounds: int, *, rated: bool) -> float:
    h = Harness(storage=SQLiteStorage(db), **limits())
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    a.send(type="identify", key=key(1), name="Ann")
    b.send(type="identify", key=key(2), name="Bob")
    code = a.send(type="create_room", rated=rated)[0]["room"]
    b.send(type="join", room=code)
    a.send(type="ready")
    b.send(type="ready")
    spent = 0.0
    for _ in range(rounds):
        mover = a if a.last("match_start")["seat"] == 0 else b
        t0 = CLOCK()
        mover.send(type="resign")
        spent += CLOCK() - t0
        a.send(type="rematch")
        b.send(type="rematch")
    h.storage.close()
    return spent / rounds


def seed_players(db: Path, players: int) -> str:
    """``players`` rows (60 % ranked) and 20 rated results for the first one; its public id."""
    rng = random.Random(20)
    storage = SQLiteStorage(db)
    rows = []
    for n in range(players):
        hashed = hashlib.sha256(key(n).encode()).hexdigest()
        deviation = rng.uniform(45, 75) if rng.random() < 0.6 else rng.uniform(76, 500)
        rows.append(PlayerRow(hashed, public_id(hashed), f"P{n}", rng.gauss(1500, 300), deviation, 0.06,
                              40, 20, 20, 0, 1.0, 1.0))
    me = rows[0].player
    results = [RatedResult(f"{i:016x}", me, rows[i + 1].player, "win", 1500.0, 1510.0, 100.0 + i) for i in range(40)]
    for start in range(0, players, 10000):
        storage.commit(Write(players=rows[start : start + 10000]))
    storage.commit(Write(rated_results=results))
    storage.close()
    return me


def bench_reads(db: Path, rounds: int) -> tuple[float, float]:
    h = Harness(storage=SQLiteStorage(db), **limits())
    c = h.connect()
    c.send(type="identify", key=key(0), name="P0")
    board = timed(lambda: c.send(type="get_leaderboard"), rounds)
    profile = timed(lambda: c.send(type="get_profile"), rounds)
    h.storage.close()
    return board, profile


def timed(fn: Callable[[], object], rounds: int) -> float:
    t0 = CLOCK()
    for _ in range(rounds):
        fn()
    return (CLOCK() - t0) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default=None, help="a folder for the databases (default: a temporary one)")
    args = parser.parse_args()
    folder = Path(args.db or tempfile.mkdtemp(prefix="bench-players-"))
    folder.mkdir(parents=True, exist_ok=True)
    figures: dict[str, list[float]] = {"identify_new": [], "identify_known": [], "end_unrated": [], "end_rated": [],
                                       "leaderboard": [], "profile": []}
    seeded = fresh(folder / "seeded.db")
    seed_players(seeded, args.players)
    for run in range(args.runs):
        new, known = bench_identify(fresh(folder / f"identify{run}.db"), args.rounds)
        figures["identify_new"].append(new)
        figures["identify_known"].append(known)
        figures["end_unrated"].append(bench_end(fresh(folder / f"unrated{run}.db"), args.rounds // 4, rated=False))
        figures["end_rated"].append(bench_end(fresh(folder / f"rated{run}.db"), args.rounds // 4, rated=True))
        board, profile = bench_reads(seeded, args.rounds // 4)
        figures["leaderboard"].append(board)
        figures["profile"].append(profile)
    print(f"bench_players: {args.rounds} rounds, {args.players} players stored, median of {args.runs} runs (CPU ms per request)")
    for name, values in figures.items():
        print(f"  {name:15s} {statistics.median(values) * 1000:8.3f} ms   (runs: {', '.join(f'{v * 1000:.3f}' for v in values)})")
    extra = statistics.median(figures["end_rated"]) - statistics.median(figures["end_unrated"])
    print(f"  rated end adds  {extra * 1000:8.3f} ms over an unrated one")


if __name__ == "__main__":
    main()
