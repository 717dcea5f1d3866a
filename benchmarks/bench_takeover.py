"""What the node side of a cluster costs (issue 21, docs/CLUSTER.md): one lease renewal, and the
takeover sweep's pace — a dead node's rooms claimed and restored by a live node without any
client asking, against the same rooms taken one by one on demand (the lazy claim).

Run: ``.venv/bin/python benchmarks/bench_takeover.py [--rooms 1000] [--steps 6] [--repeats 3]``

Node a (a whole server core on a fake clock, tests/support/harness.py) plays ``--rooms`` matches
through ``--steps`` deadlines each (about 10 record actions) and is then dropped without a word (its lease expired in
the database, as after SIGKILL). Node b, already running, then either sweeps (its beat claims a
batch of 64 in one ``FOR UPDATE SKIP LOCKED`` transaction, restores it in slices of 5 ms per
reactor turn, commits, claims the next) or is asked for each room in turn (``load_room`` per
room, the lazy claim). Wall time from b's beat until every room is in b's memory, on a durable
throw-away PostgreSQL over a Unix socket. Median of ``--repeats``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.harness import START, Harness
from support.postgres import running
from twisted.internet.task import Clock

from mineduel.server.cluster import NodeAddress
from mineduel.server.cluster_node import ClusterNode
from mineduel.server.storage_pg import PostgresStorage


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def node(dsn: str, name: str, clock: Clock) -> tuple[Harness, ClusterNode]:
    harness = Harness(storage=PostgresStorage(dsn, node=name), clock=clock, max_rooms=10**6)
    cluster = ClusterNode(harness.core, harness.storage.cluster, clock, advertise=NodeAddress("127.0.0.1", 1, node=name))
    cluster.start()
    return harness, cluster


def fill(ha: Harness, rooms: int, steps: int) -> list[str]:
    """``rooms`` matches on node a, each run ``steps`` deadlines far (opening timeouts and their
    auto-moves, then turn timeouts: about two record actions a step in the opening, one after)."""
    codes = [ha.start((f"s{i}", f"t{i}"))[0].room for i in range(rooms)]
    for _ in range(steps):
        ha.advance(20.0)
        ha.turn()
    return codes


def one(server: Any, rooms: int, steps: int, sweep: bool) -> tuple[float, float, float]:
    """Seconds and server CPU until b holds every room; and µs per renewal (b's, idle)."""
    dsn = server.new_database()
    clock = Clock()
    clock.advance(START)
    ha, cluster_a = node(dsn, "a", clock)
    clock_b = Clock()
    clock_b.advance(START)
    hb, _ = node(dsn, "b", clock_b)
    codes = fill(ha, rooms, steps)
    cluster_a.stop()
    with hb.storage._connection().transaction():
        hb.storage._connection().execute("UPDATE nodes SET lease = now() - interval '1 second' WHERE node = 'a'")
    started, cpu0 = time.perf_counter(), cpu()
    if sweep:
        clock_b.advance(1.0)
        while not set(codes) <= set(hb.rooms.rooms):
            clock_b.advance(0)
    else:
        for code in codes:
            hb.rooms.room(code)
            if hb.core.commits.pending:
                hb.core.commits.flush()
    took, used = time.perf_counter() - started, cpu() - cpu0
    renew0 = time.perf_counter()
    for _ in range(200):
        hb.storage.cluster.renew(hb.rooms.now())
    renew_us = (time.perf_counter() - renew0) / 200 * 1e6
    for harness in (ha, hb):
        harness.storage.close()
    return took, used, renew_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=6, help="deadlines each match is run through (~10 actions)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"takeover of {args.rooms} rooms run {args.steps} deadlines each, median of {args.repeats}; durable PostgreSQL")
    print(f"{'claim':<8} {'seconds':>8} {'rooms/s':>8} {'CPU ms/room':>12} {'renewal us':>11}")
    with running(durable=True) as server:
        for sweep in (True, False):
            runs = [one(server, args.rooms, args.steps, sweep) for _ in range(args.repeats)]
            took = statistics.median(r[0] for r in runs)
            used = statistics.median(r[1] for r in runs)
            renew = statistics.median(r[2] for r in runs)
            print(f"{'sweep' if sweep else 'lazy':<8} {took:>8.2f} {args.rooms / took:>8.0f} "
                  f"{used / args.rooms * 1000:>12.2f} {renew:>11.0f}")


if __name__ == "__main__":
    main()
