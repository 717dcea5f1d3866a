#!/usr/bin/env python3
"""Regenerate docs/BALANCE.md and docs/balance.png from CPU-vs-CPU simulations.

    .venv/bin/python scripts/make_balance.py [--games 10000] [--expert-games 2000] [--seed balance] [--workers N]

Plays all sixteen ordered level pairings (first player × second player): the nine of the specified
difficulties with ``--games`` matches each, the seven with the expert (issue 18, slower per match)
with ``--expert-games`` each, with ``mineduel.shared.cli.simulate`` (match ``i`` of pairing ``F-S``
uses the run seed ``{seed}-F-S``, so every figure is reproducible). Writes the tables between the
``generated`` markers of docs/BALANCE.md and keeps the hand-written reading between the
``reading`` markers; draws docs/balance.png (needs matplotlib: ``pip install 'mine-duel[chart]'``).
Exits 1 if any simulated match broke a check (the report names seed and match index).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime
from itertools import product
from pathlib import Path

from mineduel.shared.ai.cpu import MISJUDGMENT_RATE, Difficulty, StepKind
from mineduel.shared.ai.levels import Level, specified
from mineduel.shared.cli.simulate import (
    _KIND_INDEX,
    CPU_REASONS,
    MISJ_NOT,
    MISJ_TAKEN,
    Report,
    draw_chart,
    require_matplotlib,
    simulate,
    wilson,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "BALANCE.md"
CHART = ROOT / "docs" / "balance.png"
GEN_START, GEN_END = "<!-- generated:start -->", "<!-- generated:end -->"
READ_START, READ_END = "<!-- reading:start -->", "<!-- reading:end -->"
COMMAND = ".venv/bin/python scripts/make_balance.py"

DEFAULT_READING = "(Write the reading of the tables here; make_balance.py keeps this part.)"


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def ci(rate: tuple[float, float, float]) -> str:
    """``rate [low, high]`` in %, with two decimals for rare events (draws) so bounds stay visible."""
    r, low, high = rate
    digits = 2 if high < 0.02 else 1
    return f"{pct(r, digits)} [{pct(low, digits)}, {pct(high, digits)}]"


def causes(report: Report) -> str:
    """Shares of matches lost by a misjudgment (AI3), a forced guess (AI2) and checkmate (C3)."""
    n = report.games
    return " / ".join(pct(report.tally.ko_causes.get(c, 0) / n) for c in ("misjudged", "guess", "checkmate"))


def generated(reports: list[Report], args: argparse.Namespace, elapsed: float) -> str:
    by_pair = {(r.first, r.second): r for r in reports}
    specified_reports = [r for r in reports if specified(r.first) and specified(r.second)]
    expert_reports = [r for r in reports if r not in specified_reports]
    games = specified_reports[0].games
    expert_games = expert_reports[0].games if expert_reports else 0
    violations = sum(r.tally.violation_count for r in reports)
    first_wins = sum(r.tally.winners[0] for r in specified_reports)
    total = sum(r.games for r in specified_reports)
    matches = sum(r.games for r in reports)
    today = datetime.now().astimezone().date()  # the local calendar date, as date.today() gave
    lines = [
        GEN_START,
        "",
        (
            f"Generated {today.isoformat()} by `{COMMAND} --games {args.games} --expert-games "
            f"{args.expert_games} --seed {args.seed}` ({len(specified_reports)} pairings of the specified "
            f"levels × {games:,} matches and {len(expert_reports)} pairings with expert × {expert_games:,} "
            f"matches = {matches:,} matches, {elapsed:.0f} s on {args.workers} worker(s)). Pairing `F-S` used "
            f"the run seed `{args.seed}-F-S`; rerun any pairing with `mine-duel simulate --games N --first F "
            f"--second S --seed {args.seed}-F-S` (N = {games} or, with expert, {expert_games}). Intervals are "
            "95 % Wilson score intervals, in %."
        ),
        "",
        (
            "Every match passed the chapter-13 checks (it ended, every CPU action was legal, AI1 was "
            "never wrong)."
            if not violations
            else f"**{violations} chapter-13 check violations** — see the script's output."
        ),
        "",
        (
            f"Over the nine pairings of the specified levels (each equally often in each seat) the first player won "
            f"{ci(wilson(first_wins, total))} % of {total:,} matches; "
            f"{sum(r.tally.winners[2] for r in specified_reports):,} of them were drawn."
        ),
        "",
        "## All pairings (first player × second player)",
        "",
        (
            "| first | second | matches | first wins % | second wins % | draws % | turns mean / median / p95 / max "
            "| ko | all_flagged | no_explorable | no_plantable | KO after a misjudgment / guess / checkmate, % |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        t = r.turn_stats()
        reasons = " | ".join(f"{r.tally.reasons.get(x.value, 0):,}" for x in CPU_REASONS)
        lines.append(
            f"| {r.first} | {r.second} | {r.games:,} | {ci(r.rate(0))} | {ci(r.rate(1))} | {ci(r.rate(2))} "
            f"| {t['mean']:.1f} / {t['median']} / {t['p95']} / {t['max']} | {reasons} "
            f"| {causes(r)} |"
        )
    lines += [
        "",
        "## Each pairing over both seat orders",
        "",
        (
            "`A vs B` adds up the matches with A first and those with B first; a mirror "
            "pairing (A vs A) is just its row above, split by seat."
        ),
        "",
        "| A | B | matches | A wins % | B wins % | draws % | A as first wins % | A as second wins % |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    diffs = [level for level in Level if any(r.first == level for r in reports)]
    for i, a in enumerate(diffs):
        for b in diffs[i:]:
            if a == b:
                r = by_pair[(a, a)]
                n = r.games
                lines.append(
                    f"| {a} | {b} | {n:,} | — | — | {ci(r.rate(2))} | {ci(r.rate(0))} | {ci(r.rate(1))} |"
                )
                continue
            ab, ba = by_pair[(a, b)], by_pair[(b, a)]
            n = ab.games + ba.games
            a_wins = ab.tally.winners[0] + ba.tally.winners[1]
            b_wins = ab.tally.winners[1] + ba.tally.winners[0]
            draws = ab.tally.winners[2] + ba.tally.winners[2]
            lines.append(
                f"| {a} | {b} | {n:,} | {ci(wilson(a_wins, n))} | {ci(wilson(b_wins, n))} | {ci(wilson(draws, n))} "
                f"| {ci(ab.rate(0))} | {ci(ba.rate(1))} |"
            )
    lines += expert_table(expert_reports)
    lines += [
        "",
        "## First player's win rate (rows: first player, columns: second player), %",
        "",
        "| first \\ second | " + " | ".join(d.value for d in diffs) + " |",
        "| --- | " + " | ".join("---:" for _ in diffs) + " |",
    ]
    for f in diffs:
        lines.append(f"| {f} | " + " | ".join(pct(by_pair[(f, s)].rate(0)[0]) for s in diffs) + " |")
    lines += [
        "",
        "## The AI3 rate as played (all pairings, both seats; the expert has no misjudgment rate)",
        "",
        "| difficulty | target % | misjudged / times safe and uncertain cells were both explorable | observed % |",
        "| --- | ---: | ---: | ---: |",
    ]
    for d in Difficulty:
        taken = not_taken = 0
        for r in reports:
            for seat, diff in ((0, r.first), (1, r.second)):
                if diff == d:
                    taken += r.tally.counters[seat][MISJ_TAKEN]
                    not_taken += r.tally.counters[seat][MISJ_NOT]
        lines.append(
            f"| {d} | {pct(MISJUDGMENT_RATE[d])} | {taken:,} / {taken + not_taken:,} "
            f"| {ci(wilson(taken, taken + not_taken))} |"
        )
    lines += ["", "![Results of all pairings](balance.png)", "", GEN_END]
    return "\n".join(lines)


def expert_table(reports: list[Report]) -> list[str]:
    """How the expert played: how often it had to guess, how it lost, its reserve markers (docs/AI.md)."""
    if not reports:
        return []
    lines = [
        "",
        "## The expert's play",
        "",
        (
            "A *guess* is an explore of a cell whose exact probability of an opponent mine was above 0; "
            "*reserves* are its markers on cells it knew to be safe, taken back when it had no safe cell "
            "(docs/AI.md)."
        ),
        "",
        (
            "| first | second | expert seat | matches | explores that were guesses % | expert lost on a guess % "
            "| expert checkmated % | reserves placed / taken back per match |"
        ),
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        for seat, level in ((0, r.first), (1, r.second)):
            if specified(level):
                continue
            row = r.tally.counters[seat]
            safe = row[_KIND_INDEX[StepKind.EXPLORE_SAFE]]
            guesses = row[_KIND_INDEX[StepKind.EXPLORE_UNCERTAIN]]
            checkmated = row[_KIND_INDEX[StepKind.EXPLORE_MINE]]
            explores = safe + guesses + checkmated
            lost_on_guess = r.tally.ko_by_loser[seat] - checkmated
            n = r.games
            lines.append(
                f"| {r.first} | {r.second} | {'first' if seat == 0 else 'second'} | {n:,} "
                f"| {ci(wilson(guesses, explores))} | {ci(wilson(lost_on_guess, n))} | {ci(wilson(checkmated, n))} "
                f"| {row[_KIND_INDEX[StepKind.MARK]] / n:.1f} / {row[_KIND_INDEX[StepKind.RECOVER_UNFLAG]] / n:.1f} |"
            )
    return lines


def skeleton() -> str:
    return "\n".join(
        [
            "# Balance: CPU against CPU",
            "",
            f"Regenerate with one command: `{COMMAND}` (3–5 minutes on two cores; needs the",
            "`chart` extra for the picture). It rewrites everything between the `generated` markers",
            "and keeps the reading below.",
            "",
            READ_START,
            DEFAULT_READING,
            READ_END,
            "",
            GEN_START,
            GEN_END,
            "",
        ]
    )


def write_doc(body: str) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else skeleton()
    if GEN_START not in text or GEN_END not in text:
        text = text.rstrip("\n") + "\n\n" + GEN_START + "\n" + GEN_END + "\n"
    head, rest = text.split(GEN_START, 1)
    _, tail = rest.split(GEN_END, 1)
    DOC.write_text(head + body + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate docs/BALANCE.md and docs/balance.png.")
    parser.add_argument("--games", type=int, default=10_000, help="matches per ordered pairing (default 10,000)")
    parser.add_argument(
        "--expert-games", type=int, default=2_000, help="matches per ordered pairing with expert (default 2,000)"
    )
    parser.add_argument("--seed", default="balance", help="run seed prefix (default 'balance')")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    require_matplotlib()
    started = time.perf_counter()
    reports = []
    for first, second in product(Level, repeat=2):
        seed = f"{args.seed}-{first}-{second}"
        games = args.games if specified(first) and specified(second) else args.expert_games
        report = simulate(first, second, games, seed, workers=args.workers)
        reports.append(report)
        print(
            f"{first:>6} vs {second:<6} first {ci(report.rate(0))}  second {ci(report.rate(1))}  "
            f"draw {ci(report.rate(2))}  ({report.elapsed:.1f} s)",
            file=sys.stderr,
        )
        for v in report.tally.violations:
            print(f"violation ({v.check}) in match {v.index} of seed {seed!r}: {v.detail}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    write_doc(generated(reports, args, elapsed))
    draw_chart(
        reports,
        str(CHART),
        title=(
            f"MINE DUEL CPU vs CPU, {args.games:,} matches per pairing, {args.expert_games:,} with expert "
            f"(seed {args.seed})"
        ),
    )
    print(f"wrote {DOC.relative_to(ROOT)} and {CHART.relative_to(ROOT)}", file=sys.stderr)
    return 1 if any(r.tally.violation_count for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
