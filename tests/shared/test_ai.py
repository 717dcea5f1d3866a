"""Tests for the CPU AI (RULES.md §8, AI1–AI5 with C1.3/C2/C3) and ``mine-duel simulate``.

Boards are written in the ASCII notation (``mineduel.shared.rules.notation``); the CPU is seat 1
(V1), so its mines are ``B`` and its markers ``b``; the human's are ``A`` and ``a``.
The AI is always handed ``state.view(1)`` (V3), never the state.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mineduel.shared.ai.cpu import (
    EASY_MISJUDGMENT,
    HARD_MISJUDGMENT,
    MISJUDGMENT_RATE,
    NORMAL_MISJUDGMENT,
    Classification,
    Decision,
    Difficulty,
    PlantArea,
    StepKind,
    classify,
    next_step,
)
from mineduel.shared.cli import simulate as sim
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, cell_of, cells, mask_of, neighbourhood
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Reason, Refusal, Variant
from mineduel.shared.rules.notation import from_ascii
from mineduel.shared.rules.views import SeatView

CPU = 1
HUMAN = 0


class Scripted(random.Random):
    """A ``Random`` whose ``random()`` answers a script; ``randrange`` stays seeded."""

    def __init__(self, *draws: float, seed: int = 0) -> None:
        super().__init__(seed)
        self.draws = list(draws)

    def random(self) -> float:
        return self.draws.pop(0)  # IndexError = the AI drew more rates than the test expected

    def getrandbits(self, k: int) -> int:  # keeps randrange on the seeded bits, not on random()
        return super().getrandbits(k)


def c(row: int, col: int) -> int:
    return cell_of(row, col)


def m(*rcs: tuple[int, int]) -> int:
    return mask_of([c(r, k) for r, k in rcs])


def cpu_view(board: str, **facts: object) -> tuple[GameState, SeatView]:
    facts.setdefault("to_move", CPU)
    state = from_ascii(board, **facts)  # type: ignore[arg-type]
    return state, state.view(CPU)


# (0,1) is the human's mine, (1,2) the CPU's own; the human marked (2,1) and the CPU (3,3).
DEDUCE = """
x1 A. x2 .. .. .. .. ..
x1 x2 B. .. .. .. .. ..
.. .a .. .. .. .. .. ..
.. .. .. .b .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
"""
DEDUCE_MINE = m((0, 1), (1, 2))
DEDUCE_SAFE = m((2, 0), (2, 1), (2, 2), (0, 3), (1, 3))

# The bottom-right 1 is read last in ascending order, yet it unlocks the two before it.
CHAIN = """
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. A. x1
.. .. .. .. .. .. x1 x1
"""

# A lone 1 in the middle: its eight neighbours are uncertain, nothing is safe.
LONE = """
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. A. .. .. .. ..
.. .. .. .. x1 .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. B.
"""


def _nearly_open(**closed: str) -> str:
    """A board with every cell revealed (``x?``) except the given ``"r_c": token`` cells."""
    rows = []
    for r in range(8):
        rows.append(" ".join(closed.get(f"r{r}c{k}", "x?") for k in range(8)))
    return "\n".join(rows)


def reference_classify(view: SeatView) -> tuple[set[int], set[int], set[int]]:
    """AI1 written as literally as RULES.md says it, with sets (the oracle for ``classify``)."""
    unrevealed = {i for i in range(64) if not view.revealed >> i & 1}
    mine = {i for i in unrevealed if view.my_mines >> i & 1}
    safe: set[int] = set()
    changed = True
    while changed:
        changed = False
        for cell in range(64):
            if not view.revealed >> cell & 1:
                continue
            around = set(cells(NEIGHBOURS[cell]))
            left = view.numbers[cell] - len(around & mine)
            open_ = (around & unrevealed) - mine - safe
            if not open_:
                continue
            if left == 0:
                safe |= open_
                changed = True
            elif left == len(open_):
                mine |= open_
                changed = True
    return safe, mine, unrevealed - safe - mine


def play_until(
    seed: int, difficulties: tuple[Difficulty, Difficulty] = (Difficulty.NORMAL,) * 2
) -> Iterator[GameState]:
    """Play one CPU-vs-CPU match, yielding the state before every CPU step."""
    rng = random.Random(seed)
    state = GameState(Variant.CPU)
    last_safe: list[int | None] = [None, None]
    while not state.over:
        yield state
        seat = state.to_move
        assert seat is not None
        decision = next_step(state.view(seat), difficulties[seat], rng, last_safe[1 - seat])
        state.play(decision.action)
        a = decision.action
        if a.type is ActionType.EXPLORE and state.revealed >> a.cell & 1:  # type: ignore[operator]
            last_safe[seat] = a.cell


def sample_views(matches: int = 40) -> list[SeatView]:
    views = []
    for seed in range(matches):
        for state in play_until(seed):
            views.append(state.view(state.to_move))  # type: ignore[arg-type]
    return views


# ----- AI1 deduction -----------------------------------------------------------------------


def test_ai1_own_mines_and_numbers_deduce_mine_and_safe_cells() -> None:
    """AI1: own mines are mine, left == open marks mines, left == 0 marks the rest safe."""
    _, view = cpu_view(DEDUCE)
    verdict = classify(view)
    assert verdict.mine == DEDUCE_MINE
    assert verdict.safe == DEDUCE_SAFE
    assert verdict.uncertain == view.unrevealed & ~DEDUCE_MINE & ~DEDUCE_SAFE


def test_ai1_classification_partitions_the_unrevealed_cells() -> None:
    """AI1: every unrevealed cell is exactly one of safe, mine, uncertain; revealed cells none."""
    for view in sample_views(10):
        v = classify(view)
        assert v.safe | v.mine | v.uncertain == view.unrevealed
        assert not (v.safe & v.mine or v.safe & v.uncertain or v.mine & v.uncertain)


def test_ai1_repeats_until_nothing_changes() -> None:
    """AI1.4: a deduction found late in a pass unlocks earlier numbers in the next pass."""
    _, view = cpu_view(CHAIN)
    verdict = classify(view)
    assert verdict.mine == m((6, 6))
    assert verdict.safe == m((5, 6), (5, 7), (6, 5), (7, 5))


def test_ai1_leaves_undecided_cells_uncertain() -> None:
    """AI1.4: a lone 1 decides nothing; its neighbours stay uncertain."""
    _, view = cpu_view(LONE)
    verdict = classify(view)
    assert verdict.safe == 0
    assert verdict.mine == m((7, 7))  # only the CPU's own mine
    assert verdict.uncertain & NEIGHBOURS[c(4, 4)] == NEIGHBOURS[c(4, 4)]


def test_ai1_markers_are_not_evidence() -> None:
    """AI1 [decision]: markers change nothing: the same board without markers classifies the same."""
    _, marked = cpu_view(DEDUCE)
    _, bare = cpu_view(DEDUCE.replace(".a", "..").replace(".b", ".."))
    assert classify(marked) == classify(bare)
    # A marker on a mine or on a safe cell neither confirms nor hides it.
    _, flagged_mine = cpu_view(DEDUCE.replace("A.", "Aa"))
    assert classify(flagged_mine) == classify(bare)


def test_ai1_matches_a_literal_set_implementation_on_real_match_views() -> None:
    """AI1: the bitboard deduction equals a set-based transcription of the rule on 1,000s of views."""
    views = sample_views(40)
    assert len(views) > 2000
    for view in views:
        v = classify(view)
        safe, mine, uncertain = reference_classify(view)
        assert (v.safe, v.mine, v.uncertain) == (mask_of(safe), mask_of(mine), mask_of(uncertain))


def test_ai1_uses_no_memory_of_past_views() -> None:
    """AI1: the verdict depends on the current view only, whatever was classified before."""
    views = sample_views(3)
    first = [classify(v) for v in views]
    random.Random(5).shuffle(views)
    assert sorted(map(repr, first)) == sorted(repr(classify(v)) for v in views)


# ----- AI2 / AI3 explore choice ------------------------------------------------------------


def test_ai2_safe_cells_without_uncertain_ones_need_no_misjudgment_draw() -> None:
    """AI2: only safe and mine cells explorable → a safe cell, and no AI3 rate draw at all."""
    # Closed: (0,0), which the 0s around it prove safe; (7,7), the human's mine; (7,6), the CPU's.
    board = _nearly_open(r0c0="..", r7c7="A.", r7c6="B.")
    _state, view = cpu_view(board)
    rng = Scripted()  # any rate draw would raise
    decision = next_step(view, Difficulty.EASY, rng, None)
    assert decision.kind is StepKind.EXPLORE_SAFE
    assert decision.action == Action(CPU, ActionType.EXPLORE, c(0, 0))
    assert not decision.misjudgment_possible


@pytest.mark.parametrize(("draw", "kind"), [(0.0, StepKind.EXPLORE_UNCERTAIN), (0.999, StepKind.EXPLORE_SAFE)])
def test_ai2_safe_and_uncertain_cells_draw_the_misjudgment(draw: float, kind: StepKind) -> None:
    """AI2/AI3: with safe and uncertain cells the rate draw decides between them."""
    state, view = cpu_view(DEDUCE)
    decision = next_step(view, Difficulty.NORMAL, Scripted(draw), None)
    assert decision.kind is kind
    assert decision.misjudgment_possible
    assert decision.misjudged is (kind is StepKind.EXPLORE_UNCERTAIN)
    cell = decision.action.cell
    assert decision.action.type is ActionType.EXPLORE
    verdict = decision.classification
    assert verdict is not None
    target = verdict.uncertain if decision.misjudged else verdict.safe
    assert (target & view.explorable) >> cell & 1  # type: ignore[operator]
    assert not isinstance(state.apply(decision.action), Refusal)


@pytest.mark.parametrize("difficulty", list(Difficulty))
def test_ai3_rate_threshold_is_the_difficultys_rate(difficulty: Difficulty) -> None:
    """AI3: a draw just below the rate misjudges, a draw at the rate does not."""
    rate = MISJUDGMENT_RATE[difficulty]
    _, view = cpu_view(DEDUCE)
    assert next_step(view, difficulty, Scripted(rate - 1e-9), None).misjudged
    assert not next_step(view, difficulty, Scripted(rate), None).misjudged


def test_ai3_rates_are_the_documented_constants() -> None:
    """AI3 [decision]: easy 30 %, normal 15 %, hard 5 % — misjudgment rates, not win rates."""
    assert (EASY_MISJUDGMENT, NORMAL_MISJUDGMENT, HARD_MISJUDGMENT) == (0.30, 0.15, 0.05)
    assert MISJUDGMENT_RATE == {Difficulty.EASY: 0.30, Difficulty.NORMAL: 0.15, Difficulty.HARD: 0.05}
    assert [d.value for d in Difficulty] == ["easy", "normal", "hard"]


def test_ai2_no_safe_cell_explores_an_uncertain_one_without_a_draw() -> None:
    """AI2: no safe cell → a uniform uncertain cell; no misjudgment is involved."""
    _state, view = cpu_view(LONE)
    decision = next_step(view, Difficulty.HARD, Scripted(), None)
    assert decision.kind is StepKind.EXPLORE_UNCERTAIN
    assert not decision.misjudgment_possible and not decision.misjudged
    assert decision.classification is not None
    assert decision.classification.uncertain >> decision.action.cell & 1  # type: ignore[operator]


def test_ai2_opening_explore_is_any_unrevealed_cell_without_deduction() -> None:
    """AI2/F1: the opening explores are uniform over unrevealed cells with no misjudgment."""
    state = GameState(Variant.CPU)
    state.play(Action(HUMAN, ActionType.EXPLORE, c(3, 3)))
    seen = set()
    for seed in range(300):
        decision = next_step(state.view(CPU), Difficulty.EASY, random.Random(seed), None)
        assert decision.kind is StepKind.OPENING_EXPLORE
        assert decision.classification is None and not decision.misjudgment_possible
        seen.add(decision.action.cell)
    assert c(3, 3) not in seen
    assert len(seen) > 55  # even the 0's neighbours, which AI1 would call safe, are not preferred


# ----- C3 checkmate and C1.3 recovery ------------------------------------------------------

# Two human mines (0,0) and (0,7) are the only explorable cells, both deduced mine.
MATE = _nearly_open(r0c0="A.", r0c7="A.", r7c7="B.")


def test_c3_only_mine_cells_with_quota_places_a_marker_then_explores_and_loses() -> None:
    """C3/AI2: only mine cells → a marker if the quota allows, C1 runs again, then explore and lose."""
    state, view = cpu_view(MATE)
    rng = random.Random(1)
    first = next_step(view, Difficulty.HARD, rng, None)
    assert first.kind is StepKind.MARK_CHECKMATE
    assert first.action.type is ActionType.FLAG
    state.play(first.action)
    second = next_step(state.view(CPU), Difficulty.HARD, rng, None)
    assert second.kind is StepKind.EXPLORE_MINE
    state.play(second.action)
    assert state.outcome() is not None
    assert (state.outcome().winner, state.outcome().reason) == (HUMAN, Reason.KO)  # type: ignore[union-attr]


def test_c3_without_quota_explores_a_mine_cell_and_loses() -> None:
    """C3: checkmate is legal — no quota left and only mine cells → explore, and the human wins."""
    state, view = cpu_view(MATE, marker_used=True)
    decision = next_step(view, Difficulty.EASY, random.Random(2), None)
    assert decision.kind is StepKind.EXPLORE_MINE
    state.play(decision.action)
    assert state.outcome().winner == HUMAN  # type: ignore[union-attr]


def test_c3_marker_that_flags_the_whole_board_draws() -> None:
    """C3/C1.1: the last explorable cell is a mine and every other closed cell is flagged → marker, draw."""
    state, view = cpu_view(_nearly_open(r0c0="A.", r7c7="Ba"))
    decision = next_step(view, Difficulty.NORMAL, random.Random(3), None)
    assert decision.kind is StepKind.MARK_CHECKMATE
    state.play(decision.action)
    assert state.outcome().reason is Reason.ALL_FLAGGED  # type: ignore[union-attr]


def test_c13_recovery_takes_back_the_best_marker_and_explores_it_in_two_steps() -> None:
    """C1.3/AI2: nothing explorable → unflag the own marker on a safe cell (safe > mine), then explore it."""
    # The CPU marked (0,0) (the human's mine) and (0,7), which the 0 at (0,6) proves safe.
    state, view = cpu_view(_nearly_open(r0c0="Ab", r0c7=".b", r7c7="B."))
    assert view.explorable == 0 and view.recoverable == m((0, 0), (0, 7))
    rng = random.Random(4)
    first = next_step(view, Difficulty.HARD, rng, None)
    assert (first.kind, first.action) == (StepKind.RECOVER_UNFLAG, Action(CPU, ActionType.UNFLAG, c(0, 7)))
    state.play(first.action)
    second = next_step(state.view(CPU), Difficulty.HARD, rng, None)
    assert (second.kind, second.action) == (StepKind.EXPLORE_SAFE, Action(CPU, ActionType.EXPLORE, c(0, 7)))
    state.play(second.action)
    assert state.outcome() is None and state.phase is Phase.PLANT


def test_c13_recovery_prefers_uncertain_over_mine() -> None:
    """C1.3/AI2: with no safe own marker, the uncertain one is taken back before the mine one."""
    # (0,0) is hidden behind three cells the human marked (the 0s prove them safe): uncertain.
    # (0,7) is proved a mine by the 1s around it. Nothing is explorable; (7,7) is the CPU's mine.
    _state, view = cpu_view(_nearly_open(r0c0="Ab", r0c1=".a", r1c0=".a", r1c1=".a", r0c7="Ab", r7c7="B."))
    verdict = classify(view)
    assert view.explorable == 0
    assert verdict.uncertain & view.recoverable == m((0, 0)) and verdict.mine & view.recoverable == m((0, 7))
    decision = next_step(view, Difficulty.NORMAL, random.Random(5), None)
    assert decision.action == Action(CPU, ActionType.UNFLAG, c(0, 0))


def test_c13_with_only_mine_markers_unflags_then_explores_not_flags_again() -> None:
    """C1.3/C3 [our choice]: a marker that C1.3 would only take back is not placed; recovery is two steps."""
    state, view = cpu_view(_nearly_open(r0c0="Ab", r0c7="Ab", r7c7="B."))
    rng = random.Random(6)
    first = next_step(view, Difficulty.HARD, rng, None)
    assert first.kind is StepKind.RECOVER_UNFLAG
    state.play(first.action)
    second = next_step(state.view(CPU), Difficulty.HARD, rng, None)
    assert second.kind is StepKind.EXPLORE_MINE and second.action.cell == first.action.cell
    state.play(second.action)
    assert state.outcome().winner == HUMAN  # type: ignore[union-attr]


# ----- AI4 planting and C2 -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("draw", "area"), [(0.0, PlantArea.ALL), (0.6, PlantArea.RECENT), (0.85, PlantArea.REVEALED)]
)
def test_ai4_plants_inside_the_drawn_area(draw: float, area: PlantArea) -> None:
    """AI4: the 60/25/15 draw picks the area; the cell is a plantable cell inside it."""
    state, view = cpu_view(DEDUCE, phase=Phase.PLANT)
    last = c(1, 0)  # the human's most recent safe explore
    areas = {
        PlantArea.ALL: view.explorable,
        PlantArea.RECENT: NEIGHBOURS[last] & view.explorable,
        PlantArea.REVEALED: neighbourhood(view.revealed) & view.explorable,
    }
    for seed in range(50):
        decision = next_step(view, Difficulty.NORMAL, Scripted(draw, seed=seed), last)
        assert (decision.kind, decision.plant_area, decision.plant_fell_back) == (StepKind.PLANT, area, False)
        assert areas[area] >> decision.action.cell & 1  # type: ignore[operator]
        assert not isinstance(state.copy().apply(decision.action), Refusal)


def test_ai4_empty_area_falls_back_to_all_plantable_cells() -> None:
    """AI4: no recent safe cell (or no plantable cell near it) → all plantable cells, marked as a fall-back."""
    _, view = cpu_view(DEDUCE, phase=Phase.PLANT)
    decision = next_step(view, Difficulty.NORMAL, Scripted(0.7), None)
    assert decision.plant_area is PlantArea.RECENT and decision.plant_fell_back
    # (7,7)'s neighbours are plantable, but a corner whose neighbours are all taken falls back:
    _state, view = cpu_view(_nearly_open(r0c0="..", r7c7=".."), phase=Phase.PLANT)
    decision = next_step(view, Difficulty.NORMAL, Scripted(0.7), c(3, 3))
    assert decision.plant_fell_back and decision.action.cell in (c(0, 0), c(7, 7))


def test_ai4_applies_to_the_initial_mine() -> None:
    """AI4/F1: the opening plant uses the same areas, around the human's opening explore."""
    state = GameState(Variant.CPU)
    state.play(Action(HUMAN, ActionType.EXPLORE, c(0, 0)))
    state.play(Action(CPU, ActionType.EXPLORE, c(7, 7)))
    state.play(Action(HUMAN, ActionType.PLANT, c(4, 4)))
    decision = next_step(state.view(CPU), Difficulty.NORMAL, Scripted(0.7), c(0, 0))
    assert decision.plant_area is PlantArea.RECENT and not decision.plant_fell_back
    assert decision.action.cell in (c(0, 1), c(1, 0), c(1, 1))
    state.play(decision.action)
    assert state.phase is Phase.EXPLORE and state.to_move == HUMAN


