"""`mine-duel simulate`: CPU-vs-CPU matches under the CPU variant's rules (seed chapter 13).

Example::

    mine-duel simulate --games 10000 --first hard --second normal --seed 7 --workers 2 --json

Both seats are played by the CPU levels — :func:`mineduel.shared.ai.cpu.next_step` for easy,
normal and hard, :func:`mineduel.shared.ai.expert.expert_step` (with the seat's memory of its own
earlier views) for expert — each seeing only its own view (V3). Match ``i`` draws all its
randomness from ``random.Random(f"{seed}:{i}")`` (R4), so a report is the same whatever the
worker count or order; only ``elapsed_seconds`` and ``matches_per_second`` vary. ``--offset``
sets the index of the first match, so one match of a large run can be played again alone
(``--games 1 --offset 4711``).

Chapter 13 says a simulation checks that the rules end and that the inference is consistent,
not how people will fare; every match checks:

* **termination** — the match ends within ``--max-actions`` CPU steps;
* **legality** — the engine accepts every CPU action (``apply`` returns no refusal);
* **inference** — at every step that used AI1, no cell classed *safe* holds any mine and
  every cell classed *mine* that is not the seat's own mine holds the opponent's mine
  (checked against the true :class:`GameState`). For expert the classes are its exact
  probabilities 0 and 1, so the check tests the probability engine's certainties in every match.

A violation is printed with the seed and match index and the exit status is 1.
Usage errors (and ``--chart`` without matplotlib) exit with 2.

JSON output (``--json``), schema ``mine-duel-simulate/1``; one object::

    {
      "schema": "mine-duel-simulate/1",
      "games": int, "seed": str, "offset": int, "workers": int, "max_actions": int,
      "first": "easy"|"normal"|"hard"|"expert", # seat 0, moves first (V1)
      "second": "easy"|"normal"|"hard"|"expert",# seat 1
      "results": {"first_win": int, "second_win": int, "draw": int},
      "rates": {                                # Wilson 95 % score intervals
        "first_win":  {"rate": float, "low": float, "high": float},
        "second_win": {...}, "draw": {...}
      },
      "reasons": {"ko": int, "all_flagged": int, "no_explorable": int, "no_plantable": int,
                  "unfinished": int},           # unfinished = hit --max-actions (a violation)
      "ko_by_loser": {"first": int, "second": int},   # who explored a mine
      "ko_cause": {"misjudged": int,   # AI3: chose an uncertain cell although a safe one existed
                   "guess": int,       # AI2: no safe cell, an uncertain one was a mine
                   "checkmate": int,   # C3: only mine cells were left to explore
                   "other": int},      # any other step (would mean a bug; always 0)
      "turns": {"mean": float, "median": int, "p95": int, "max": int,
                "histogram": {"<turn>": int, ...}},  # F3 turn number at the end;
                                                     # nearest-rank percentiles
      "actions": {"mean": float, "max": int},   # CPU steps per match
      "decisions": {                            # counts behind every random CPU choice
        "first" | "second": {
          "difficulty": str,
          "misjudgment": {"rate_target": float|null, "taken": int, "not_taken": int},
                                                # AI3 draws: safe and uncertain both explorable
                                                # (expert: null and 0, it never misjudges)
          "plant_area": {"all": int, "recent": int, "revealed": int,
                         "fell_back": {"recent": int, "revealed": int}},   # AI4 draws
          "marker": {"placed": int, "skipped": int},   # AI5 draws (a candidate existed)
          "steps": {"<StepKind>": int, ...}     # every step by branch (ai.StepKind values)
        }
      },
      "violations": [{"index": int, "seed": str, "check": "termination"|"legality"|
                      "inference", "detail": str}, ...],   # ascending index, at most 100
      "violation_count": int,
      "elapsed_seconds": float, "matches_per_second": float
    }
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import multiprocessing
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mineduel.shared.ai.cpu import MISJUDGMENT_RATE, Decision, Difficulty, PlantArea, StepKind, next_step
from mineduel.shared.ai.expert import expert_step
from mineduel.shared.ai.levels import Level, specified
from mineduel.shared.ai.memory import Memory
from mineduel.shared.rules.engine import ActionType, GameState, Reason, Refusal, Variant

SCHEMA: Final = "mine-duel-simulate/1"
MAX_ACTIONS: Final = 2000
"""Cap on CPU steps per match. A real match needs far fewer (each turn opens a cell)."""
MAX_REPORTED_VIOLATIONS: Final = 100
EXIT_VIOLATION: Final = 1
EXIT_USAGE: Final = 2
Z95: Final = 1.959963984540054

CPU_REASONS: Final = (Reason.KO, Reason.ALL_FLAGGED, Reason.NO_EXPLORABLE, Reason.NO_PLANTABLE)

# Per-seat decision counters, one list of ints per seat (cheap to update and to merge).
MISJ_TAKEN, MISJ_NOT, AREA_ALL, AREA_RECENT, AREA_REVEALED, FELL_RECENT, FELL_REVEALED = range(7)
MARK_PLACED, MARK_SKIPPED = 7, 8
N_COUNTERS: Final = 9
_KINDS: Final = tuple(StepKind)
_KIND_INDEX: Final = {kind: N_COUNTERS + i for i, kind in enumerate(_KINDS)}
_AREA_INDEX: Final = {PlantArea.ALL: AREA_ALL, PlantArea.RECENT: AREA_RECENT, PlantArea.REVEALED: AREA_REVEALED}
_FELL_INDEX: Final = {PlantArea.RECENT: FELL_RECENT, PlantArea.REVEALED: FELL_REVEALED}


def match_seed(seed: str | int, index: int) -> str:
    """The RNG seed string of match ``index`` (R4): reproducible whatever the worker count."""
    return f"{seed}:{index}"


@dataclass(frozen=True, slots=True)
class Violation:
    """A failed per-match check, with what is needed to play the match again."""

    index: int
    seed: str
    check: str  # "termination" | "legality" | "inference"
    detail: str


@dataclass(slots=True)
class Tally:
    """Mergeable totals over any set of matches (order-independent, so workers can add up)."""

    games: int = 0
    winners: list[int] = field(default_factory=lambda: [0, 0, 0])  # first, second, draw
    reasons: Counter[str] = field(default_factory=Counter)
    ko_by_loser: list[int] = field(default_factory=lambda: [0, 0])
    ko_causes: Counter[str] = field(default_factory=Counter)
    turns: Counter[int] = field(default_factory=Counter)
    actions_total: int = 0
    actions_max: int = 0
    counters: list[list[int]] = field(
        default_factory=lambda: [[0] * (N_COUNTERS + len(_KINDS)) for _ in range(2)]
    )
    violations: list[Violation] = field(default_factory=list)
    violation_count: int = 0

    def merge(self, other: Tally) -> None:
        self.games += other.games
        for i in range(3):
            self.winners[i] += other.winners[i]
        self.reasons.update(other.reasons)
        self.ko_causes.update(other.ko_causes)
        for i in range(2):
            self.ko_by_loser[i] += other.ko_by_loser[i]
            mine, theirs = self.counters[i], other.counters[i]
            for j, value in enumerate(theirs):
                mine[j] += value
        self.turns.update(other.turns)
        self.actions_total += other.actions_total
        self.actions_max = max(self.actions_max, other.actions_max)
        self.violation_count += other.violation_count
        self.violations.extend(other.violations)
        self.violations.sort(key=lambda v: v.index)
        del self.violations[MAX_REPORTED_VIOLATIONS:]


def play_match(
    first: Level | Difficulty | str,
    second: Level | Difficulty | str,
    seed: str | int,
    index: int,
    tally: Tally,
    max_actions: int = MAX_ACTIONS,
) -> GameState:
    """Play match ``index`` CPU against CPU, checking it as it goes; add it to ``tally``."""
    difficulties = (specified(first), specified(second))  # None: the expert
    memories: list[Memory | None] = [None, None]  # the expert's memory of its own views
    rng_seed = match_seed(seed, index)
    rng = random.Random(rng_seed)
    state = GameState(Variant.CPU)
    last_safe: list[int | None] = [None, None]  # the cell each seat last explored safely
    counters = tally.counters
    explore = ActionType.EXPLORE
    violations: list[Violation] = []
    actions = 0
    while not state.over:
        if actions >= max_actions:
            violations.append(
                Violation(index, rng_seed, "termination", f"no end after {max_actions} actions")
            )
            break
        seat = state.to_move
        assert seat is not None
        difficulty = difficulties[seat]
        if difficulty is None:
            taken = expert_step(state.view(seat), memories[seat], rng)
            memories[seat] = taken.memory
            decision = taken.decision
        else:
            decision = next_step(state.view(seat), difficulty, rng, last_safe[1 - seat])
        verdict = decision.classification
        if verdict is not None:
            mines = state.mines
            own, other = mines[seat], mines[1 - seat]
            wrong_safe = verdict.safe & (own | other)
            wrong_mine = verdict.mine & ~own & ~other
            if wrong_safe or wrong_mine:
                violations.append(
                    Violation(
                        index,
                        rng_seed,
                        "inference",
                        f"action {actions}, seat {seat}: classed safe but mined "
                        f"{wrong_safe:#x}, classed mine but empty {wrong_mine:#x}",
                    )
                )
        action = decision.action
        result = state.apply(action)
        actions += 1
        if isinstance(result, Refusal):
            violations.append(
                Violation(index, rng_seed, "legality", f"action {actions - 1} {action} refused: {result}")
            )
            break
        if action.type is explore and state.revealed >> action.cell & 1:  # type: ignore[operator]
            last_safe[seat] = action.cell
        row = counters[seat]
        row[_KIND_INDEX[decision.kind]] += 1
        if decision.misjudgment_possible:
            row[MISJ_TAKEN if decision.misjudged else MISJ_NOT] += 1
        elif decision.plant_area is not None:
            row[_AREA_INDEX[decision.plant_area]] += 1
            if decision.plant_fell_back:
                row[_FELL_INDEX[decision.plant_area]] += 1
        elif decision.marker_candidate:
            row[MARK_PLACED if decision.marker_placed else MARK_SKIPPED] += 1
    tally.games += 1
    outcome = state.outcome()
    if outcome is None:
        tally.winners[2] += 1
        tally.reasons["unfinished"] += 1
    else:
        tally.winners[2 if outcome.winner is None else outcome.winner] += 1
        tally.reasons[outcome.reason.value] += 1
        if outcome.reason is Reason.KO and outcome.winner is not None:
            tally.ko_by_loser[1 - outcome.winner] += 1
            tally.ko_causes[ko_cause(decision)] += 1
    tally.turns[state.turn] += 1
    tally.actions_total += actions
    tally.actions_max = max(tally.actions_max, actions)
    if violations:
        tally.violation_count += len(violations)
        tally.violations.extend(violations[:MAX_REPORTED_VIOLATIONS])
    return state


KO_CAUSES: Final = ("misjudged", "guess", "checkmate", "other")


def ko_cause(decision: Decision) -> str:
    """Why the step that explored a mine was taken (one of :data:`KO_CAUSES`)."""
    if decision.kind is StepKind.EXPLORE_MINE:
        return "checkmate"
    if decision.kind is StepKind.EXPLORE_UNCERTAIN:
        return "misjudged" if decision.misjudged else "guess"
    return "other"


def _run_chunk(job: tuple[str, str, str, int, int, int]) -> Tally:
    first, second, seed, start, stop, max_actions = job
    tally = Tally()
    for index in range(start, stop):
        play_match(Level(first), Level(second), seed, index, tally, max_actions)
    return tally


def _worker_init() -> None:
    """Give workers the default SIGTERM/SIGINT behaviour, whatever handlers the parent had.

    A handler inherited through fork (test runners, frameworks) can keep a worker alive when
    the pool terminates it; with the defaults it ends, and Ctrl-C is handled by the parent.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _chunks(offset: int, games: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(offset, offset + games, size):
        yield start, min(start + size, offset + games)


@dataclass(slots=True)
class Report:
    """A finished run: its parameters, its totals and how long it took."""

    first: Level
    second: Level
    seed: str
    offset: int
    workers: int
    max_actions: int
    tally: Tally
    elapsed: float

    @property
    def games(self) -> int:
        return self.tally.games

    def rate(self, which: int) -> tuple[float, float, float]:
        """``(rate, low, high)`` of first wins (0), second wins (1) or draws (2)."""
        return wilson(self.tally.winners[which], self.tally.games)

    def turn_stats(self) -> dict[str, float | int]:
        return distribution_stats(self.tally.turns)

    def to_json(self) -> dict[str, Any]:
        t = self.tally
        names = ("first_win", "second_win", "draw")
        turns = self.turn_stats()
        reasons = {reason.value: t.reasons.get(reason.value, 0) for reason in CPU_REASONS}
        reasons["unfinished"] = t.reasons.get("unfinished", 0)
        return {
            "schema": SCHEMA,
            "games": t.games,
            "seed": self.seed,
            "offset": self.offset,
            "workers": self.workers,
            "max_actions": self.max_actions,
            "first": self.first.value,
            "second": self.second.value,
            "results": dict(zip(names, t.winners, strict=True)),
            "rates": {
                name: dict(zip(("rate", "low", "high"), self.rate(i), strict=True))
                for i, name in enumerate(names)
            },
            "reasons": reasons,
            "ko_by_loser": {"first": t.ko_by_loser[0], "second": t.ko_by_loser[1]},
            "ko_cause": {cause: t.ko_causes.get(cause, 0) for cause in KO_CAUSES},
            "turns": {**turns, "histogram": {str(k): t.turns[k] for k in sorted(t.turns)}},
            "actions": {
                "mean": t.actions_total / t.games if t.games else 0.0,
                "max": t.actions_max,
            },
            "decisions": {
                "first": seat_decisions(t.counters[0], self.first),
                "second": seat_decisions(t.counters[1], self.second),
            },
            "violations": [
                {"index": v.index, "seed": v.seed, "check": v.check, "detail": v.detail}
                for v in t.violations
            ],
            "violation_count": t.violation_count,
            "elapsed_seconds": round(self.elapsed, 3),
            "matches_per_second": round(t.games / self.elapsed, 1) if self.elapsed > 0 else None,
        }


def seat_decisions(row: Sequence[int], level: Level) -> dict[str, Any]:
    """The JSON ``decisions`` entry of one seat."""
    difficulty = specified(level)
    return {
        "difficulty": level.value,
        "misjudgment": {
            "rate_target": None if difficulty is None else MISJUDGMENT_RATE[difficulty],
            "taken": row[MISJ_TAKEN],
            "not_taken": row[MISJ_NOT],
        },
        "plant_area": {
            "all": row[AREA_ALL],
            "recent": row[AREA_RECENT],
            "revealed": row[AREA_REVEALED],
            "fell_back": {"recent": row[FELL_RECENT], "revealed": row[FELL_REVEALED]},
        },
        "marker": {"placed": row[MARK_PLACED], "skipped": row[MARK_SKIPPED]},
        "steps": {kind.value: row[_KIND_INDEX[kind]] for kind in _KINDS},
    }


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float, float]:
    """Rate and Wilson score interval (95 % by default); ``(0, 0, 1)`` for ``n == 0``."""
    if n == 0:
        return 0.0, 0.0, 1.0
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return p, low, high


