"""CPU AI and simulator speed: decision time on real match positions, matches per second.

Usage::

    .venv/bin/python benchmarks/bench_ai.py [--runs 5] [--matches 300] [--games 2000]

1. Decision time. ``--matches`` CPU-vs-CPU matches (difficulties cycling through all nine
   pairings) are played once and every position a CPU had to move in is kept as
   ``(view, difficulty, last_opponent_safe_cell)``. Each run then times ``next_step`` on every
   kept position (``time.perf_counter_ns`` around each call, a fresh seeded ``Random``), and
   reports the median and the 99th percentile, over all steps and over explore steps alone
   (the ones that run AI1 and AI2). The figures printed are medians over ``--runs`` runs.
2. Throughput. ``simulate`` (with all its per-match checks) plays ``--games`` matches of
   normal vs normal on one worker and on two; matches per second of wall time, median over
   ``--runs``, and matches per CPU-second (this process plus its pool workers), which other
   load on a shared machine does not distort. On an idle machine the two-worker wall rate
   approaches twice the one-worker rate when the per-CPU-second rates stay equal.

Targets (issue): median decision < 0.2 ms, p99 < 2 ms; >= 400 matches/s per core and close
to twice that on two workers.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
from itertools import product

from mineduel.shared.ai.cpu import Difficulty, next_step
from mineduel.shared.cli.simulate import simulate
from mineduel.shared.rules.engine import ActionType, GameState, Phase, Variant
from mineduel.shared.rules.views import SeatView

Position = tuple[SeatView, Difficulty, "int | None"]


def collect_positions(matches: int) -> list[Position]:
    """Every position a CPU moved in, over ``matches`` matches of all nine pairings."""
    pairings = list(product(Difficulty, repeat=2))
    positions: list[Position] = []
    for index in range(matches):
        difficulties = pairings[index % len(pairings)]
        rng = random.Random(f"bench:{index}")
        state = GameState(Variant.CPU)
        last_safe: list[int | None] = [None, None]
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            positions.append((view, difficulties[seat], last_safe[1 - seat]))
            decision = next_step(view, difficulties[seat], rng, last_safe[1 - seat])
            state.play(decision.action)
            action = decision.action
            if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                last_safe[seat] = action.cell
    return positions


def percentile(sorted_values: list[int], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    index = max(0, min(len(sorted_values) - 1, round(q * len(sorted_values) + 0.5) - 1))
    return float(sorted_values[index])


def time_decisions(positions: list[Position], seed: int) -> tuple[list[int], list[int]]:
    """Nanoseconds per ``next_step`` call: (all positions, explore positions)."""
    rng = random.Random(seed)
    clock = time.perf_counter_ns
    every: list[int] = []
    explore: list[int] = []
    for view, difficulty, last in positions:
        started = clock()
        next_step(view, difficulty, rng, last)
        spent = clock() - started
        every.append(spent)
        if view.phase is Phase.EXPLORE:
            explore.append(spent)
    return every, explore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matches", type=int, default=300, help="matches whose positions are timed")
    parser.add_argument("--games", type=int, default=2000, help="matches per throughput run")
    args = parser.parse_args(argv)

    positions = collect_positions(args.matches)
    explore_count = sum(1 for view, _, _ in positions if view.phase is Phase.EXPLORE)
    print(
        f"CPU decision time: {len(positions):,} positions from {args.matches} matches "
        f"({explore_count:,} explore steps), {args.runs} runs, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores"
    )
    rows: dict[str, list[tuple[float, float, float]]] = {"all steps": [], "explore steps": []}
    for run in range(args.runs):
        every, explore = time_decisions(positions, run)
        for name, values in (("all steps", every), ("explore steps", explore)):
            values.sort()
            rows[name].append((percentile(values, 0.5), percentile(values, 0.99), float(values[-1])))
    for name, runs in rows.items():
        median = statistics.median(r[0] for r in runs) / 1000
        p99 = statistics.median(r[1] for r in runs) / 1000
        worst = max(r[2] for r in runs) / 1000
        print(f"  {name:<14} median {median:7.1f} us   p99 {p99:7.1f} us   max {worst:8.1f} us")

    del positions, rows  # the throughput runs below start from a small process, like the CLI
    print(f"\nSimulated matches per second (normal vs normal, {args.games:,} matches per run, checks on):")
    wall: dict[int, list[float]] = {1: [], 2: []}
    per_cpu: dict[int, list[float]] = {1: [], 2: []}
    loads: list[float] = []
    for run in range(args.runs):
        for workers in (1, 2):
            loads.append(os.getloadavg()[0])
            cpu_before = _cpu_seconds()
            started = time.perf_counter()
            report = simulate("normal", "normal", args.games, seed=f"bench-{run}", workers=workers)
            elapsed = time.perf_counter() - started  # includes starting the worker processes
            cpu = _cpu_seconds() - cpu_before  # this process plus finished workers
            assert report.tally.violation_count == 0
            wall[workers].append(args.games / elapsed)
            per_cpu[workers].append(args.games / cpu)
    for workers in (1, 2):
        print(
            f"  {workers} worker{'s' if workers > 1 else ' '}: {statistics.median(wall[workers]):6.0f} matches/s wall "
            f"(runs: {', '.join(f'{x:.0f}' for x in wall[workers])}); "
            f"{statistics.median(per_cpu[workers]):6.0f} matches per CPU-second"
        )
    print(f"  wall speed-up with 2 workers: {statistics.median(wall[2]) / statistics.median(wall[1]):.2f}x")
    print(
        f"  1-minute load average during the runs: {min(loads):.1f}-{max(loads):.1f} "
        "(other processes on the machine share the cores; CPU-seconds are not affected by that)"
    )
    return 0


def _cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children (pool workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    sys.exit(main())