def test_c2_nothing_plantable_takes_back_an_own_marker_then_plants_there() -> None:
    """C2: plantable empty but recoverable → remove an own marker, then plant on that cell."""
    state, view = cpu_view(_nearly_open(r0c0=".b", r7c7="B."), phase=Phase.PLANT)
    rng = random.Random(7)
    first = next_step(view, Difficulty.NORMAL, rng, None)
    assert (first.kind, first.action) == (StepKind.PLANT_RECOVER_UNFLAG, Action(CPU, ActionType.UNFLAG, c(0, 0)))
    state.play(first.action)
    second = next_step(state.view(CPU), Difficulty.NORMAL, rng, None)
    assert second.action == Action(CPU, ActionType.PLANT, c(0, 0))
    state.play(second.action)
    assert state.phase is Phase.END_WAIT


# ----- AI5 marking -----------------------------------------------------------------------------


def test_ai5_marks_a_mine_cell_with_the_rate_then_ends_the_turn() -> None:
    """AI5: quota left and a cell classed mine → a draw below 70 % places the marker, then end turn."""
    state, view = cpu_view(DEDUCE, phase=Phase.END_WAIT)
    rng = Scripted(0.69)
    first = next_step(view, Difficulty.NORMAL, rng, None)
    assert (first.kind, first.marker_candidate, first.marker_placed) == (StepKind.MARK, True, True)
    assert first.action == Action(CPU, ActionType.FLAG, c(0, 1))  # the human's deduced mine
    state.play(first.action)
    second = next_step(state.view(CPU), Difficulty.NORMAL, rng, None)  # no draw: quota used
    assert second.action == Action(CPU, ActionType.END_TURN) and not second.marker_candidate
    state.play(second.action)
    assert state.to_move == HUMAN


