"""What the leaderboard's ``me`` costs for a low place (red-team review of issue 20).

``rank_of`` counts the ranked players ahead of the asker; for the last of many that reads the
whole rating index. Measured on a fresh SQLite file of ``--players`` rows (half ranked, ratings
normal around 1500): ``rank_of`` for the lowest and the highest ranked player with the covering
index ``players_rank (rating DESC, player, deviation)``, and with only a rating index (what the
schema had before: every row ahead read from the table), then a flood of ``get_leaderboard``
through ``Players.leaderboard`` (one place count per player per second)::

    .venv/bin/python benchmarks/bench_rank.py --players 100000
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path

from mineduel.server.config import Config
from mineduel.server.players import Player, Players
from mineduel.server.storage import PlayerRow, SQLiteStorage, Write


def timed(fn: object, n: int) -> float:
    """Median ms of ``n`` calls."""
    assert callable(fn)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description="the leaderboard's place count")
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    storage = SQLiteStorage(Path(tempfile.mkdtemp()) / "rank.db", synchronous="NORMAL")
    rng = random.Random(20)
    rows = []
    for i in range(args.players):
        hashed = hashlib.sha256(str(i).encode()).hexdigest()
        rows.append(PlayerRow(hashed, hashed[:16], f"P{i}", rng.gauss(1500, 300), rng.choice([60.0, 70.0, 200.0, 500.0]),
                              0.06, 10, 5, 5, 0, 0.0, 0.0))
    storage.commit(Write(players=rows))
    ranked = [r for r in rows if r.deviation <= 75]
    low, high = min(ranked, key=lambda r: r.rating), max(ranked, key=lambda r: r.rating)
    print(f"{args.players} players, {len(ranked)} ranked; median of {args.calls} calls")
    for label in ("covering index players_rank", "rating index only (before)"):
        for who, name in ((low, "last"), (high, "first")):
            ms = timed(lambda who=who: storage.rank_of(who.player, 75.0), args.calls)
            print(f"  rank_of the {name:>5} ranked player, {label}: {ms:8.2f} ms")
        if label.startswith("covering"):
            db = storage._db
            db.execute("DROP INDEX players_rank")
            db.execute("CREATE INDEX players_by_rating ON players (rating DESC, player)")
    players = Players(storage, Config())
    me = Player.from_row(low)
    flood = 200
    t = time.perf_counter()
    for i in range(flood):
        players.leaderboard(me, i, now=1000.0 + i * 0.05)  # 20 requests a second for 10 s
    spent = (time.perf_counter() - t) * 1000
    print(f"  {flood} get_leaderboard of the last ranked player at 20/s (10 s), rating index only: "
          f"{spent:.0f} ms in all ({spent / flood:.2f} ms each; the place counted once a second)")


if __name__ == "__main__":
    main()