def distribution_stats(histogram: Counter[int]) -> dict[str, float | int]:
    """Mean, nearest-rank median and 95th percentile, and maximum of a value histogram."""
    n = sum(histogram.values())
    if n == 0:
        return {"mean": 0.0, "median": 0, "p95": 0, "max": 0}
    values = sorted(histogram)
    mean = sum(v * histogram[v] for v in values) / n

    def rank(q: float) -> int:
        need = max(1, math.ceil(q * n))
        seen = 0
        for v in values:
            seen += histogram[v]
            if seen >= need:
                return v
        return values[-1]

    return {"mean": round(mean, 3), "median": rank(0.5), "p95": rank(0.95), "max": values[-1]}


def simulate(
    first: Level | Difficulty | str,
    second: Level | Difficulty | str,
    games: int,
    seed: str | int = 0,
    *,
    workers: int = 1,
    offset: int = 0,
    max_actions: int = MAX_ACTIONS,
    progress: Callable[[int, int], None] | None = None,
    chunk: int | None = None,
) -> Report:
    """Play ``games`` matches (indices ``offset`` …) on ``workers`` processes and add them up."""
    first, second, seed = Level(first), Level(second), str(seed)
    if chunk is None:
        chunk = max(1, min(500, games // (workers * 8) or 1))
    jobs = [
        (first.value, second.value, seed, start, stop, max_actions)
        for start, stop in _chunks(offset, games, chunk)
    ]
    total = Tally()
    started = time.perf_counter()
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            total.merge(_run_chunk(job))
            if progress:
                progress(total.games, games)
    else:
        # Objects that exist now are frozen while the workers fork, so the workers' garbage
        # collector never walks (and copy-on-write copies) the parent's memory.
        gc.freeze()
        try:
            pool = multiprocessing.get_context().Pool(workers, initializer=_worker_init)
        finally:
            gc.unfreeze()
        try:
            for part in pool.imap_unordered(_run_chunk, jobs):
                total.merge(part)
                if progress:
                    progress(total.games, games)
            pool.close()  # normal end: workers leave on their own
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    elapsed = time.perf_counter() - started
    return Report(first, second, seed, offset, max(1, workers), max_actions, total, elapsed)


# ----- output ---------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:5.1f} %"


def format_report(report: Report) -> str:
    """The human-readable report."""
    t = report.tally
    n = t.games
    lines = [
        (
            f"MINE DUEL simulate: {n:,} matches, first={report.first} second={report.second}, "
            f"seed {report.seed!r}, offset {report.offset}, {report.workers} worker(s), "
            f"{report.elapsed:.1f} s ({n / report.elapsed if report.elapsed else 0:,.0f} matches/s)"
        ),
        "",
        f"{'Result':<26}{'count':>9}{'rate':>10}   95 % CI (Wilson)",
    ]
    labels = (f"first ({report.first}) wins", f"second ({report.second}) wins", "draws")
    for i, label in enumerate(labels):
        rate, low, high = report.rate(i)
        lines.append(
            f"  {label:<24}{t.winners[i]:>9,}{_pct(rate):>10}   [{100 * low:.1f} %, {100 * high:.1f} %]"
        )
    lines += ["", "End reasons"]
    reasons = [r.value for r in CPU_REASONS] + (["unfinished"] if t.reasons.get("unfinished") else [])
    for reason in reasons:
        count = t.reasons.get(reason, 0)
        extra = ""
        if reason == Reason.KO.value:
            extra = (
                f"   (explored a mine: first {t.ko_by_loser[0]:,}, second {t.ko_by_loser[1]:,}; "
                + ", ".join(f"{cause} {t.ko_causes.get(cause, 0):,}" for cause in KO_CAUSES[:3])
                + ")"
            )
        lines.append(f"  {reason:<24}{count:>9,}{_pct(count / n if n else 0):>10}{extra}")
    ts = report.turn_stats()
    lines += [
        "",
        (
            f"Turns per match: mean {ts['mean']:.2f}, median {ts['median']}, p95 {ts['p95']}, max {ts['max']}"
            f"   (CPU steps per match: mean {t.actions_total / n if n else 0:.1f}, max {t.actions_max})"
        ),
        "",
        f"{'Random CPU decisions':<38}{'first (' + report.first + ')':>20}{'second (' + report.second + ')':>20}",
    ]
    seats = [seat_decisions(t.counters[0], report.first), seat_decisions(t.counters[1], report.second)]

    def row(label: str, values: Sequence[str]) -> None:
        lines.append(f"  {label:<36}{values[0]:>20}{values[1]:>20}")

    def share(part: int, whole: int) -> str:
        return f"{part:,} ({100 * part / whole:.1f} %)" if whole else f"{part:,}"

    misj = [(s["misjudgment"]["taken"], s["misjudgment"]["not_taken"]) for s in seats]
    row(
        "AI3 target misjudgment rate",
        [
            "none" if s["misjudgment"]["rate_target"] is None else f"{100 * s['misjudgment']['rate_target']:.0f} %"
            for s in seats
        ],
    )
    row("AI3 misjudged (safe+uncertain)", [share(a, a + b) for a, b in misj])
    row("AI3 not misjudged", [f"{b:,}" for _, b in misj])
    areas = [s["plant_area"] for s in seats]
    plants = [a["all"] + a["recent"] + a["revealed"] for a in areas]
    for key, target in (("all", 60), ("recent", 25), ("revealed", 15)):
        row(f"AI4 area {key} (target {target} %)", [share(a[key], p) for a, p in zip(areas, plants, strict=True)])
    row("AI4 fell back to all (recent)", [f"{a['fell_back']['recent']:,}" for a in areas])
    row("AI4 fell back to all (revealed)", [f"{a['fell_back']['revealed']:,}" for a in areas])
    marks = [(s["marker"]["placed"], s["marker"]["skipped"]) for s in seats]
    row("AI5 marker placed (target 70 %)", [share(a, a + b) for a, b in marks])
    row("AI5 marker skipped", [f"{b:,}" for _, b in marks])
    for kind in (StepKind.MARK_CHECKMATE, StepKind.EXPLORE_MINE, StepKind.RECOVER_UNFLAG, StepKind.PLANT_RECOVER_UNFLAG):
        row(f"steps: {kind.value}", [f"{s['steps'][kind.value]:,}" for s in seats])
    lines.append("")
    if t.violation_count:
        lines.append(f"VIOLATIONS: {t.violation_count}")
        for v in t.violations:
            lines.append(
                f"  seed {report.seed!r}, match {v.index} (rng seed {v.seed!r}): {v.check}: {v.detail}"
            )
    else:
        lines.append(
            f"Checks passed: every match ended within {report.max_actions} steps, every CPU action "
            "was legal, every AI1 classification matched the true board."
        )
    return "\n".join(lines)


def require_matplotlib() -> Any:
    """Import matplotlib (the optional ``chart`` extra) with a headless backend, or raise."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError(
            "--chart needs matplotlib, which is not installed; install the optional extra with "
            "`pip install 'mine-duel[chart]'` (or `pip install matplotlib`)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw_chart(reports: Sequence[Report], path: str, title: str | None = None) -> None:
    """Stacked result bars with Wilson intervals, and the turns distribution, into ``path``."""
    plt = require_matplotlib()
    fig, (ax_res, ax_turns) = plt.subplots(
        1, 2, figsize=(13, 0.55 * len(reports) + 2.8), gridspec_kw={"width_ratios": [3, 2]}
    )
    labels = [f"{r.first} (1st) vs {r.second} (2nd)" for r in reports]
    ys = list(range(len(reports)))[::-1]
    colours = ("#3b6fd6", "#9a9a9a", "#e0609a")
    names = ("first wins", "draw", "second wins")
    order = (0, 2, 1)  # first win, draw, second win from left to right
    lefts = [0.0] * len(reports)
    for colour, name, which in zip(colours, names, order, strict=True):
        widths = [100 * r.rate(which)[0] for r in reports]
        ax_res.barh(ys, widths, left=lefts, color=colour, label=name, height=0.7)
        for y, left, width in zip(ys, lefts, widths, strict=True):
            if width >= 6:
                ax_res.text(left + width / 2, y, f"{width:.1f}", ha="center", va="center", color="white", fontsize=8)
        lefts = [a + b for a, b in zip(lefts, widths, strict=True)]
    for y, r in zip(ys, reports, strict=True):
        rate, low, high = r.rate(0)
        ax_res.errorbar(100 * rate, y, xerr=[[100 * (rate - low)], [100 * (high - rate)]], fmt="none", ecolor="black", capsize=3)
    ax_res.set_yticks(ys, labels)
    ax_res.set_xlim(0, 100)
    ax_res.set_xlabel("% of matches (black: 95 % Wilson interval of the first player's win rate)")
    ax_res.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18 if len(reports) > 3 else -0.3), ncol=3, frameon=False)
    for r, label in zip(reports, labels, strict=True):
        hist = r.tally.turns
        xs = sorted(hist)
        ended = 0
        ys_cdf = []
        for x in xs:
            ended += hist[x]
            ys_cdf.append(100 * ended / r.games)
        ax_turns.step(xs, ys_cdf, where="post", label=label, linewidth=1.2)
    ax_turns.set_xlabel("turn number (F3)")
    ax_turns.set_ylabel("% of matches over by this turn")
    ax_turns.set_ylim(0, 100)
    ax_turns.grid(alpha=0.3)
    ax_turns.legend(fontsize=7)
    games = sorted({r.games for r in reports})
    fig.suptitle(title or f"MINE DUEL CPU vs CPU ({', '.join(f'{g:,}' for g in games)} matches per row)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class _ProgressBar:
    """A one-line progress bar on standard error (only used when it is a terminal)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // total if total else width
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} {rate:,.0f} matches/s"
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mine-duel simulate",
        description="Play CPU-vs-CPU matches (CPU variant rules), check every match and report the results.",
    )
    difficulties = [level.value for level in Level]
    parser.add_argument("--games", type=int, default=1000, help="number of matches (default 1000)")
    parser.add_argument("--first", choices=difficulties, default="normal", help="difficulty of the first player (seat 0)")
    parser.add_argument("--second", choices=difficulties, default="normal", help="difficulty of the second player (seat 1)")
    parser.add_argument("--seed", default="0", help="run seed; match i uses random.Random(f'{seed}:{i}') (default 0)")
    parser.add_argument("--offset", type=int, default=0, help="index of the first match (replay one match of a run)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    parser.add_argument("--max-actions", type=int, default=MAX_ACTIONS, help=f"step cap per match (default {MAX_ACTIONS})")
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema in the module docstring)")
    parser.add_argument("--chart", metavar="FILE.png", help="draw the result with matplotlib")
    args = parser.parse_args(argv)
    if args.games < 1 or args.workers < 1 or args.max_actions < 1 or args.offset < 0:
        parser.error("--games, --workers and --max-actions must be positive, --offset not negative")
    if args.chart:
        try:
            require_matplotlib()
        except RuntimeError as exc:
            print(f"mine-duel simulate: {exc}", file=sys.stderr)
            return EXIT_USAGE
    progress = _ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    report = simulate(
        args.first,
        args.second,
        args.games,
        args.seed,
        workers=args.workers,
        offset=args.offset,
        max_actions=args.max_actions,
        progress=progress,
    )
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(report))
    for v in report.tally.violations:
        print(
            f"mine-duel simulate: violation ({v.check}) in match {v.index} of seed {report.seed!r} "
            f"(rng seed {v.seed!r}): {v.detail}",
            file=sys.stderr,
        )
    if args.chart:
        draw_chart([report], args.chart)
    return EXIT_VIOLATION if report.tally.violation_count else 0
