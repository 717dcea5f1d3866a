#!/usr/bin/env python3
"""Server benchmark: bot matches over loopback against a real ``mine-duel-server`` process.

    .venv/bin/python benchmarks/bench_server.py --mode saturation [--matches 200] [--runs 3]
    .venv/bin/python benchmarks/bench_server.py --mode idle-scale --matches 5000 [--seconds 60] [--think 2 6]
    .venv/bin/python benchmarks/bench_server.py --mode restore --matches 5000 [--restarts 3]
    .venv/bin/python benchmarks/bench_server.py --quick            # every mode, tiny, a few seconds each
    .venv/bin/python benchmarks/bench_server.py --mode idle-scale --matches 5000 --spectators 2
    .venv/bin/python benchmarks/bench_server.py --mode saturation --spectators 0 1 --runs 3   # alternating, with the ratio
    .venv/bin/python benchmarks/bench_server.py --mode quick-match [--players 10000] [--rate 50]   # issue 20: bench_quick_match.py

Each run is a fresh process (``--run-one``, Twisted's reactor runs once per process) holding the
load generator (``server_bots.py``: N bot pairs, 2N TCP connections, legal moves chosen from each
bot's own ``state`` view, rematches and new rooms). It starts the server as a subprocess —
``server_probe.py``, i.e. the unchanged ``mine-duel-server`` plus an in-process reactor lag
probe — on a fresh SQLite file (``--db-sync FULL`` by default, the server's default), and raises
``RLIMIT_NOFILE`` (inherited by the server) for 10,000+ connections. Server options used:
``--max-connections-per-address`` and ``--max-connections`` just above 2N (restore mode also
``--rate 100000`` for its back-to-back pinger); since every bot connects from 127.0.0.1, the
per-address limits of issue 15 (rooms, messages and new connections per address, record caps)
are lifted; everything else (per-connection rate limits, timings) is the default. Bots stay
under the 20 messages/s per connection limit themselves.

Modes:

* ``saturation``: every bot acts the moment its turn comes; accepted actions/s (each one
  validated, committed, answered with two filtered ``state`` views and an ``ok``), server CPU
  per action, round trip (action sent → ``ok`` read) p50/p99.
* ``idle-scale``: ``--matches`` matches (2× connections) playing at a human pace: the seat to
  move waits a think time uniform in ``--think LO HI`` seconds before each action (and before
  ``rematch``/new room). RSS of the server process (``/proc/PID/status`` VmRSS) before any
  connection, with all connections greeted, with all matches started and at the end: per idle
  connection and per room. Round trips during ``--seconds`` of play.
* ``restore``: ``--matches`` matches played to ``--target-seq`` actions, then the server is
  stopped (SIGTERM) and restarted ``--restarts`` times on the same database; each time the
  longest gap between lag-probe ticks (every 2 ms, inside the server) while the rooms are
  restored, and the longest ping round trip of a client pinging back to back from outside.
  Then every bot reconnects, ``resume``s its seat and the matches are played on.

``--spectators K`` (saturation, idle-scale) adds K spectator connections per match (PROTOCOL.md
§16), watching each of the pair's rooms from its creation; several values (``--spectators 0 1``)
run them alternately within each run number, one table each, then the ratio of their medians and
of each run's pair.

Figures are medians over ``--runs`` runs (saturation, idle-scale) or over restarts (restore).
The machines are shared: ``--wait-quiet S`` waits for an idle machine before each run, and every
table shows the CPU other processes used and the disk's fsync time during the run. The server
probe also records every garbage collection of 2 ms or more.

Diagnostics: ``--py-spy OUT`` (py-spy stacks of the server over the window), ``--profile OUT``
(cProfile of the whole server run), ``--keep-logs DIR``. ``--experiment NAME`` applies a what-if
patch from ``server_experiments.py`` to the server process (diagnostics, the GC policy off, ...), to
measure a proposed server change before anyone makes it; those are not production code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGETS = {"actions_per_s": 5000.0, "rss_mb": 150.0, "rtt_p99_ms": 25.0, "restore_gap_ms": 20.0}


def run_one(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-one", json.dumps(cfg)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)  # progress on stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"run failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}")
    result = json.loads(lines[-1])
    if "failure" in result:
        raise RuntimeError(f"run failed:\n{result['failure']}")
    return result


def wait_quiet(max_wait: float, idle_cores: float = 1.7) -> float:
    """Wait (at most ``max_wait`` s) for a second in which ``idle_cores`` cores were idle: the
    machines are shared. Returns the idle cores seen last."""
    ncpu = os.cpu_count() or 1
    end = time.monotonic() + max_wait
    while True:
        a = _stat()
        time.sleep(1.0)
        b = _stat()
        idle = (b[1] - a[1]) / max(1, b[0] - a[0]) * ncpu
        if idle >= min(idle_cores, ncpu - 0.3) or time.monotonic() > end:
            return idle
        print(f"  machine busy ({ncpu - idle:.1f} cores in use by others); waiting ...", file=sys.stderr, flush=True)


def _stat() -> tuple[int, int]:
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    return sum(parts), parts[3] + parts[4]


def med(values: list[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v: Any, spec: str = ",.1f") -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return format(v, spec)
    return str(v)


def table(title: str, rows: list[tuple[str, str, str]]) -> str:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    out = [title, "-" * len(title)]
    for name, value, note in rows:
        out.append(f"  {name:<{w0}}  {value:>{w1}}  {note}")
    return "\n".join(out)


def fsync_row(runs: list[dict[str, Any]]) -> tuple[str, str, str]:
    vals = [f"{r['fsync_ms_before']:.2f}/{r['fsync_ms_after']:.2f}" for r in runs if "fsync_ms_before" in r]
    return ("fsync of 4 KB, before/after", ", ".join(vals) + " ms", "the disk is shared too: per run")


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("(target met)" if ok else "(TARGET MISSED)")


def spectator_rows(runs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Rows about the spectators of a run with ``--spectators`` (none without)."""
    if not runs[0].get("spectators"):
        return []
    return [
        ("spectators per match", fmt(runs[0]["spectators"], "d"), f"{fmt(med([r['watchers'] for r in runs]), ',.0f')} watcher connections"),
        ("  watching at the end", fmt(med([r["watchers_watching"] for r in runs]), ",.0f"),
         f"connected {fmt(med([r['watchers_connected'] for r in runs]), ',.0f')}"),
        ("  spectate_state received/s", fmt(med([r["spectate_state_per_s"] for r in runs]), ",.0f"),
         f"{fmt(med([r['spectate_state_bytes'] / max(1, r['spectate_state_lines']) for r in runs]), ',.0f')} bytes each"),
        ("  last views valid / invalid", f"{fmt(med([r['spectate_state_valid'] for r in runs]), ',.0f')} / "
         f"{fmt(sum(r['spectate_state_invalid'] for r in runs), ',d')}", "strict parser (shared/wire/messages.py)"),
    ]


