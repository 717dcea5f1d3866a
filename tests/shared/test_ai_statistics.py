"""Distribution tests (R5): the CPU's random choices and R2's uniform pick hit their targets.

Like ``seeds/003_ca26a95edd151b3d.txt`` tested its board generator, every frequency is compared
with its target by a chi-square goodness-of-fit test (``scipy.stats.chisquare``). All samples
come from fixed seeds, so every p-value here is the same on every run (R4): the tests are
deterministic, not flaky. Each test also shows it has teeth: the very same test, on the very
same sample, rejects a deliberately wrong target (e.g. a 20 % misjudgment rate instead of 15 %).

``ALPHA`` is the significance level for both directions: a right target must give p >= ALPHA,
a wrong one p < ALPHA.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest
from scipy.stats import chisquare

from mineduel.shared.ai.cpu import (
    MARKER_RATE,
    MISJUDGMENT_RATE,
    PLANT_AREA_RATES,
    Difficulty,
    PlantArea,
    StepKind,
    next_step,
)
from mineduel.shared.cli import simulate as sim
from mineduel.shared.fairness.commitments import FairStream, round_signature
from mineduel.shared.rules.bitboard import NEIGHBOURS, cell_of, cells, neighbourhood
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Variant
from mineduel.shared.rules.notation import from_ascii
from mineduel.shared.rules.views import SeatView

ALPHA = 0.01
SAMPLES = 20_000
CPU = 1

# The CPU (seat 1) sees 4 explorable safe cells, 1 explorable mine and many uncertain cells;
# (1,0) is a revealed cell the human explored (AI4's "recent" area is around it).
BOARD = """
x1 A. x2 .. .. .. .. ..
o1 x2 B. .. .. .. .. ..
.. .a .. .. .. .. .. ..
.. .. .. .b .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
"""
RECENT = cell_of(1, 0)


def p_value(observed: Sequence[int], probabilities: Sequence[float]) -> float:
    """Chi-square goodness-of-fit p-value of ``observed`` counts against ``probabilities``."""
    total = sum(observed)
    assert abs(sum(probabilities) - 1) < 1e-9
    expected = [total * p for p in probabilities]
    return float(chisquare(observed, expected).pvalue)


def fits(observed: Sequence[int], probabilities: Sequence[float]) -> bool:
    return p_value(observed, probabilities) >= ALPHA


def view_of(phase: Phase, board: str = BOARD) -> SeatView:
    return from_ascii(board, phase=phase, to_move=CPU).view(CPU)


def one_cell_heavier(n: int, extra: float = 0.02) -> list[float]:
    """A deliberately wrong target: option 0 ``extra`` more likely, the others evenly less."""
    return [1 / n + extra] + [1 / n - extra / (n - 1)] * (n - 1)


# ----- AI3 misjudgment rate ------------------------------------------------------------------

WRONG_RATE = {Difficulty.EASY: 0.35, Difficulty.NORMAL: 0.20, Difficulty.HARD: 0.07}


@pytest.mark.parametrize("difficulty", list(Difficulty))
def test_ai3_misjudgment_rate_fits_its_target_and_not_a_wrong_one(difficulty: Difficulty) -> None:
    """AI3: with safe and uncertain cells, uncertain is chosen at the difficulty's rate (chi-square)."""
    view = view_of(Phase.EXPLORE)
    rng = random.Random(f"R5-AI3-{difficulty}")
    picks = Counter(next_step(view, difficulty, rng, None).misjudged for _ in range(SAMPLES))
    observed = [picks[True], picks[False]]
    rate = MISJUDGMENT_RATE[difficulty]
    assert fits(observed, [rate, 1 - rate])
    wrong = WRONG_RATE[difficulty]
    assert not fits(observed, [wrong, 1 - wrong])


