"""CPU AI and simulator speed: decision time on real match positions, matches per second.

Usage::

    .venv/bin/python benchmarks/bench_ai.py [--runs 5] [--matches 300] [--games 2000]
        [--expert-matches 60] [--ablation 0] [--ablation-against hard] [--only expert]

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

3. Expert (issue 18). ``--expert-matches`` matches of expert against each level (expert too)
   are played once; at every expert decision the view and the memory it had are kept. Each run
   times, on one core, the exact probability count alone (``mine_probabilities`` with the memory's
   evidence) and the whole expert decision (``expert_step``: memory update, count, choice), and the
   analysis of whole matches (``explore_risks`` for both seats). Medians over ``--runs``.
4. ``--ablation N``: N matches per seat order of the expert *without* reserve markers against hard,
   with the 95 % Wilson interval (what the probabilities alone are worth; docs/AI.md).

Targets (issue): median decision < 0.2 ms, p99 < 2 ms; >= 400 matches/s per core and close
to twice that on two workers. Expert (issue 18): median < 5 ms, p99 < 50 ms per decision, a
whole match's analysis < 1 s.
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

from mineduel.shared.ai.analysis import explore_risks
from mineduel.shared.ai.cpu import Difficulty, next_step
from mineduel.shared.ai.expert import expert_step
from mineduel.shared.ai.levels import CpuPlayer, Level
from mineduel.shared.ai.memory import Memory, remember
from mineduel.shared.ai.probability import mine_probabilities
from mineduel.shared.cli.simulate import simulate, wilson
from mineduel.shared.rules.bitboard import FULL
from mineduel.shared.rules.engine import ActionType, GameState, Phase, Variant
from mineduel.shared.rules.views import SeatView
from mineduel.shared.rules.vocabulary import Action

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


ExpertPosition = tuple[SeatView, "Memory | None"]


def collect_expert_positions(matches: int) -> tuple[list[ExpertPosition], list[list[Action]], tuple[int, int, int]]:
    """Every expert decision (view, memory before it) over ``matches`` matches against each level,
    the expert in either seat; the matches' actions, for the analysis timing; and (opponent plants,
    plants its memory pinned, pinned to one cell)."""
    positions: list[ExpertPosition] = []
    records: list[list[Action]] = []
    plants = pinned = exact = 0
    opponents = list(Level)
    for index in range(matches):
        opponent = opponents[index % len(opponents)]
        levels = (Level.EXPERT, opponent) if index % 2 == 0 else (opponent, Level.EXPERT)
        players = [CpuPlayer(levels[0]), CpuPlayer(levels[1])]
        rng = random.Random(f"bench-expert:{index}")
        state = GameState(Variant.CPU)
        last_safe: list[int | None] = [None, None]
        actions: list[Action] = []
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            if players[seat].level is Level.EXPERT:
                positions.append((view, players[seat].memory))
            decision = players[seat].step(view, rng, last_safe[1 - seat])
            state.play(decision.action)
            actions.append(decision.action)
            action = decision.action
            if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                last_safe[seat] = action.cell
        records.append(actions)
        for player in players:
            if player.level is Level.EXPERT and player.memory is not None:
                plants += player.memory.opponent_plants
                pinned += len(player.memory.evidence.pins)
                exact += sum(pin.bit_count() == 1 for pin in player.memory.evidence.pins)
    return positions, records, (plants, pinned, exact)


def time_expert(positions: list[ExpertPosition], seed: int) -> tuple[list[int], list[int], dict[str, list[int]]]:
    """Nanoseconds per call: the probability count, the whole decision, and the decision by phase."""
    rng = random.Random(seed)
    clock = time.perf_counter_ns
    count: list[int] = []
    decide: list[int] = []
    by_phase: dict[str, list[int]] = {}
    for view, memory in positions:
        if view.phase is not Phase.OPEN_EXPLORE:
            after = remember(memory, view)
            started = clock()
            mine_probabilities(view, after.opponent_plants, after.evidence)
            count.append(clock() - started)
        started = clock()
        expert_step(view, memory, rng)
        spent = clock() - started
        decide.append(spent)
        by_phase.setdefault(view.phase.value, []).append(spent)
    return count, decide, by_phase


def expert_section(args: argparse.Namespace) -> None:
    """Section 3: the probability engine, the expert decision and the analysis, on one core."""
    positions, records, (plants, pinned, exact) = collect_expert_positions(args.expert_matches)
    closed = [(FULL & ~view.revealed).bit_count() for view, _ in positions]
    print(
        f"\nExpert decision time: {len(positions):,} expert positions from {args.expert_matches} matches "
        f"(against easy/normal/hard/expert, both seats; closed cells {min(closed)}-{max(closed)}), "
        f"{args.runs} runs, one core"
    )
    rows: dict[str, list[tuple[float, float, float]]] = {}
    analysis: list[float] = []
    for run in range(args.runs):
        count, decide, by_phase = time_expert(positions, run)
        for name, values in (("probabilities", count), ("expert decision", decide), *sorted(by_phase.items())):
            values.sort()
            rows.setdefault(name, []).append((percentile(values, 0.5), percentile(values, 0.99), float(values[-1])))
        started = time.perf_counter()
        for actions in records:
            explore_risks(actions, 0)
            explore_risks(actions, 1)
        analysis.append((time.perf_counter() - started) / len(records))
    for name, runs in rows.items():
        median = statistics.median(r[0] for r in runs) / 1e6
        p99 = statistics.median(r[1] for r in runs) / 1e6
        worst = max(r[2] for r in runs) / 1e6
        label = name if name in ("probabilities", "expert decision") else f"  in {name}"
        print(f"  {label:<18} median {median:7.2f} ms   p99 {p99:7.2f} ms   max {worst:8.2f} ms")
    print(
        f"  analysis of a whole match (explore_risks for both seats): {1000 * statistics.median(analysis):.0f} ms "
        "per match (median over runs)"
    )
    print(
        f"  memory: {pinned:,} of the opponents' {plants:,} plants pinned ({100 * pinned / max(1, plants):.0f} %), "
        f"{exact:,} to one cell ({100 * exact / max(1, plants):.0f} %)"
    )


def ablation_section(games: int, opponent: Difficulty = Difficulty.HARD) -> None:
    """Section 4: the expert without reserve markers against a specified level, both seat orders."""
    print(f"\nExpert without reserve markers against {opponent}, {games:,} matches per seat order:")
    for expert_seat in (0, 1):
        wins = 0
        for index in range(games):
            rng = random.Random(f"ablation-{expert_seat}:{index}")
            state = GameState(Variant.CPU)
            memory: Memory | None = None
            last_safe: list[int | None] = [None, None]
            while not state.over:
                seat = state.to_move
                assert seat is not None
                view = state.view(seat)
                if seat == expert_seat:
                    step = expert_step(view, memory, rng, reserves=False)
                    memory = step.memory
                    action = step.decision.action
                else:
                    action = next_step(view, opponent, rng, last_safe[1 - seat]).action
                state.play(action)
                if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                    last_safe[seat] = action.cell
            outcome = state.outcome()
            wins += outcome is not None and outcome.winner == expert_seat
        rate, low, high = wilson(wins, games)
        order = "expert first" if expert_seat == 0 else "expert second"
        print(f"  {order:<14} wins {wins:,}/{games:,} = {100 * rate:.1f} % [{100 * low:.1f}, {100 * high:.1f}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matches", type=int, default=300, help="matches whose positions are timed")
    parser.add_argument("--games", type=int, default=2000, help="matches per throughput run")
    parser.add_argument("--expert-matches", type=int, default=60, help="matches whose expert positions are timed")
    parser.add_argument("--ablation", type=int, default=0, help="matches per seat order without reserve markers")
    parser.add_argument(
        "--ablation-against", choices=[d.value for d in Difficulty], default="hard", help="the ablation's opponent"
    )
    parser.add_argument("--only", choices=["expert"], help="run only the expert sections (3 and 4)")
    args = parser.parse_args(argv)
    if args.only == "expert":
        expert_section(args)
        if args.ablation:
            ablation_section(args.ablation, Difficulty(args.ablation_against))
        return 0

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
    expert_section(args)
    if args.ablation:
        ablation_section(args.ablation, Difficulty(args.ablation_against))
    return 0


def _cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children (pool workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    sys.exit(main())
