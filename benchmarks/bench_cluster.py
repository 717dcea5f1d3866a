#!/usr/bin/env python3
"""Cluster benchmark (issue 21): real ``mine-duel-server`` nodes on loopback over one PostgreSQL.

    .venv/bin/python benchmarks/bench_cluster.py --mode saturation [--matches 200] [--seconds 10] [--runs 3]
    .venv/bin/python benchmarks/bench_cluster.py --mode takeover [--kills 20] [--matches 30]
    .venv/bin/python benchmarks/bench_cluster.py --mode human --matches 5000 [--seconds 60] [--think 2 6] [--sqlite]
    .venv/bin/python benchmarks/bench_cluster.py --mode rolling [--matches 30] [--rounds 1]
    .venv/bin/python benchmarks/bench_cluster.py --quick        # every mode, tiny

The nodes (``tests/support/cluster.py``) are the unchanged command-line server with
``--db postgresql://…`` on a throw-away PostgreSQL 15 (``tests/support/postgres.py``, durable:
fsync and synchronous commit on, a Unix socket), ``--node``, ``--advertise``; the per-address
limits are lifted (every bot dials from loopback), nothing else. Each run is a fresh process
(Twisted's reactor runs once) with a fresh database.

Modes:

* ``saturation``: bots of ``benchmarks/server_bots.py`` acting the moment their turn comes,
  ``--matches`` split evenly over 1, 2 and 3 PostgreSQL nodes, and the same bots against one
  SQLite node (``--db-sync FULL``, the default) in the same run: accepted actions/s, CPU µs per
  action of each node, the database's CPU, round-trip p50/p99. One load generator process
  drives every node (the machine's cores are shared by all of them: see the CPU columns).
* ``takeover``: ``--matches`` matches over three nodes, played by ``support.cluster.Seat`` bots
  at a brisk pace (following ``moved``, failing over with their token). ``--kills`` times: the
  node with the most rooms gets SIGKILL mid-match; the time from the kill until every affected
  room is playing again (both seats resumed on a live node and an action acknowledged there, or
  the match ended there); then the node is started again under its name. At the end every
  acknowledged action is checked against the final record (ended matches) or the stored
  actions (running ones), and every match started must end or still be stored: none lost.
* ``human``: ``--matches`` matches spread evenly over three nodes at a human pace (the seat to
  move thinks ``--think LO HI`` s): round-trip p50/p99 (action sent → ``ok``), CPU per node and
  of the database, over ``--seconds``; ``--sqlite`` runs the same load on one SQLite node too,
  alternating, to tell the cluster's cost from what the shared machine allows.
* ``rolling``: HOSTING.md's upgrade, one node at a time under load: SIGTERM a node (its clients
  get an unsolicited ``moved`` naming a live node and resume there), start it again, wait until
  it listens, the next node; ``--rounds`` times over all three. Per restart: the seconds until
  each of its seats played again; at the end nothing lost, as in ``takeover``.

Figures are medians over ``--runs`` runs (saturation, human) or over kills/restarts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

TARGETS = {"takeover_median_s": 6.0, "human_p99_ms": 25.0}


# ----- helpers ---------------------------------------------------------------------------------------
def med(values: list[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def postgres_pids(pg: Any) -> list[int]:
    """Every process of the throw-away PostgreSQL (the postmaster and its backends)."""
    pidfile = pg.data / "postmaster.pid"
    root = int(pidfile.read_text().split()[0])
    out = [root]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == root:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def pg_roles(pids: list[int]) -> dict[str, float]:
    """CPU seconds of the database's processes by role (backends, walwriter, checkpointer, …)."""
    out: dict[str, float] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        role = title.split(":", 1)[1].strip() if title.startswith("postgres:") else "postmaster"
        role = "backends" if "[local]" in role else role
        out[role] = out.get(role, 0.0) + cpu_of([pid])
    return out


def machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    return sum(parts) - parts[3] - parts[4], sum(parts)


