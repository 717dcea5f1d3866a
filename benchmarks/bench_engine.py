"""Rules-engine throughput: complete random games/s, `apply` calls/s and `view` calls/s.

Run: ``python benchmarks/bench_engine.py [--runs 5] [--seconds 1.0]``. Each figure is the
median of ``--runs`` timed runs on one core; legal moves come from a seeded random source.
The random player picks uniformly among the legal actions (explore/plant/flag/unflag/end
turn), and in the ONLINE variant also times out now and then, so every ending appears.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.rules.engine import Action, ActionType, GameState, Variant

TIMEOUT_RATE = 0.05


def random_game(variant: Variant, rng: random.Random, log: list[Action] | None = None) -> GameState:
    """Play one complete game with uniformly random legal actions."""
    state = GameState(variant)
    online = variant is Variant.ONLINE
    while not state.over:
        seat = state.to_move
        assert seat is not None
        if online and rng.random() < TIMEOUT_RATE:
            action = Action(seat, ActionType.TIMEOUT)
            state.apply(action)
            if not state.over and state.phase in ("open_explore", "open_plant") and state.to_move == seat:
                auto = state.opening_auto_action(_Picker(rng))
                state.apply(auto)
                if log is not None:
                    log.append(action)
                    log.append(auto)
                continue
        else:
            action = random_legal_action(state, rng)
            state.apply(action)
        if log is not None:
            log.append(action)
    return state


class _Picker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, n: int) -> int:
        return self.rng.randrange(n)


def games_per_second(variant: Variant, seconds: float, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    games = actions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        log: list[Action] = []
        random_game(variant, rng, log)
        games += 1
        actions += len(log)
    elapsed = time.perf_counter() - start
    return games / elapsed, actions / games


def recorded_games(variant: Variant, count: int, seed: int) -> list[list[Action]]:
    rng = random.Random(seed)
    logs = []
    for _ in range(count):
        log: list[Action] = []
        random_game(variant, rng, log)
        logs.append(log)
    return logs


def apply_per_second(logs: list[list[Action]], variant: Variant) -> float:
    """Replay pre-recorded legal games: only `apply` (plus a constructor per game) is timed."""
    calls = 0
    start = time.perf_counter()
    for log in logs:
        state = GameState(variant)
        apply = state.apply
        for action in log:
            apply(action)
        calls += len(log)
    return calls / (time.perf_counter() - start)


def view_per_second(logs: list[list[Action]], variant: Variant) -> float:
    states = []
    for log in logs[:200]:
        state = GameState(variant)
        for action in log[: max(1, len(log) - 2)]:
            state.apply(action)
        states.append(state)
    calls = 0
    start = time.perf_counter()
    for _ in range(10):
        for state in states:
            state.view(0)
            state.view(1)
            calls += 2
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    for variant in (Variant.CPU, Variant.ONLINE):
        gps, apg, aps, vps = [], [], [], []
        logs = recorded_games(variant, 2000, seed=11)
        for run in range(args.runs):
            g, a = games_per_second(variant, args.seconds, seed=run)
            gps.append(g)
            apg.append(a)
            aps.append(apply_per_second(logs, variant))
            vps.append(view_per_second(logs, variant))
        print(
            f"{variant.value:6s}  games/s {statistics.median(gps):9,.0f}"
            f"  (actions/game {statistics.median(apg):5.1f})"
            f"  apply/s {statistics.median(aps):11,.0f}"
            f"  view/s {statistics.median(vps):9,.0f}"
            f"  [median of {args.runs}]"
        )


if __name__ == "__main__":
    main()