def report_saturation(runs: list[dict[str, Any]]) -> str:
    aps = med([r["actions_per_s"] for r in runs])
    rows = [
        ("runs × matches (connections)", f"{len(runs)} × {runs[0]['matches']} ({runs[0]['connections']})", ""),
        *spectator_rows(runs),
        ("accepted actions/s (median)", fmt(aps, ",.0f"), f"target ≥ {TARGETS['actions_per_s']:,.0f} {verdict(aps >= TARGETS['actions_per_s'])}"),
        ("  each run", ", ".join(fmt(r["actions_per_s"], ",.0f") for r in runs), ""),
        ("server CPU (share of one core)", fmt(med([r["server_cpu"] for r in runs]) * 100, ".0f") + " %", ""),
        ("server CPU per action", fmt(med([r["server_cpu_us_per_action"] for r in runs]), ",.0f") + " µs",
         f"user {fmt(med([r['server_user_us_per_action'] for r in runs]), ',.0f')} + system {fmt(med([r['server_sys_us_per_action'] for r in runs]), ',.0f')} µs"),
        ("load generator CPU", fmt(med([r["loadgen_cpu"] for r in runs]) * 100, ".0f") + " %",
         f"its own longest loop gap {fmt(med([r.get('loadgen_max_gap_ms') for r in runs]), '.0f')} ms, GC pause {fmt(med([r.get('loadgen_max_gc_ms') for r in runs]), '.0f')} ms"),
        ("other processes' CPU", ", ".join(fmt(r["other_cpu"] * 100, ".0f") + " %" for r in runs), "shared machine: per run"),
        ("round trip p50", fmt(med([r["rtt_p50_ms"] for r in runs]), ".2f") + " ms", "action sent → ok read"),
        ("round trip p99", fmt(med([r["rtt_p99_ms"] for r in runs]), ".2f") + " ms", ""),
        ("longest loop gap (probe)", fmt(med([r["max_gap_ms"] for r in runs]), ".1f") + " ms", ""),
        ("longest GC pause", fmt(med([r["gc_max_ms"] for r in runs]), ".1f") + " ms", f"full (gen 2) collections: {fmt(med([r['gc_gen2_count'] for r in runs]), '.0f')} in the window"),
        ("matches completed / s", fmt(med([r["completed_in_window"] / r["seconds"] for r in runs]), ",.1f"), ""),
        ("refused actions", fmt(sum(sum(r["refused"].values()) for r in runs), ",d"),
         f"{_merge(runs, 'refused') or ''} bot-side waits for the rate limit: {sum(r.get('throttled', 0) for r in runs):,}"),
        ("end reasons", str(_merge(runs, "reasons")), ""),
        ("errors", str(_merge(runs, "errors") or "none"), ""),
        fsync_row(runs),
    ]
    exp = runs[0]["config"].get("experiments")
    extra = f", EXPERIMENT {'+'.join(exp)}" if exp else ""
    return table(f"Saturation (SQLite synchronous={runs[0]['config']['db_sync']}{extra})", rows)


