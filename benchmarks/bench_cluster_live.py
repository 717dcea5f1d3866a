"""The cost of ``live_rooms`` across a cluster (issue 21, server/cluster_live.py).

Run: ``.venv/bin/python benchmarks/bench_cluster_live.py [--nodes 3] [--shares 300] [--requests 20000] [--repeats 5]``

Three figures, load-independent (process CPU time, not wall time; the PostgreSQL server's own
CPU is not in them — it runs in other processes), each the median of ``--repeats`` runs:

* **CPU µs per share** of one node: the statement that writes its 20 entries (only when they
  changed — here every time: the turn moves) and reads the other nodes', plus checking them;
  once every 2 s per node.
* **CPU µs per ``live_rooms`` request** on a node of a cluster (its 20 rooms in memory merged with
  the others' 20 each) against a single server's in-memory answer (the same 20 own rooms),
  on a whole server core (tests/support/harness.py).

The database is a throw-away PostgreSQL (tests/support/postgres.py), durable settings on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.harness import START, Harness
from support.postgres import running
from twisted.internet.task import Clock

from mineduel.server.cluster_live import SHARE_EVERY
from mineduel.shared.wire.names import LIVE_ROOMS_MAX


def listed_matches(h: Harness, count: int, tag: str) -> None:
    for i in range(count):
        a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
        code = a.send(type="create_room", name=f"A{tag}{i}", client_seed=f"{tag}{i}", listed=True)[0]["room"]
        b.send(type="join", room=code, name=f"B{tag}{i}", client_seed=f"{tag}{i}b")
        a.send(type="ready")
        b.send(type="ready")


def cpu_per(fn: Any, count: int) -> float:
    start = time.process_time()
    for _ in range(count):
        fn()
    return (time.process_time() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--shares", type=int, default=300)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from mineduel.server.storage_pg import PostgresStorage

    with running(durable=True) as pg:
        dsn = pg.new_database()
        clock = Clock()
        clock.advance(START)
        nodes = []
        for i in range(args.nodes):
            h = Harness(seed=i + 1, storage=PostgresStorage(dsn, node=f"n{i}"), clock=clock)
            h.core.start()
            listed_matches(h, LIVE_ROOMS_MAX, f"n{i}")
            nodes.append(h)
        for _ in range(3):
            clock.advance(SHARE_EVERY)
        single = Harness(seed=99)
        listed_matches(single, LIVE_ROOMS_MAX, "s")
        node = nodes[0]
        live = node.core.live
        assert live is not None and len(live.elsewhere) == LIVE_ROOMS_MAX * (args.nodes - 1)
        real = live.share
        changed = [0]

        def share_changing(entries: list[dict[str, Any]]) -> Sequence[object]:
            changed[0] += 1  # the turn moves between two shares (matches running): the write happens
            return real([{**entries[0], "turn": changed[0]}, *entries[1:]])

        def share(changing: bool) -> Any:
            def once() -> None:
                live.share = share_changing if changing else real
                live.refresh()
            return once

        def ask(h: Harness) -> Any:
            viewer = h.connect("10.0.9.9")
            return lambda: h.core.line_received(viewer.pid, b'{"type":"live_rooms","id":1}')

        shares, same, clustered, alone = [], [], [], []
        for _ in range(args.repeats):
            shares.append(cpu_per(share(True), args.shares))
            same.append(cpu_per(share(False), args.shares))
            clustered.append(cpu_per(ask(node), args.requests))
            alone.append(cpu_per(ask(single), args.requests))
        for h in nodes:
            h.core.stop()
            h.storage.close()
    print(f"nodes={args.nodes} entries per node={LIVE_ROOMS_MAX} repeats={args.repeats}")
    print(f"share, list changed (write own 20, read {args.nodes - 1}x20): {statistics.median(shares):8.1f} CPU µs")
    print(f"share, list unchanged (no write, read):        {statistics.median(same):8.1f} CPU µs  (once every {SHARE_EVERY} s per node)")
    print(f"live_rooms request, cluster node:              {statistics.median(clustered):8.1f} CPU µs")
    print(f"live_rooms request, single server:             {statistics.median(alone):8.1f} CPU µs")


if __name__ == "__main__":
    main()
