"""Memory held by the server's match history: bytes per record action and per finished match.

Run: ``.venv/bin/python benchmarks/bench_match_memory.py [--matches 1000] [--seed 1]``.

It plays ``--matches`` complete ONLINE matches through ``LiveMatch`` with uniformly random legal
actions (and now and then a deadline that runs out, or a resignation), from one fixed seed, and
measures with tracemalloc what stays allocated while they are all alive:

- *per finished match*: everything the ``LiveMatch`` objects hold (engine state, stream, history);
- *per action*: the history alone — the finished matches minus freshly started ones, each
  without its engine state (measured by swapping every ``state`` for one shared object), divided
  by the number of record actions.

Also prints the time to play one action (``apply``/``expire`` included), measured with
tracemalloc off, so a smaller history is not bought with a slower server.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from collections.abc import Callable

from mineduel.server.match import LiveMatch
from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.rules.engine import ActionType, GameState, Variant

TURN_SECONDS = 20.0
TIMEOUT_RATE = 0.04  # share of steps where the mover lets the deadline run out
RESIGN_RATE = 0.002


def start(rng: random.Random, index: int, now: float) -> LiveMatch:
    """A new match with seeds, ids and names shaped like the server's."""
    a, b = 2 * index + 1, 2 * index + 2
    return LiveMatch.start(
        match_id=rng.randbytes(8).hex(),
        number=1,
        seats_in_join_order=(a, b),
        first_sid=None,
        server_seed=rng.randbytes(32).hex(),
        client_seeds=(rng.randbytes(16).hex(), rng.randbytes(16).hex()),
        now=now,
        wall=now,
        turn_seconds=TURN_SECONDS,
        names_by_sid={a: f"player{a}", b: f"player{b}"},
    )


def play(rng: random.Random, index: int) -> LiveMatch:
    """One complete match of random legal play, on a clock that starts in 2023."""
    now = 1_700_000_000.0 + rng.uniform(0, 1000)
    match = start(rng, index, now)
    while not match.over:
        deadline = match.deadline
        assert deadline is not None
        roll = rng.random()
        step = now + rng.uniform(0.3, 6.0)
        if roll < RESIGN_RATE:
            match.end_by(ActionType.RESIGN, rng.randrange(2), min(step, deadline), rng.randbytes)
        elif roll < TIMEOUT_RATE or step >= deadline:
            match.expire(deadline, rng.randbytes)
            now = deadline
        else:
            now = step
            result = match.apply(random_legal_action(match.state, rng), at=now, randbytes=rng.randbytes)
            assert isinstance(result, list), result
    match.ended_wall = now
    return match


def traced(build: Callable[[], list[LiveMatch]]) -> tuple[int, list[LiveMatch]]:
    """Bytes still allocated after ``build()`` (its garbage collected), and its result."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    matches = build()
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before, matches


def without_states(matches: list[LiveMatch]) -> int:
    """Bytes freed by giving every match one shared engine state (the history's neighbour)."""
    shared = GameState(Variant.ONLINE)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for match in matches:
        match.state = shared
    gc.collect()
    return before - tracemalloc.get_traced_memory()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n = args.matches

    warm = random.Random(0)
    for i in range(20):  # first-use caches (interned strings, enum lookups) before measuring
        play(warm, i)

    rng = random.Random(args.seed)
    began = time.perf_counter()
    timed = [play(rng, i) for i in range(n)]
    seconds = time.perf_counter() - began
    timed_actions = sum(m.seq for m in timed)
    del timed

    tracemalloc.start()
    rng = random.Random(args.seed)
    finished_bytes, finished = traced(lambda: [play(rng, i) for i in range(n)])
    actions = sum(m.seq for m in finished)
    plants = sum(len(m.salts) for m in finished)
    finished_states = without_states(finished)
    del finished

    rng = random.Random(args.seed)
    fresh_bytes, fresh = traced(lambda: [start(rng, i, 1_700_000_000.0) for i in range(n)])
    fresh_states = without_states(fresh)
    del fresh
    tracemalloc.stop()

    history = (finished_bytes - finished_states) - (fresh_bytes - fresh_states)
    print(f"{n} matches (seed {args.seed}): {actions} actions ({actions / n:.1f} per match), {plants} plants")
    print(f"per finished match: {finished_bytes / n:,.0f} bytes (LiveMatch with state, stream and history)")
    print(f"  of which engine state {finished_states / n:,.0f}, fresh match without state {(fresh_bytes - fresh_states) / n:,.0f}")
    print(f"history: {history / n:,.0f} bytes per match, {history / actions:.1f} bytes per action")
    print(f"play: {seconds / timed_actions * 1e6:.1f} us per action (tracemalloc off)")


if __name__ == "__main__":
    main()