def test_ai2_random_safe_and_uncertain_cells_are_uniform() -> None:
    """AI2: "a random safe cell" / "a random uncertain cell" are uniform over their class (chi-square)."""
    view = view_of(Phase.EXPLORE)
    rng = random.Random("R5-AI2-uniform")
    safe: Counter[int] = Counter()
    uncertain: Counter[int] = Counter()
    for _ in range(SAMPLES):
        decision = next_step(view, Difficulty.EASY, rng, None)
        (uncertain if decision.misjudged else safe)[decision.action.cell] += 1  # type: ignore[index]
    verdict = decision.classification
    assert verdict is not None
    for counts, mask in ((safe, verdict.safe), (uncertain, verdict.uncertain)):
        options = list(cells(mask & view.explorable))
        assert set(counts) == set(options)
        observed = [counts[cell] for cell in options]
        assert fits(observed, [1 / len(options)] * len(options))
        assert not fits(observed, one_cell_heavier(len(options)))


def test_ai2_opening_explore_is_uniform_over_unrevealed_cells() -> None:
    """AI2/F1: the second player's opening explore is uniform over the 63 unrevealed cells (chi-square)."""
    state = GameState(Variant.CPU)
    state.play(Action(0, ActionType.EXPLORE, cell_of(3, 3)))
    view = state.view(CPU)
    rng = random.Random("R5-opening")
    counts = Counter(next_step(view, Difficulty.HARD, rng, None).action.cell for _ in range(SAMPLES))
    options = list(cells(view.unrevealed))
    observed = [counts[cell] for cell in options]
    assert sum(observed) == SAMPLES
    assert fits(observed, [1 / 63] * 63)
    assert not fits(observed, one_cell_heavier(63, 0.01))


# ----- AI4 planting --------------------------------------------------------------------------


def test_ai4_area_split_is_60_25_15_and_not_55_30_15() -> None:
    """AI4: the area is all / recent / revealed in 60 / 25 / 15 % of plants (chi-square)."""
    view = view_of(Phase.PLANT)
    rng = random.Random("R5-AI4")
    counts = Counter(next_step(view, Difficulty.NORMAL, rng, RECENT).plant_area for _ in range(SAMPLES))
    observed = [counts[area] for area, _ in PLANT_AREA_RATES]
    assert fits(observed, [rate for _, rate in PLANT_AREA_RATES])
    assert [rate for _, rate in PLANT_AREA_RATES] == [0.60, 0.25, 0.15]
    assert not fits(observed, [0.55, 0.30, 0.15])


@pytest.mark.parametrize("area", list(PlantArea))
def test_ai4_cell_is_uniform_within_the_area(area: PlantArea) -> None:
    """AI4: inside the chosen area the cell is uniform over its plantable cells (chi-square)."""
    view = view_of(Phase.PLANT)
    plantable = view.explorable
    inside = {
        PlantArea.ALL: plantable,
        PlantArea.RECENT: NEIGHBOURS[RECENT] & plantable,
        PlantArea.REVEALED: neighbourhood(view.revealed) & plantable,
    }[area]
    rng = random.Random(f"R5-AI4-{area}")
    counts: Counter[int] = Counter()
    while sum(counts.values()) < SAMPLES // 2:
        decision = next_step(view, Difficulty.NORMAL, rng, RECENT)
        if decision.plant_area is area:
            counts[decision.action.cell] += 1  # type: ignore[index]
    options = list(cells(inside))
    assert set(counts) == set(options)
    observed = [counts[cell] for cell in options]
    assert fits(observed, [1 / len(options)] * len(options))
    assert not fits(observed, one_cell_heavier(len(options), 0.04 if len(options) < 10 else 0.02))


# ----- AI5 marking ---------------------------------------------------------------------------

# Three human mines are deduced (each is the only closed cell next to some 1); the CPU's own
# mine is (7,7). Every other cell is open.
THREE_MINES = "\n".join(
    " ".join(
        {(0, 0): "A.", (0, 7): "A.", (7, 0): "A.", (7, 7): "B."}.get((r, k), "x?") for k in range(8)
    )
    for r in range(8)
)


def test_ai5_marker_rate_is_70_and_not_65_percent() -> None:
    """AI5: with a candidate and quota left, a marker is placed in 70 % of END_WAITs (chi-square)."""
    view = view_of(Phase.END_WAIT)
    rng = random.Random("R5-AI5")
    counts = Counter(next_step(view, Difficulty.NORMAL, rng, None).marker_placed for _ in range(SAMPLES))
    observed = [counts[True], counts[False]]
    assert MARKER_RATE == 0.70
    assert fits(observed, [0.70, 0.30])
    assert not fits(observed, [0.65, 0.35])


