"""Commit throughput of the storages: SQLite against PostgreSQL on this machine (issue 21).

Run: ``.venv/bin/python benchmarks/bench_storage.py [--seconds 3] [--repeats 5] [--dsn postgresql://…]``

Each storage gets the writes the server's group commit makes (server/commits.py): one
transaction per reactor turn holding that turn's record actions (one per room that acted), the
server clock in ``meta``, and now and then a room blob (a match starting or ending). Measured
for batches of 1 action (a quiet server: every action its own turn), 10 and 50 (a busy one):
commits per second, actions per second, and the server process's CPU µs per action (the
database server's own CPU is not in it: for PostgreSQL it runs in other processes).

Both are durable as the server runs them: SQLite in WAL with ``synchronous=FULL`` on a file in
a temporary folder; PostgreSQL with ``fsync``, ``synchronous_commit`` and ``full_page_writes``
on, reached through a Unix socket — a throw-away server (tests/support/postgres.py) unless
``--dsn`` names one (whose database is then written to: give it an empty one). Each figure is the
median of ``--repeats`` runs of ``--seconds``, SQLite and PostgreSQL runs alternating.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mineduel.server.storage import SQLiteStorage, Write

ROOMS = 200
RUNS = itertools.count()


def room_blob(code: str, match_id: str) -> dict[str, Any]:
    """A room shaped like the server's (seats, seeds and salts; about 1 KB as JSON)."""
    rng = random.Random(code)
    seat = {"sid": 0, "name": "Player", "token_hash": rng.randbytes(32).hex(), "seed": rng.randbytes(16).hex(),
            "ready": True, "away_since": None, "grace": None, "expired": None, "rematch": False}
    return {
        "code": code, "created": 1_700_000_000.0, "next_seed": 3, "next_sid": 2, "number": 1, "owner": "tag",
        "seats": [seat, {**seat, "sid": 1}],
        "match": {"id": match_id, "server_seed": rng.randbytes(32).hex(), "salts": [rng.randbytes(16).hex()] * 4,
                  "deadline": 1_700_000_020.0, "started": 1_700_000_000.0},
    }


def action(seq: int) -> dict[str, Any]:
    """A stored record action (its salt and the match clock), about 120 bytes as JSON."""
    return {"type": "explore", "cell": [seq % 8, seq // 8 % 8], "seat": seq % 2, "at": 1_700_000_000.0 + seq,
            "salt": "5f" * 16, "t": 12.5}


def run(storage: Any, batch: int, seconds: float) -> tuple[float, float, float]:
    """Commit batches of ``batch`` actions for ``seconds``: (commits/s, actions/s, CPU µs per action)."""
    prefix = next(RUNS)  # rooms and matches of their own per run (a --dsn database keeps the last run's)
    codes = [f"R{prefix:03d}{i:04d}" for i in range(ROOMS)]
    matches = [f"{prefix:03d}{random.Random(i).getrandbits(52):013x}" for i in range(ROOMS)]
    seq = dict.fromkeys(matches, 0)
    storage.commit(Write(rooms={c: room_blob(c, m) for c, m in zip(codes, matches, strict=True)}))
    commits = actions = 0
    rng = random.Random(batch)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < seconds:
        picks = rng.sample(range(ROOMS), batch)
        rows = []
        for i in picks:
            m = matches[i]
            rows.append((m, seq[m], action(seq[m])))
            seq[m] += 1
        rooms = {}
        if commits % 20 == 0:  # a match starting or ending somewhere: its room blob goes with the batch
            i = picks[0]
            rooms[codes[i]] = room_blob(codes[i], matches[i])
        storage.commit(Write(rooms=rooms, actions=rows, meta={"clock": repr(time.time())}))
        commits += 1
        actions += batch
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return commits / wall, actions / wall, cpu / actions * 1e6


@contextmanager
def sqlite_storage() -> Iterator[Callable[[], Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as folder:
        made = iter(range(10**6))
        yield lambda: SQLiteStorage(Path(folder) / f"s{next(made)}.db")


@contextmanager
def postgres_storage(dsn: str | None) -> Iterator[Callable[[], Any]]:
    from mineduel.server.storage_pg import PostgresStorage

    if dsn is not None:
        yield lambda: PostgresStorage(dsn, node="bench")
        return
    from support.postgres import running

    with running(durable=True) as server:
        yield lambda: PostgresStorage(server.new_database(), node="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", default="1,10,50", help="actions per commit, comma-separated")
    parser.add_argument("--dsn", default=None, help="a PostgreSQL database to use instead of a throw-away server")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    print(f"commit throughput, median of {args.repeats} x {args.seconds:.0f} s; {ROOMS} rooms; durable settings")
    print(f"{'storage':<12} {'batch':>5} {'commits/s':>10} {'actions/s':>10} {'CPU us/action':>14}")
    # The two alternate run by run, so a disk that is busier at one moment (a shared machine)
    # weighs on both alike.
    with sqlite_storage() as open_sqlite, postgres_storage(args.dsn) as open_postgres:
        for batch in batches:
            runs: dict[str, list[tuple[float, float, float]]] = {"sqlite": [], "postgresql": []}
            for _ in range(args.repeats):
                for name, open_storage in (("sqlite", open_sqlite), ("postgresql", open_postgres)):
                    storage = open_storage()
                    try:
                        runs[name].append(run(storage, batch, args.seconds))
                    finally:
                        storage.close()
            for name, got in runs.items():
                med = [statistics.median(r[k] for r in got) for k in range(3)]
                print(f"{name:<12} {batch:>5} {med[0]:>10.0f} {med[1]:>10.0f} {med[2]:>14.1f}", flush=True)


if __name__ == "__main__":
    main()