def test_ai5_forgets_the_marker_above_the_rate() -> None:
    """AI5: a draw at or above 70 % skips the marker (the "oversight") and ends the turn."""
    _, view = cpu_view(DEDUCE, phase=Phase.END_WAIT)
    decision = next_step(view, Difficulty.NORMAL, Scripted(0.70), None)
    assert decision.action.type is ActionType.END_TURN
    assert decision.marker_candidate and not decision.marker_placed


def test_ai5_without_a_candidate_ends_the_turn_without_a_draw() -> None:
    """AI5: no explorable cell classed mine → skip (no rate draw), end the turn."""
    _, view = cpu_view(LONE, phase=Phase.END_WAIT)
    decision = next_step(view, Difficulty.NORMAL, Scripted(), None)
    assert decision.action.type is ActionType.END_TURN and not decision.marker_candidate


# ----- V3: the AI sees only its view -----------------------------------------------------------


def test_v3_next_step_takes_a_seat_view_that_cannot_hold_hidden_mines() -> None:
    """V3: the entry point is typed with SeatView, whose fields hold no opponent mine or overlap."""
    hints = inspect.signature(next_step).parameters
    assert list(hints) == ["view", "difficulty", "rng", "last_opponent_safe_cell"]
    assert hints["view"].annotation in ("SeatView", SeatView)
    names = {f.name for f in dataclasses.fields(SeatView)}
    assert not any("opponent_mine" in n or "overlap" in n for n in names)
    assert {f.name for f in dataclasses.fields(Decision)} >= {
        "action", "kind", "classification", "misjudgment_possible", "misjudged",
        "plant_area", "plant_fell_back", "marker_candidate", "marker_placed",
    }