def _merge(runs: list[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in runs:
        for k, v in (r.get(key) or {}).items():
            out[k] = out.get(k, 0) + v
    return out


def report_idle(runs: list[dict[str, Any]]) -> str:
    r0 = runs[0]
    end = med([r["rss_peak_mb"] for r in runs])
    p99 = med([r["rtt_p99_ms"] for r in runs])
    rows = [
        ("runs × matches (connections)", f"{len(runs)} × {r0['matches']:,} ({r0['connections']:,})", ""),
        ("pace", f"think {r0['think_s'][0]:g}–{r0['think_s'][1]:g} s", "uniform, before every action"),
        *spectator_rows(runs),
        ("connected at the end", fmt(med([r["connected_at_end"] for r in runs]), ",.0f"), ""),
        ("RSS before connections", fmt(med([r["rss_base_mb"] for r in runs])) + " MB", ""),
        ("RSS, all connections greeted", fmt(med([r["rss_connected_mb"] for r in runs])) + " MB", ""),
        ("RSS, all matches started", fmt(med([r["rss_matches_mb"] for r in runs])) + " MB", ""),
        ("RSS peak while playing", fmt(end) + " MB", f"target < {TARGETS['rss_mb']:.0f} MB {verdict(end < TARGETS['rss_mb'])}"),
        ("RSS every 60 s of play", ", ".join(fmt(mb, ".0f") for t, mb in r0.get("rss_series_mb", []) if t % 60 < 10) + " MB", "first run"),
        ("per idle connection", fmt(med([r["kb_per_idle_connection"] for r in runs]), ".2f") + " KB", ""),
        ("per room (match just started)", fmt(med([r["kb_per_room"] for r in runs]), ".2f") + " KB", ""),
        ("per room (end of play)", fmt(med([r["kb_per_room_end"] for r in runs]), ".2f") + " KB", ""),
        ("accepted actions/s while playing", fmt(med([r["actions_per_s"] for r in runs]), ",.0f"), ""),
        ("server CPU (share of one core)", fmt(med([r["server_cpu"] for r in runs]) * 100, ".0f") + " %", ""),
        ("load generator CPU", fmt(med([r["loadgen_cpu"] for r in runs]) * 100, ".0f") + " %",
         f"its own longest loop gap {fmt(med([r.get('loadgen_max_gap_ms') for r in runs]), '.0f')} ms, GC pause {fmt(med([r.get('loadgen_max_gc_ms') for r in runs]), '.0f')} ms"),
        ("other processes' CPU", ", ".join(fmt(r["other_cpu"] * 100, ".0f") + " %" for r in runs), "shared machine: per run"),
        ("round trip p50", fmt(med([r["rtt_p50_ms"] for r in runs]), ".2f") + " ms", ""),
        ("round trip p99", fmt(p99, ".2f") + " ms", f"target < {TARGETS['rtt_p99_ms']:.0f} ms {verdict(None if p99 is None else p99 < TARGETS['rtt_p99_ms'])}"),
        ("longest loop gap (probe)", fmt(med([r["max_gap_ms"] for r in runs]), ".1f") + " ms", ""),
        ("longest GC pause", fmt(med([r["gc_max_ms"] for r in runs]), ".1f") + " ms", f"full (gen 2) collections: {fmt(med([r['gc_gen2_count'] for r in runs]), '.0f')} in the window, {fmt(med([r['gc_gen2_total_s'] for r in runs]), '.1f')} s in all"),
        ("matches completed in window", fmt(med([r["completed_in_window"] for r in runs]), ",.0f"), ""),
        ("turn timeouts in window", fmt(med([r["timeouts_in_window"] for r in runs]), ",.0f"), ""),
        ("connect / set-up time", f"{fmt(med([r['connect_s'] for r in runs]))} s / {fmt(med([r['setup_s'] for r in runs]))} s", ""),
        ("refused / errors", f"{_merge(runs, 'refused') or 'none'} / {_merge(runs, 'errors') or 'none'}", ""),
        fsync_row(runs),
    ]
    return table("Idle scale (human pace)", rows)


def report_restore(runs: list[dict[str, Any]]) -> str:
    rs = [x for r in runs for x in r["restarts"]]
    gap = med([x["max_gap_ms"] for x in rs])
    worst = max((x["max_gap_ms"] or 0.0) for x in rs)
    r0 = runs[0]
    rows = [
        ("rooms (matches in progress)", fmt(r0["matches"], ",d"), f"mean seq {r0['mean_seq']:.1f}, populated in {r0['populate_s']:.0f} s"),
        ("restarts measured", fmt(len(rs), "d"), f"SIGTERM, same database, synchronous={r0['config']['db_sync']}"),
        ("rooms restored", ", ".join(fmt(x["restored_rooms"], ",d") for x in rs), ""),
        ("before the loop (open db, list rooms)", fmt(med([x["startup_s"] for x in rs]) * 1000, ".0f") + " ms", "process start → first reactor turn, incl. imports"),
        ("restore duration", fmt(med([x["restore_s"] for x in rs]), ".2f") + " s", ""),
        ("longest loop gap (median)", fmt(gap, ".1f") + " ms", f"target < {TARGETS['restore_gap_ms']:.0f} ms {verdict(worst < TARGETS['restore_gap_ms'])}"),
        ("longest loop gap (worst restart)", fmt(worst, ".1f") + " ms", ""),
        ("gaps > 20 ms", ", ".join(fmt(x["gaps_over_20ms"], "d") for x in rs), "per restart"),
        ("longest GC pause during restore", fmt(max((x["gc_max_ms"] or 0.0) for x in rs), ".1f") + " ms", ""),
        ("ping round trip max (outside)", fmt(med([x["ping_max_ms"] for x in rs]), ".1f") + " ms", f"{fmt(med([x['ping_samples'] for x in rs]), ',.0f')} pings per restore"),
        ("machine CPU during restore", ", ".join(fmt(x["machine_busy_cores"] * 100, ".0f") + " %" for x in rs), "all processes, of 200 %"),
        ("RSS after restore", fmt(med([x["rss_restored_mb"] for x in rs])) + " MB", f"{fmt(med([x['kb_per_restored_room'] for x in rs]), '.2f')} KB per room above base"),
        ("seats resumed", fmt(r0.get("resumed"), ",d"), f"in {fmt(r0.get('resume_s'), '.1f')} s; loop gap {fmt((r0.get('resume_probe') or {}).get('max_gap_ms'), '.1f')} ms"),
        ("matches completed after resume", fmt(r0.get("completed_after_resume"), ",d"), f"in {r0['config']['resume_play']:g} s of play"),
        ("errors", str(_merge(runs, "errors") or "none"), ""),
        fsync_row(runs),
    ]
    return table("Restore after restart", rows)


REPORTS = {"saturation": report_saturation, "idle-scale": report_idle, "restore": report_restore}


def compare_spectators(mode: str, by_kind: dict[int, list[dict[str, Any]]]) -> str:
    """``--spectators A B ...``: each figure's median with B spectators per match over its median with
    A (the first), and the same ratio for each run number (the runs of one number ran back to back)."""
    kinds = list(by_kind)
    base = by_kind[kinds[0]]
    keys = [("actions_per_s", "accepted actions/s", ",.0f"), ("server_cpu_us_per_action", "server CPU per action µs", ",.0f"),
            ("server_user_us_per_action", "  of which user µs", ",.0f"), ("server_sys_us_per_action", "  of which system µs", ",.0f"),
            ("server_cpu", "server CPU, share of one core", ".2f"), ("loadgen_cpu", "load generator CPU, share of one core", ".2f"),
            ("rtt_p99_ms", "players' round trip p99 ms", ".2f"), ("rss_peak_mb", "RSS peak MB", ".1f")]
    rows = []
    if base[0].get("server_cpu_us_per_action") is not None:
        # A saturated server with a core of its own does 1 / (CPU per action) actions a second:
        # this ratio is the actions/s one spectator leaves, whoever else used the machine (the
        # accepted actions/s above also depend on the load generator and the other processes).
        for k in kinds[1:]:
            other = by_kind[k]
            m0, m1 = med([r.get("server_cpu_us_per_action") for r in base]), med([r.get("server_cpu_us_per_action") for r in other])
            pairs = ", ".join(f"{b['server_cpu_us_per_action'] / o['server_cpu_us_per_action']:.3f}" for b, o in zip(base, other, strict=False)
                              if b.get("server_cpu_us_per_action") and o.get("server_cpu_us_per_action"))
            rows.append((f"server capacity (1 / CPU per action), {k} vs {kinds[0]}", f"{m0 / m1:.3f}" if m0 and m1 else "–",
                         f"per run: {pairs}"))
    for key, name, spec in keys:
        if base[0].get(key) is None:
            continue
        for k in kinds[1:]:
            other = by_kind[k]
            m0, m1 = med([r.get(key) for r in base]), med([r.get(key) for r in other])
            pairs = ", ".join(f"{b[key] and o[key] / b[key]:.3f}" for b, o in zip(base, other, strict=False)
                              if b.get(key) is not None and o.get(key) is not None)
            rows.append((f"{name}, {k} vs {kinds[0]} spectators", f"{fmt(m1, spec)} / {fmt(m0, spec)} = {m1 / m0:.3f}" if m0 else "–",
                         f"per run: {pairs}"))
    return table(f"Spectators compared ({mode})", rows)


def config_for(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    base = {"mode": mode, "seed": args.seed, "db_sync": args.db_sync, "settle": 0.3 if quick else 2.0,
            "new_room_every": args.new_room_every, "profile": args.profile,
            "pyspy": args.py_spy, "keep_logs": args.keep_logs, "experiments": args.experiment,
            "census": args.census, "spectators": 0}
    if mode == "saturation":
        base.update(matches=args.matches or (6 if quick else 200), seconds=args.seconds or (1.5 if quick else 10.0),
                    warmup=0.5 if quick else 3.0)
    elif mode == "idle-scale":
        base.update(matches=args.matches or (10 if quick else 5000), seconds=args.seconds or (2.0 if quick else 60.0),
                    warmup=0.5 if quick else 5.0, think=args.think or ([0.02, 0.1] if quick else [2.0, 6.0]))
    else:
        base.update(matches=args.matches or (10 if quick else 5000), restarts=args.restarts or (1 if quick else 3),
                    target_seq=args.target_seq or (6 if quick else 12), populate_timeout=900.0,
                    populate_sync=args.populate_sync,
                    restore_timeout=120.0, resume_play=1.0 if quick else 5.0)
    return base


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    from bench_quick_match import main as quick_match
    from bench_quick_match import quick_match_args

    quick_match_argv = quick_match_args(sys.argv[1:] if argv is None else argv)
    if quick_match_argv is not None:  # --mode quick-match: benchmarks/bench_quick_match.py, its own options
        return quick_match(quick_match_argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=[*REPORTS, "all"], default=None)
    parser.add_argument("--quick", action="store_true", help="tiny loads, a few seconds per mode (smoke run)")
    parser.add_argument("--matches", type=int, default=None, help="concurrent matches (connections = 2×)")
    parser.add_argument("--seconds", type=float, default=None, help="measuring window")
    parser.add_argument("--runs", type=int, default=None, help="repeat runs (median); default 3 for saturation, 1 otherwise")
    parser.add_argument("--restarts", type=int, default=None, help="restore mode: restarts measured (default 3)")
    parser.add_argument("--target-seq", type=int, default=None, help="restore mode: actions per match before the restart")
    parser.add_argument("--think", type=float, nargs=2, metavar=("LO", "HI"), default=None, help="idle-scale think time, seconds")
    parser.add_argument("--new-room-every", type=int, default=5, help="a pair leaves and opens a new room after every Nth match (0: always rematch)")
    parser.add_argument("--db-sync", default="FULL", choices=["FULL", "NORMAL", "EXTRA"])
    parser.add_argument("--populate-sync", default="NORMAL", choices=["FULL", "NORMAL", "EXTRA"],
                        help="restore mode: synchronous mode while the rooms are written (the restarts use --db-sync)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", default=None, help="cProfile the server into this file")
    parser.add_argument("--py-spy", default=None, help="py-spy record the server during the window (raw stacks, idle included)")
    parser.add_argument("--experiment", action="append", default=[], choices=["nodelay", "no-gc-freeze", "commit-thread", "log-slow-commits", "trace-slow-turns"],
                        help="what-if server patch from server_experiments.py (measurement only, not production code)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="S",
                        help="before each run wait up to S seconds for the (shared) machine to be idle")
    parser.add_argument("--census", action="store_true",
                        help="idle-scale: count the server's GC-tracked objects by type at the end of play (in --json)")
    parser.add_argument("--keep-logs", default=None, help="copy the server logs and probe files of each run here")
    parser.add_argument("--spectators", type=int, nargs="+", default=[0], metavar="K",
                        help="spectator connections per match (saturation, idle-scale; PROTOCOL.md §16); "
                        "several values run alternately and are compared")
    parser.add_argument("--json", default=None, help="also write all raw results here")
    parser.add_argument("--run-one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.run_one is not None:
        sys.path.insert(0, str(HERE))
        from server_bots import run

        print(json.dumps(run(json.loads(args.run_one))))
        return 0

    modes = list(REPORTS) if args.mode in (None, "all") and args.quick else [args.mode or "saturation"]
    if args.mode == "all":
        modes = list(REPORTS)
    everything: dict[str, list[dict[str, Any]]] = {}
    failed = False
    for mode in modes:
        cfg = config_for(mode, args)
        runs = args.runs or (1 if args.quick or mode != "saturation" else 3)
        kinds = args.spectators if mode in ("saturation", "idle-scale") else [0]
        by_kind: dict[int, list[dict[str, Any]]] = {k: [] for k in kinds}
        for i in range(runs):
            for k in kinds:  # alternately, so that a busier minute of the shared machine hits each alike
                cfg_i = {**cfg, "seed": cfg["seed"] + i, "spectators": k}
                if args.wait_quiet:
                    wait_quiet(args.wait_quiet)
                t = time.monotonic()
                with_k = f" with {k} spectator(s) each" if k else ""
                print(f"[{mode}] run {i + 1}/{runs}: {cfg['matches']:,} matches{with_k} ...", file=sys.stderr, flush=True)
                by_kind[k].append(run_one(cfg_i, timeout=3600))
                print(f"[{mode}] run {i + 1}/{runs} done in {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
        for k, results in by_kind.items():
            everything[mode if len(kinds) == 1 else f"{mode}/spectators={k}"] = results
            print(REPORTS[mode](results))
            print()
            if any(r.get("server_error_lines") for r in results):
                failed = True
                print(f"server logged errors: {[r.get('server_error_sample') for r in results]}")
        if len(kinds) > 1:
            print(compare_spectators(mode, by_kind))
            print()
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
