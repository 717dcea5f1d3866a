"""Exact probabilities of the opponent's mines (issue 18; docs/AI.md) against brute force.

The oracle here is independent of ``shared/ai/probability.py``: it lists every set of ``K`` distinct
unrevealed cells, keeps those whose numbers agree with every revealed cell (B4: a cell counts
neighbours with at least one mine, so an overlap counts once; the seat's own mines are known), that
contain the known overlaps and give every pin its own cell (distinct plants, distinct cells), and
counts. The engine must give the same fractions exactly, on generated boards (Hypothesis) and on
positions from real matches, with the seat's real memory (pins from number changes, V5 overlaps).
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import combinations
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import random_records

from mineduel.shared.ai.analysis import seat_timeline
from mineduel.shared.ai.cpu import Difficulty, next_step
from mineduel.shared.ai.levels import CpuPlayer
from mineduel.shared.ai.memory import Memory, remember
from mineduel.shared.ai.probability import (
    Evidence,
    InconsistentEvidence,
    cpu_opponent_plants,
    mine_probabilities,
    probabilities_of,
)
from mineduel.shared.fairness.record import from_json
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, cell_of, cells, mask_of
from mineduel.shared.rules.engine import ActionType, GameState, Phase, Variant
from mineduel.shared.rules.notation import from_ascii


def brute_force(
    revealed: int, numbers: tuple[int, ...], my_mines: int, k: int, evidence: Evidence
) -> tuple[int, list[int]]:
    """(number of consistent opponent mine sets, how many of them hold each cell) by listing them all."""
    unrevealed = [c for c in range(64) if not revealed >> c & 1]
    pins = [pin & ~revealed for pin in evidence.pins if not pin & evidence.certain]
    total = 0
    weights = [0] * 64
    for chosen in combinations(unrevealed, k):
        opponent = mask_of(chosen)
        if evidence.certain & ~opponent:
            continue
        mined = opponent | my_mines
        if any((NEIGHBOURS[c] & mined).bit_count() != numbers[c] for c in cells(revealed)):
            continue
        if not _has_distinct_cells(pins, opponent):
            continue
        total += 1
        for c in chosen:
            weights[c] += 1
    return total, weights


def _has_distinct_cells(pins: list[int], mines: int) -> bool:
    """Every pin gets its own mine cell: tried over all choices (the oracle does not use Hall)."""

    def place(i: int, used: int) -> bool:
        if i == len(pins):
            return True
        return any(place(i + 1, used | 1 << c) for c in cells(pins[i] & mines & ~used))

    return place(0, 0)


def assert_exact(revealed: int, numbers: tuple[int, ...], my_mines: int, k: int, evidence: Evidence) -> None:
    total, weights = brute_force(revealed, numbers, my_mines, k, evidence)
    assert total > 0
    probs = probabilities_of(revealed, numbers, my_mines, k, evidence)
    for cell in range(64):
        assert Fraction(probs.weights[cell], probs.total) == Fraction(weights[cell], total), cell


def numbers_of(revealed: int, mined: int) -> tuple[int, ...]:
    return tuple((NEIGHBOURS[c] & mined).bit_count() if revealed >> c & 1 else -1 for c in range(64))


# ----- hand-made positions ----------------------------------------------------------------------------


def test_a_lone_number_shares_its_mine_equally_and_the_pool_gets_none() -> None:
    """B4: a revealed 1 with three closed neighbours and one opponent mine in all: 1/3 each, 0 elsewhere."""
    revealed = 1 << cell_of(0, 0)
    numbers = tuple(1 if c == cell_of(0, 0) else -1 for c in range(64))
    probs = probabilities_of(revealed, numbers, 0, 1)
    for cell in (cell_of(0, 1), cell_of(1, 0), cell_of(1, 1)):
        assert probs.weights[cell] * 3 == probs.total
    assert probs.weights[cell_of(7, 7)] == 0
    assert probs.safe == FULL & ~revealed & ~mask_of([cell_of(0, 1), cell_of(1, 0), cell_of(1, 1)])
    assert probs.certain == 0


def test_an_own_mine_next_to_a_number_explains_it_and_may_hide_an_overlap() -> None:
    """B4/V5: a 1 already explained by the seat's own mine leaves its other neighbours safe;
    the opponent's mine can still sit on the seat's mine (an overlap changes no number)."""
    board = """
        o1 A. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. B.
    """
    state = from_ascii(board)
    view = state.view(0)
    probs = mine_probabilities(view, 1)
    assert probs.weights[cell_of(1, 0)] == probs.weights[cell_of(1, 1)] == 0
    # The one opponent mine is anywhere but next to (0,0) — on the seat's own mine too: 1 / 61.
    assert probs.weights[cell_of(0, 1)] * 61 == probs.total
    assert probs.weights[cell_of(7, 7)] * 61 == probs.total
    assert_exact(view.revealed, view.numbers, view.my_mines, 1, Evidence())


def test_a_pin_of_one_cell_is_certain_and_pins_are_distinct_plants() -> None:
    """Memory: a pin of one cell is a mine; two pins on the same two cells are two mines there."""
    revealed = 1 << 63
    numbers = tuple(0 if c == 63 else -1 for c in range(64))
    assert probabilities_of(revealed, numbers, 0, 2, Evidence(pins=(1 << 5,))).certain == 1 << 5
    assert probabilities_of(revealed, numbers, 0, 2, Evidence(pins=(0b11,))).certain == 0
    assert probabilities_of(revealed, numbers, 0, 2, Evidence(pins=(0b11, 0b11))).certain == 0b11
    assert probabilities_of(revealed, numbers, 0, 2, Evidence(certain=1 << 9)).certain == 1 << 9
    assert_exact(revealed, numbers, 0, 2, Evidence(pins=(0b1011, 0b11)))
    assert_exact(revealed, numbers, 1 << 2, 2, Evidence(pins=(0b111, 0b10)))


def test_contradictions_are_refused() -> None:
    """A count or a pin that nothing fits raises InconsistentEvidence (never a silent zero)."""
    revealed = FULL & ~mask_of(range(4))
    numbers = numbers_of(revealed, 0b1)
    with pytest.raises(InconsistentEvidence):
        probabilities_of(revealed, numbers, 0, 0)
    with pytest.raises(InconsistentEvidence):
        probabilities_of(revealed, numbers, 0, 1, Evidence(pins=(1 << 40,)))


# ----- generated positions --------------------------------------------------------------------------


@st.composite
def small_worlds(draw: st.DrawFn) -> tuple[int, tuple[int, ...], int, int, Evidence]:
    """A board with at most 12 closed cells, true mines for both seats, numbers, and true evidence."""
    closed = draw(st.lists(st.integers(0, 63), min_size=1, max_size=12, unique=True))
    revealed = FULL & ~mask_of(closed)
    mine_flags = draw(st.lists(st.sampled_from("..AB.X"), min_size=len(closed), max_size=len(closed)))
    opponent = mask_of(c for c, f in zip(closed, mine_flags, strict=True) if f in "BX")
    mine = mask_of(c for c, f in zip(closed, mine_flags, strict=True) if f in "AX")
    numbers = numbers_of(revealed, opponent | mine)
    truth = list(cells(opponent))
    pins: list[int] = []
    certain = 0
    if truth:
        for anchor in draw(st.lists(st.sampled_from(truth), max_size=3, unique=True)):
            extra = draw(st.lists(st.sampled_from(closed), max_size=3))
            pins.append(1 << anchor | mask_of(extra))
        certain = mask_of(draw(st.lists(st.sampled_from(truth), max_size=1)))
    return revealed, numbers, mine, opponent.bit_count(), Evidence(certain, tuple(pins))


@settings(max_examples=400, deadline=None)
@given(small_worlds())
def test_probabilities_equal_brute_force_on_generated_boards(world: tuple[int, tuple[int, ...], int, int, Evidence]) -> None:
    """Exact under the model: every fraction equals the brute-force count (overlaps, own mines, pins)."""
    revealed, numbers, mine, k, evidence = world
    assert_exact(revealed, numbers, mine, k, evidence)


# ----- real matches -------------------------------------------------------------------------------------


def _real_positions(games: int, seed: str) -> list[tuple[GameState, int, Memory]]:
    """(state copy, seat, the seat's memory) at every CPU decision of hard-vs-expert matches."""
    out: list[tuple[GameState, int, Memory]] = []
    for index in range(games):
        rng = random.Random(f"{seed}:{index}")
        state = GameState(Variant.CPU)
        players = [CpuPlayer("expert"), CpuPlayer("hard")] if index % 2 else [CpuPlayer("hard"), CpuPlayer("expert")]
        memories: list[Memory | None] = [None, None]
        last: list[int | None] = [None, None]
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            memory = remember(memories[seat], view)
            memories[seat] = memory
            out.append((state.copy(), seat, memory))
            decision = players[seat].step(view, rng, last[1 - seat])
            state.play(decision.action)
            action = decision.action
            if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                last[seat] = action.cell
    return out


@pytest.fixture(scope="module")
def positions() -> list[tuple[GameState, int, Memory]]:
    return _real_positions(40, "probabilities")


def test_the_cpu_plant_count_is_the_true_number_of_opponent_mines(positions: list[tuple[GameState, int, Memory]]) -> None:
    """F1/F2: one plant per opening and per normal turn, so the view alone gives K in every phase."""
    phases = set()
    for state, seat, _ in positions:
        assert cpu_opponent_plants(state.view(seat)) == state.mines[1 - seat].bit_count()
        assert cpu_opponent_plants(state.view(1 - seat)) == state.mines[seat].bit_count()
        phases.add(state.phase)
    assert phases == {Phase.OPEN_EXPLORE, Phase.OPEN_PLANT, Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT}


def test_memory_is_sound_and_finds_something(positions: list[tuple[GameState, int, Memory]]) -> None:
    """Every pin holds a true opponent mine of its own, every known overlap is one; and pins exist."""
    pins = overlaps = 0
    for state, seat, memory in positions:
        opponent = state.mines[1 - seat]
        evidence = memory.evidence
        assert evidence.certain & ~opponent == 0
        assert _has_distinct_cells([p for p in evidence.pins if not p & evidence.certain], opponent)
        pins = max(pins, len(evidence.pins))
        overlaps |= evidence.certain
    assert pins >= 5 and overlaps


def test_certainties_match_the_truth_in_real_matches(positions: list[tuple[GameState, int, Memory]]) -> None:
    """Exact zero and one are exact: no cell called safe holds an opponent mine, none called certain lacks one."""
    safe_calls = 0
    for state, seat, memory in positions:
        if state.phase is Phase.OPEN_EXPLORE:
            continue
        view = state.view(seat)
        probs = mine_probabilities(view, memory.opponent_plants, memory.evidence)
        opponent = state.mines[1 - seat]
        assert probs.safe & opponent == 0
        assert probs.certain & ~opponent == 0
        assert probs.total > 0 and all(0 <= w <= probs.total for w in probs.weights)
        safe_calls += probs.safe.bit_count()
    assert safe_calls > 1000


def test_probabilities_equal_brute_force_on_real_positions(positions: list[tuple[GameState, int, Memory]]) -> None:
    """Real boards with the seat's real memory, wherever listing every opponent mine set is affordable."""
    checked = 0
    for state, seat, memory in positions:
        view = state.view(seat)
        unrevealed = FULL & ~view.revealed
        if comb(unrevealed.bit_count(), memory.opponent_plants) > 4000 or state.phase is Phase.OPEN_EXPLORE:
            continue
        assert_exact(view.revealed, view.numbers, view.my_mines, memory.opponent_plants, memory.evidence)
        checked += 1
    assert checked >= 100


def test_hard_against_hard_positions_late_in_the_match_equal_brute_force() -> None:
    """Late boards (few closed cells) from the specified levels, where brute force is cheap."""
    checked = 0
    for index in range(60):
        rng = random.Random(f"late:{index}")
        state = GameState(Variant.CPU)
        memories: list[Memory | None] = [None, None]
        last: list[int | None] = [None, None]
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            memories[seat] = memory = remember(memories[seat], view)
            unrevealed = FULL & ~view.revealed
            if view.phase is Phase.EXPLORE and comb(unrevealed.bit_count(), memory.opponent_plants) <= 3000:
                assert_exact(view.revealed, view.numbers, view.my_mines, memory.opponent_plants, memory.evidence)
                checked += 1
            decision = next_step(view, Difficulty.HARD, rng, last[1 - seat])
            state.play(decision.action)
            action = decision.action
            if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                last[seat] = action.cell
    assert checked >= 20


def test_analysis_memory_is_sound_on_generated_records_with_refusals_and_timeouts() -> None:
    """Any record, CPU or ONLINE (refused actions, O4/O5 timeouts that skip plants, endings): the seat's
    timeline counts the opponent's plants from the actions, and its evidence and exact 0/1 are true."""
    moments = 0
    for raw in random_records(seed=18, count=40) + random_records(seed=19, count=40, variant="online"):
        record = from_json(raw)
        for seat in (0, 1):
            state = GameState(record.variant)
            timeline = seat_timeline(record.actions, seat, record.variant)
            for moment in timeline:
                assert moment.view == state.view(seat)
                opponent = state.mines[1 - seat]
                memory = moment.memory
                assert memory.opponent_plants == opponent.bit_count()
                assert memory.evidence.certain & ~opponent == 0
                pins = [p for p in memory.evidence.pins if not p & memory.evidence.certain]
                assert _has_distinct_cells(pins, opponent)
                if not state.over:
                    probs = mine_probabilities(moment.view, memory.opponent_plants, memory.evidence)
                    assert probs.safe & opponent == 0 and probs.certain & ~opponent == 0
                    moments += 1
                if moment.index < len(record.actions):
                    state.apply(record.actions[moment.index])
    assert moments > 2000


def test_memory_starts_again_for_another_match() -> None:
    """A view that is not a later view of the same match (cells closed again, fewer plants) resets it."""
    _state, _seat, memory = next(p for p in _real_positions(1, "reset") if p[2].evidence.pins)
    fresh = GameState(Variant.CPU).view(memory.seat)
    again = remember(memory, fresh, 0)
    assert again == Memory(memory.seat, 0, fresh.numbers, 0, 0)