def _two_states_one_view(seed: int) -> tuple[GameState, GameState]:
    """A mid-game state and a copy with one human mine moved where no number can tell."""
    for live in play_until(seed):
        state = live.copy()
        far = FULL & ~state.revealed & ~neighbourhood(state.revealed)
        hidden = state.mines[HUMAN] & far & ~state.mines[CPU]
        free = far & ~state.any_mine & ~state.any_marker
        if state.turn >= 4 and state.to_move == CPU and state.phase is Phase.EXPLORE and hidden and free:
            break
    else:
        raise AssertionError("no such position in this match: pick another seed")
    other = state.copy()
    other.mines[HUMAN] = other.mines[HUMAN] & ~(1 << next(cells(hidden))) | 1 << next(cells(free))
    return state, other


@pytest.mark.parametrize("seed", range(5))
def test_v3_states_that_differ_only_in_hidden_mines_give_the_same_decision(seed: int) -> None:
    """V3/AI1: two boards with the same CPU view but different human mines → the same step."""
    state, other = _two_states_one_view(seed)
    assert state.mines[HUMAN] != other.mines[HUMAN]
    assert state.view(CPU) == other.view(CPU)
    for rng_seed in range(20):
        for difficulty in Difficulty:
            a = next_step(state.view(CPU), difficulty, random.Random(rng_seed), 5)
            b = next_step(other.view(CPU), difficulty, random.Random(rng_seed), 5)
            assert a == b