# ----- saturation and human pace: server_bots' load generators, one per node -----------------------------
async def load_run(reactor: Any, cfg: dict[str, Any], nodes: list[Any], pg: Any | None) -> dict[str, Any]:
    import server_bots as sb
    from support import cluster as cl

    human = cfg["mode"] == "human"
    think = tuple(cfg["think"]) if human else (0.0, 0.0)
    gens = []
    share = [cfg["matches"] // len(nodes) + (1 if i < cfg["matches"] % len(nodes) else 0) for i in range(len(nodes))]
    for i, node in enumerate(nodes):
        gen = sb.LoadGen(reactor, node.port, think=think, seed=cfg["seed"] + i, new_room_every=5)
        gen.add_pairs(share[i])
        gens.append(gen)
    t0 = time.monotonic()
    for gen in gens:
        await gen.connect_all(gen.players())
        gen.playing = True
    for gen in gens:
        await gen.setup_all(gen.pairs)
    setup_s = time.monotonic() - t0
    sb.settle_gc()
    for gen in gens:
        gen.start_playing()
    await cl.sleep(reactor, cfg["warmup"])
    for gen in gens:
        gen.recording = True
    pg_pids = postgres_pids(pg) if pg is not None else []
    stats = pg is not None and cfg.get("statements")
    if stats:
        from support.postgres import reset_statement_stats

        reset_statement_stats(cfg["dsn"])
    roles_a = pg_roles(pg_pids) if stats else {}
    a = [g.snapshot() for g in gens]
    cpu_a = [n.cpu_seconds() for n in nodes]
    pg_a, own_a, busy_a = cpu_of(pg_pids), time.process_time(), machine_busy()
    await cl.sleep(reactor, cfg["seconds"])
    b = [g.snapshot() for g in gens]
    cpu_b = [n.cpu_seconds() for n in nodes]
    pg_b, own_b, busy_b = cpu_of(postgres_pids(pg) if pg is not None else []), time.process_time(), machine_busy()
    statements = None
    if stats:
        from support.postgres import statement_stats

        statements = statement_stats(cfg["dsn"])
        roles_b = pg_roles(postgres_pids(pg))
        statements["cpu_by_role"] = {k: v - roles_a.get(k, 0.0) for k, v in roles_b.items()}
    for gen in gens:
        gen.recording = False
        gen.stop_playing()
    await sb.wait_until(reactor, lambda: all(p.pending is None for g in gens for p in g.players()), 10)
    span = b[0]["t"] - a[0]["t"]
    per_node = [(y["accepted"] - x["accepted"]) for x, y in zip(a, b, strict=True)]
    actions = sum(per_node)
    rtts = [r for g in gens for r in g.rtts]
    clk = os.sysconf("SC_CLK_TCK")
    return {
        "nodes": len(nodes), "matches": cfg["matches"], "seconds": span, "setup_s": setup_s,
        "actions_per_s": actions / span, "actions_per_s_by_node": [x / span for x in per_node],
        "node_cpu": [(y - x) / span for x, y in zip(cpu_a, cpu_b, strict=True)],
        "node_cpu_us_per_action": [(y - x) / n * 1e6 if n else None for x, y, n in zip(cpu_a, cpu_b, per_node, strict=True)],
        "db_cpu": (pg_b - pg_a) / span if pg is not None else None,
        "db_cpu_us_per_action": (pg_b - pg_a) / actions * 1e6 if pg is not None and actions else None,
        "loadgen_cpu": (own_b - own_a) / span,
        "machine_busy_cores": (busy_b[0] - busy_a[0]) / clk / span,
        "rtt_samples": len(rtts), "rtt_p50_ms": (pct(rtts, 50) or 0) * 1000, "rtt_p99_ms": (pct(rtts, 99) or 0) * 1000,
        "rtt_max_ms": max(rtts, default=0.0) * 1000,
        "connected_at_end": sum(1 for g in gens for p in g.players() if p.conn is not None),
        "completed": sum(g.matches_completed for g in gens),
        "errors": dict(sum((g.errors for g in gens), start=__import__("collections").Counter())),
        "refused": dict(sum((g.refused for g in gens), start=__import__("collections").Counter())),
        "timeouts": sum(g.timeouts for g in gens),  # the whole run, set-up included
        "timeouts_in_window": sum(y["timeouts"] - x["timeouts"] for x, y in zip(a, b, strict=True)),
        "statements": statements, "actions": actions,
    }


# ----- takeover and rolling restart: support.cluster's seats ----------------------------------------------
def room_back(pair: tuple[Any, Any], since: float) -> tuple[float, float] | None:
    """When a room was playing again after ``since``: (both seats resumed on a live node, with the
    match's state; an action of it acknowledged there, bot think time included — or the match over)."""
    resumed = []
    for seat in pair:
        after = [t for t in seat.resumed_at if t > since]
        if not after:
            return None
        resumed.append(after[0])
    back = max(resumed)
    acks = [t for seat in pair for t in seat.ack_times if t > back]
    if acks:
        return back - since, min(acks) - since
    st = pair[0].state
    if st is not None and st["result"] is not None:  # ended right at the takeover: nothing left to play
        return back - since, back - since
    return None


def check_nothing_lost(play: Any, dsn: str) -> dict[str, int]:
    """Every acknowledged action is in the final record (ended) or the stored actions (running)."""
    from support import cluster as cl

    running = sorted({mid for s in play.seats for mid in s.acked if mid not in s.ends})
    stored = cl.db_actions(dsn, running) if running else {}
    checked = lost = 0
    for seat in play.seats:
        for mid, acked in seat.acked.items():
            end = seat.ends.get(mid)
            actions = end["record"]["actions"] if end is not None else stored.get(mid, [])
            for seq_after, move in acked:
                checked += 1
                row = actions[seq_after - 1] if seq_after - 1 < len(actions) else None
                if row is None or row.get("type") != move["type"] or row.get("cell") != move.get("cell"):
                    lost += 1
    started = {mid for s in play.seats for mid in s.seen}
    ended = {mid for s in play.seats for mid in s.ends}
    still = set(cl.db_actions(dsn, sorted(started - ended))) if started - ended else set()
    missing = [mid for mid in started - ended if mid not in still]
    return {"acked_checked": checked, "acked_lost": lost, "matches_started": len(started),
            "matches_ended": len(ended), "matches_lost": len(missing),
            "problems": sum(len(s.problems) for s in play.seats),
            "problem_sample": [f"{p.seat}: {p.what}" for s in play.seats for p in s.problems][:5]}


async def seats_run(reactor: Any, cfg: dict[str, Any], cluster: Any, dsn: str) -> dict[str, Any]:
    from support import cluster as cl
    from twisted.internet import defer

    # A seat retries every 0.25 s once it has tried every node (moved to a dead node, refused).
    play = cl.Play(reactor, cluster.addresses(), seed=cfg["seed"], think=tuple(cfg["think"]), answer_s=1.5,
                   ping_s=0.3, failover_s=30.0, retry_s=0.25, rematches=1 << 30)
    nodes = cluster.nodes
    for i in range(cfg["matches"]):
        await play.open_room(i, nodes[i % len(nodes)].address)
    runs = [defer.ensureDeferred(s.run()).addErrback(lambda f: f) for s in play.seats]
    await cl.sleep(reactor, 1.0)
    events: list[dict[str, Any]] = []
    rounds = cfg["kills"] if cfg["mode"] == "takeover" else cfg["rounds"] * len(nodes)
    for k in range(rounds):
        if cfg["mode"] == "takeover":
            counts = {n.name: 0 for n in nodes}
            for a, _ in play.pairs:
                victim_of = cluster.node_at(*a.node)
                if victim_of is not None:
                    counts[victim_of.name] += 1
            victim = max(nodes, key=lambda n: (counts[n.name], n.name))
        else:
            victim = nodes[k % len(nodes)]
        affected = [p for p in play.pairs if p[0].node == victim.address or p[1].node == victim.address]
        since = time.monotonic()
        if cfg["mode"] == "takeover":
            victim.kill()
        else:
            victim.terminate()
        end = since + 40.0
        backs: dict[int, tuple[float, float]] = {}
        while time.monotonic() < end and len(backs) < len(affected):
            for i, pair in enumerate(affected):
                if i not in backs:
                    t = room_back(pair, since)
                    if t is not None:
                        backs[i] = t
            await cl.sleep(reactor, 0.01)
        complete = bool(backs) and len(backs) == len(affected)
        if cfg["mode"] == "rolling":
            await defer.ensureDeferred(_wait_ended(reactor, victim))
        victim.start()
        await victim.listening_async(reactor)
        events.append({"node": victim.name, "rooms": len(affected), "back": len(backs),
                       "all_back_s": max(b[0] for b in backs.values()) if complete else None,
                       "all_acting_s": max(b[1] for b in backs.values()) if complete else None,
                       "median_room_s": med([b[0] for b in backs.values()])})
        print(f"  {cfg['mode']} {k + 1}/{rounds}: {victim.name} {len(affected)} rooms, all back "
              f"{events[-1]['all_back_s'] if events[-1]['all_back_s'] is None else round(events[-1]['all_back_s'], 2)} s",
              file=sys.stderr, flush=True)
        await cl.sleep(reactor, cfg["between"])
    # The end: every seat plays its match to its end (no rematch), then nothing may be lost.
    play.stopping = True
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(play.finished(s) for s in play.seats):
        await cl.sleep(reactor, 0.1)
    for seat in play.seats:
        seat.playing = False
    crashed = [r for r in runs if r.called and r.result is not None and hasattr(r.result, "getTraceback")]
    outcome = check_nothing_lost(play, dsn)
    alls = [e["all_back_s"] for e in events]
    return {"events": events, "rounds": len(events), "all_back_median_s": med(alls),
            "all_acting_median_s": med([e["all_acting_s"] for e in events]),
            "room_median_s": med([e["median_room_s"] for e in events]),
            "all_back_max_s": max([x for x in alls if x is not None], default=None),
            "rounds_not_back": sum(1 for x in alls if x is None),
            "moved_followed": play.counts["moved_followed"], "moved_unsolicited": play.counts["moved_unsolicited"],
            "acked_total": play.acked, "crashed_seats": len(crashed), **outcome,
            "counts": dict(play.counts)}


async def _wait_ended(reactor: Any, node: Any) -> None:
    from support import cluster as cl

    end = time.monotonic() + 20
    while node.running and time.monotonic() < end:
        await cl.sleep(reactor, 0.02)
    if node.running:
        node.kill()


# ----- one run in this process ---------------------------------------------------------------------------
def run(cfg: dict[str, Any]) -> dict[str, Any]:
    import server_bots as sb
    from support import cluster as cl
    from support.postgres import running
    from twisted.internet import defer, reactor

    sb.raise_nofile(65536)
    sb.quiet_gc(reactor)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp, running(
            durable=True, statements=bool(cfg.get("statements"))) as pg:
        work = Path(tmp)
        sqlite = cfg["mode"] in ("saturation", "human") and cfg.get("sqlite")
        dsn = str(work / "single.sqlite3") if sqlite else pg.new_database()
        cfg["dsn"] = dsn
        n = cfg["nodes"]
        host = "127.0.0.1" if cfg["mode"] in ("saturation", "human") else None
        cluster = cl.Cluster(dsn, work, n, host=host)

        async def main() -> None:
            try:
                for node in cluster.nodes:
                    node.start()
                for node in cluster.nodes:
                    await node.listening_async(reactor)
                if cfg["mode"] in ("saturation", "human"):
                    result.update(await load_run(reactor, cfg, cluster.nodes, None if cfg.get("sqlite") else pg))
                else:
                    result.update(await seats_run(reactor, cfg, cluster, dsn))
            finally:
                cluster.close()

        def finish(outcome: Any) -> None:
            if hasattr(outcome, "getTraceback"):
                result["failure"] = outcome.getTraceback()
            reactor.stop()

        reactor.callWhenRunning(lambda: defer.ensureDeferred(main()).addBoth(finish))
        reactor.run()
        cluster.close()
        errors = [ln for node in cluster.nodes for ln in node.lines("level=error") + node.lines("level=critical")]
        result["node_error_lines"] = len(errors)
        result["node_error_sample"] = errors[:3]
    result["config"] = cfg
    return result


def run_one(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-one", json.dumps(cfg)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"run failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if "failure" in result:
        raise RuntimeError(f"run failed:\n{result['failure']}")
    return result


def f(v: Any, spec: str = ",.1f") -> str:
    if v is None:
        return "–"
    if isinstance(v, list):
        return "/".join(f(x, spec) for x in v)
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


def report_load(mode: str, label: str, runs: list[dict[str, Any]]) -> None:
    print(f"\n{mode}: {label} ({len(runs)} runs, medians)")
    print(f"  actions/s           {f(med([r['actions_per_s'] for r in runs]), ',.0f')}  (runs {', '.join(f(r['actions_per_s'], ',.0f') for r in runs)})")
    nodes = runs[0]["nodes"]
    cpu = [med([r["node_cpu"][i] for r in runs]) for i in range(nodes)]
    us = [med([r["node_cpu_us_per_action"][i] for r in runs]) for i in range(nodes)]
    print(f"  node CPU (cores)    {f(cpu, '.2f')}")
    print(f"  node µs per action  {f(us, ',.0f')}")
    print(f"  database CPU        {f(med([r['db_cpu'] for r in runs]), '.2f')} cores, {f(med([r['db_cpu_us_per_action'] for r in runs]), ',.0f')} µs per action")
    print(f"  load generator CPU  {f(med([r['loadgen_cpu'] for r in runs]), '.2f')}; machine busy {f(med([r['machine_busy_cores'] for r in runs]), '.2f')} cores of {os.cpu_count()}")
    print(f"  round trip          p50 {f(med([r['rtt_p50_ms'] for r in runs]), '.1f')} ms, p99 {f(med([r['rtt_p99_ms'] for r in runs]), '.1f')} ms, max {f(max(r['rtt_max_ms'] for r in runs), '.0f')} ms ({f(med([r['rtt_samples'] for r in runs]), ',.0f')} samples)")
    print(f"  turn timeouts       {f(med([r.get('timeouts_in_window') for r in runs]), ',.0f')} in the window "
          f"({f(med([r['timeouts'] for r in runs]), ',.0f')} in the whole run, set-up {f(med([r['setup_s'] for r in runs]), ',.0f')} s)")
    print(f"  connected at end    {f(med([r['connected_at_end'] for r in runs]), ',.0f')}; matches completed {f(med([r['completed'] for r in runs]), ',.0f')}; errors {sum(sum(r['errors'].values()) for r in runs)}; node error lines {sum(r['node_error_lines'] for r in runs)}")
    for r in runs:
        st = r.get("statements")
        if not st or not r.get("actions"):
            continue
        n, wal = r["actions"], st["wal"]
        print(f"  WAL per action      {wal['records'] / n:.1f} records, {wal['bytes'] / n:,.0f} bytes, "
              f"{wal['fpi'] / n:.2f} full-page images; {wal['syncs'] / r['seconds']:,.0f} WAL flushes/s")
        roles = st.get("cpu_by_role") or {}
        print("  database CPU µs per action by process: " + ", ".join(
            f"{k} {v / n * 1e6:,.0f}" for k, v in sorted(roles.items(), key=lambda kv: -kv[1]) if v > 0))
        print("  statements (per action: calls, ms; WAL bytes per call)")
        for q in st["statements"]:
            per = q["wal_bytes"] / q["calls"] if q["calls"] else 0
            print(f"    {q['calls'] / n:6.3f} {q['ms'] / n:7.4f} ms {per:7,.0f} B {'' if q['toplevel'] else '(nested) '}{q['query'][:120]}")
    if mode == "human":
        p99 = med([r["rtt_p99_ms"] for r in runs])
        print(f"  target p99 < {TARGETS['human_p99_ms']:.0f} ms: {'met' if p99 is not None and p99 < TARGETS['human_p99_ms'] else 'MISSED'}")


def report_seats(r: dict[str, Any]) -> None:
    mode = r["config"]["mode"]
    print(f"\n{mode}: {r['config']['matches']} matches over {r['config']['nodes']} nodes, {r['rounds']} "
          f"{'kills (SIGKILL)' if mode == 'takeover' else 'restarts (SIGTERM, start again)'}")
    alls = [e["all_back_s"] for e in r["events"]]
    print(f"  every affected room resumed on a live node: median {f(r['all_back_median_s'], '.2f')} s, max {f(r['all_back_max_s'], '.2f')} s; "
          f"rounds with a room not back within 40 s: {r['rounds_not_back']}")
    print(f"  per round (s)       {', '.join(f(x, '.2f') for x in alls)}")
    print(f"  a room's median     {f(r['room_median_s'], '.2f')} s; every room's first action acknowledged "
          f"(bot think {r['config']['think'][0]:g}-{r['config']['think'][1]:g} s included): median {f(r['all_acting_median_s'], '.2f')} s")
    print(f"  rooms per round     {', '.join(str(e['rooms']) for e in r['events'])}")
    print(f"  moved followed      {r['moved_followed']} (unsolicited {r['moved_unsolicited']})")
    print(f"  acknowledged        {r['acked_total']:,}; checked {r['acked_checked']:,}; LOST {r['acked_lost']}")
    print(f"  matches             started {r['matches_started']}, ended {r['matches_ended']}, LOST {r['matches_lost']}; "
          f"seat problems {r['problems']}; crashed seats {r['crashed_seats']}; node error lines {r['node_error_lines']}")
    for line in r["problem_sample"] + r["node_error_sample"]:
        print(f"    {line[:300]}")
    if mode == "takeover":
        ok = r["all_back_median_s"] is not None and r["all_back_median_s"] <= TARGETS["takeover_median_s"]
        ok = ok and r["acked_lost"] == 0 and r["matches_lost"] == 0
        print(f"  target median ≤ {TARGETS['takeover_median_s']:.0f} s, nothing lost: {'met' if ok else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--mode", choices=["saturation", "takeover", "human", "rolling"], action="append")
    ap.add_argument("--matches", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--think", type=float, nargs=2, default=None)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3], help="saturation: node counts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sqlite", action="store_true", help="human: also the same load on one SQLite node, alternating")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true", help="also print every run's figures as JSON")
    ap.add_argument("--statements", action="store_true",
                    help="saturation/human: pg_stat_statements and WAL per action in PostgreSQL (diagnosis)")
    ap.add_argument("--run-one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_one:
        print(json.dumps(run(json.loads(args.run_one))), flush=True)
        return
    modes = args.mode or (["saturation", "takeover", "human", "rolling"] if args.quick else ["saturation"])
    for mode in modes:
        base = {"mode": mode, "seed": args.seed, "statements": args.statements, "warmup": 1.0 if args.quick else args.warmup,
                "seconds": 2.0 if args.quick else args.seconds}
        if mode == "saturation":
            matches = args.matches or (20 if args.quick else 200)
            results: dict[str, list[dict[str, Any]]] = {}
            for r_i in range(1 if args.quick else args.runs):
                for label, cfg in [("SQLite, 1 node", {"nodes": 1, "sqlite": True})] + [
                        (f"PostgreSQL, {n} node{'s' if n > 1 else ''}", {"nodes": n}) for n in args.nodes]:
                    out = run_one({**base, **cfg, "matches": matches, "seed": args.seed + r_i}, 600)
                    results.setdefault(label, []).append(out)
                    if args.json:
                        print(json.dumps(out))
            for label, runs in results.items():
                report_load(mode, f"{label}, {matches} matches", runs)
        elif mode == "human":
            matches = args.matches or (60 if args.quick else 5000)
            think = args.think or [2.0, 6.0]
            setups = [("PostgreSQL, 3 nodes", {"nodes": 3})]
            if args.sqlite:  # the same load on one SQLite node in the same session: what the machine allows
                setups.append(("SQLite, 1 node", {"nodes": 1, "sqlite": True}))
            done: dict[str, list[dict[str, Any]]] = {}
            for r_i in range(1 if args.quick else args.runs):
                for label, extra in setups:
                    out = run_one({**base, **extra, "matches": matches, "think": think, "seed": args.seed + r_i}, 1800)
                    done.setdefault(label, []).append(out)
                    if args.json:
                        print(json.dumps(out))
            for label, runs in done.items():
                report_load(mode, f"{label}, {matches} matches, think {think[0]:g}-{think[1]:g} s", runs)
        else:
            matches = args.matches or (6 if args.quick else 30)
            cfg = {**base, "nodes": 3, "matches": matches, "think": args.think or [0.05, 0.3],
                   "kills": 2 if args.quick else args.kills, "rounds": args.rounds, "between": 1.0}
            out = run_one(cfg, 3600)
            if args.json:
                print(json.dumps(out))
            report_seats(out)


if __name__ == "__main__":
    main()