def test_ai5_marker_goes_on_a_uniform_mine_cell() -> None:
    """AI5: the marker's cell is uniform among the explorable cells classed mine (chi-square)."""
    view = view_of(Phase.END_WAIT, THREE_MINES)
    rng = random.Random("R5-AI5-cell")
    counts: Counter[int] = Counter()
    for _ in range(SAMPLES):
        decision = next_step(view, Difficulty.NORMAL, rng, None)
        if decision.kind is StepKind.MARK:
            counts[decision.action.cell] += 1  # type: ignore[index]
    options = [cell_of(0, 0), cell_of(0, 7), cell_of(7, 0)]
    assert set(counts) == set(options)
    observed = [counts[cell] for cell in options]
    assert fits(observed, [1 / 3] * 3)
    assert not fits(observed, one_cell_heavier(3))


# ----- the same rates inside real matches (the simulator's counters) ---------------------------


@pytest.fixture(scope="module")
def reports() -> list[sim.Report]:
    return [
        sim.simulate(Difficulty.EASY, Difficulty.HARD, 400, seed="R5-in-play", workers=1),
        sim.simulate(Difficulty.NORMAL, Difficulty.NORMAL, 400, seed="R5-in-play", workers=1),
    ]


def test_ai3_ai4_ai5_rates_hold_inside_simulated_matches(reports: list[sim.Report]) -> None:
    """AI3/AI4/AI5: the simulator's decision counts from 800 real matches fit every target (chi-square)."""
    for report in reports:
        for seat, difficulty in ((0, report.first), (1, report.second)):
            row = report.tally.counters[seat]
            misjudgment = [row[sim.MISJ_TAKEN], row[sim.MISJ_NOT]]
            rate = MISJUDGMENT_RATE[difficulty]
            assert sum(misjudgment) > 3000
            assert fits(misjudgment, [rate, 1 - rate])
            wrong = WRONG_RATE[difficulty]
            assert not fits(misjudgment, [wrong, 1 - wrong])
            areas = [row[sim.AREA_ALL], row[sim.AREA_RECENT], row[sim.AREA_REVEALED]]
            assert fits(areas, [0.60, 0.25, 0.15])
            assert not fits(areas, [0.55, 0.30, 0.15])
            marker = [row[sim.MARK_PLACED], row[sim.MARK_SKIPPED]]
            assert fits(marker, [0.70, 0.30])
            assert not fits(marker, [0.65, 0.35])


# ----- R2 uniform pick -------------------------------------------------------------------------


def stream(label: str) -> FairStream:
    return FairStream(round_signature(f"R5-{label}", ["client-seed"], 1))


@pytest.mark.parametrize("options", [2, 3, 5, 6, 7, 10, 63, 64, 100])
def test_r2_pick_is_uniform_over_small_option_counts(options: int) -> None:
    """R2: FairStream.pick(P) is uniform over P options, with and without rejection (chi-square)."""
    source = stream(f"small-{options}")
    samples = max(SAMPLES, 200 * options)
    counts = Counter(source.pick(options) for _ in range(samples))
    observed = [counts[i] for i in range(options)]
    assert fits(observed, [1 / options] * options)
    assert not fits(observed, one_cell_heavier(options))


@pytest.mark.parametrize(("options", "bins"), [(3 * 2**30, 3), (5 * 2**29, 5)])
def test_r2_rejection_removes_modulo_bias_that_plain_modulo_shows(options: int, bins: int) -> None:
    """R2: with P near 2**32 (25 % / 37.5 % of draws rejected) picks are uniform; plain x % P fails the same test."""
    source = stream(f"large-{options}")
    samples = SAMPLES
    fair: Counter[int] = Counter()
    for _ in range(samples):
        fair[source.pick(options) * bins // options] += 1
    rejected = source.consumed - samples
    assert 0.2 < rejected / source.consumed < 0.55  # the rejection step really ran
    plain_source = stream(f"large-{options}")
    naive: Counter[int] = Counter(
        plain_source.next_u32() % options * bins // options for _ in range(samples)
    )
    uniform = [1 / bins] * bins
    assert fits([fair[b] for b in range(bins)], uniform)
    assert not fits([naive[b] for b in range(bins)], uniform)