def test_next_step_refuses_when_it_is_not_the_cpus_move() -> None:
    """F4: the AI is only asked on its own turn; otherwise it says so instead of guessing."""
    state, _ = cpu_view(DEDUCE, to_move=HUMAN)
    with pytest.raises(ValueError):
        next_step(state.view(CPU), Difficulty.NORMAL, random.Random(0), None)


# ----- simulated matches: legality, termination, inference consistency -------------------------


def test_simulated_matches_are_legal_finish_and_infer_consistently() -> None:
    """Chapter 13/AI1: 900 CPU-vs-CPU matches (all nine pairings) end, every action is legal, AI1 is never wrong."""
    for first in Difficulty:
        for second in Difficulty:
            report = sim.simulate(first, second, 100, seed="legal", workers=1)
            assert report.tally.violation_count == 0, report.tally.violations
            assert report.games == 100 and "unfinished" not in report.tally.reasons
            assert sum(report.tally.winners) == 100


def test_simulation_is_reproducible_whatever_the_worker_count() -> None:
    """R4: a run is a function of (seed, match index) only — one worker or two, the same report."""
    one = sim.simulate("hard", "easy", 120, seed=11, workers=1).to_json()
    two = sim.simulate("hard", "easy", 120, seed=11, workers=2, chunk=7).to_json()
    for report in (one, two):
        del report["elapsed_seconds"], report["matches_per_second"], report["workers"]
    assert one == two
    # A match played alone with --offset is the same match as inside the run.
    part = sim.simulate("hard", "easy", 1, seed=11, offset=57).tally
    whole = sim.Tally()
    sim.play_match(Difficulty.HARD, Difficulty.EASY, 11, 57, whole)
    assert (part.winners, part.turns, part.counters) == (whole.winners, whole.turns, whole.counters)


def _broken(kind: str):  # type: ignore[no-untyped-def]
    """A next_step that goes wrong in one way from turn 3 on."""

    def wrapped(view, difficulty, rng, last):  # type: ignore[no-untyped-def]
        decision = next_step(view, difficulty, rng, last)
        if view.turn < 3:
            return decision
        if kind == "inference" and decision.classification is not None:
            everything = view.unrevealed
            return dataclasses.replace(decision, classification=Classification(everything, 0, 0))
        if kind == "legality":
            return dataclasses.replace(decision, action=Action(view.seat, ActionType.END_TURN))
        return decision

    return wrapped


@pytest.mark.parametrize("check", ["inference", "legality"])
def test_simulate_reports_a_violation_with_seed_and_index_and_fails(
    check: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Chapter 13: a wrong classification or an illegal CPU action is reported with seed and index, exit 1."""
    monkeypatch.setattr(sim, "next_step", _broken(check))
    status = sim.main(["--games", "3", "--seed", "42", "--offset", "5", "--workers", "1", "--first", "easy"])
    out, err = capsys.readouterr()
    assert status == sim.EXIT_VIOLATION
    assert f"violation ({check}) in match 5 of seed '42'" in err
    assert "rng seed '42:5'" in out and "VIOLATIONS" in out


def test_simulate_reports_a_match_that_does_not_end(capsys: pytest.CaptureFixture[str]) -> None:
    """Chapter 13: a match that needs more steps than the cap is a termination violation."""
    status = sim.main(["--games", "2", "--max-actions", "5", "--workers", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == sim.EXIT_VIOLATION
    assert report["violation_count"] == 2 and report["reasons"]["unfinished"] == 2
    assert {v["check"] for v in report["violations"]} == {"termination"}


def test_simulate_json_follows_the_documented_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """Simulator JSON (mine-duel-simulate/1): every documented key, and counts that add up."""
    assert sim.main(["--games", "60", "--first", "hard", "--second", "easy", "--seed", "7", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "mine-duel-simulate/1"
    assert set(report) >= {
        "games", "seed", "offset", "workers", "max_actions", "first", "second", "results", "rates",
        "reasons", "ko_by_loser", "ko_cause", "turns", "actions", "decisions", "violations", "violation_count",
        "elapsed_seconds", "matches_per_second",
    }
    assert sum(report["results"].values()) == sum(report["reasons"].values()) == 60
    assert report["ko_by_loser"]["first"] == report["results"]["second_win"]
    assert sum(report["ko_cause"].values()) == report["reasons"]["ko"] and report["ko_cause"]["other"] == 0
    for name, rate in report["rates"].items():
        assert rate["low"] <= rate["rate"] <= rate["high"]
        assert rate["rate"] == report["results"][name] / 60
    assert set(report["turns"]) == {"mean", "median", "p95", "max", "histogram"}
    hard = report["decisions"]["first"]
    assert hard["difficulty"] == "hard" and hard["misjudgment"]["rate_target"] == 0.05
    assert set(hard["plant_area"]) == {"all", "recent", "revealed", "fell_back"}
    assert set(hard["marker"]) == {"placed", "skipped"}
    assert set(hard["steps"]) == {k.value for k in StepKind}


def test_simulate_human_report_names_rates_and_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """Simulator text output: results with Wilson intervals, reasons, turns, decision counts, checks."""
    assert sim.main(["--games", "30", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    for text in ("first (normal) wins", "95 % CI", "End reasons", "Turns per match", "AI3", "AI4", "AI5", "Checks passed"):
        assert text in out


def test_simulate_chart_without_matplotlib_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--chart: matplotlib is an optional extra; without it the command says so and exits 2 before simulating."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = sim.main(["--games", "5", "--chart", "out.png"])
    assert status == sim.EXIT_USAGE
    assert "mine-duel[chart]" in capsys.readouterr().err


def test_simulate_chart_draws_a_png(tmp_path: Path) -> None:
    """--chart: with matplotlib installed the report is drawn to a PNG file."""
    import matplotlib  # noqa: F401  - in the test extra, so this test always runs
    path = tmp_path / "chart.png"
    assert sim.main(["--games", "20", "--workers", "1", "--json", "--chart", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_wilson_interval_matches_known_values() -> None:
    """Simulator statistics: the Wilson 95 % interval of 50/100 is about [40.4 %, 59.6 %]."""
    rate, low, high = sim.wilson(50, 100)
    assert rate == 0.5 and low == pytest.approx(0.4038, abs=1e-4) and high == pytest.approx(0.5962, abs=1e-4)
    assert sim.wilson(0, 10)[1] == 0.0 and sim.wilson(10, 10)[2] == 1.0
