"""RULES.md §4 (flow, F1–F4): the opening, the normal turn, the turn number, who may act."""

from __future__ import annotations

import pytest
from support.rule_helpers import act, at

from mineduel.shared.rules.engine import (
    ActionType,
    GameState,
    Phase,
    Reason,
    Refusal,
    Variant,
)
from mineduel.shared.rules.notation import from_ascii

VARIANTS = [Variant.CPU, Variant.ONLINE]
END_TURN = ActionType.END_TURN


def opened(variant: Variant = Variant.CPU) -> GameState:
    """A match right after the opening: seat 0 explored (0,0), seat 1 (0,7); mines at (7,0) and (7,7)."""
    state = GameState(variant)
    for action in (
        act(0, "explore", 0, 0),
        act(1, "explore", 0, 7),
        act(0, "plant", 7, 0),
        act(1, "plant", 7, 7),
    ):
        state.play(action)
    return state


def where(state: GameState) -> tuple[str, int | None, int]:
    return (str(state.phase), state.to_move, state.turn)


# ----- F1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_f1_opening_steps_hand_over_automatically(variant: Variant) -> None:
    """F1: explore by seat 0, explore by seat 1, plant by seat 0, plant by seat 1, then seat 0's first turn."""
    state = GameState(variant)
    assert where(state) == ("open_explore", 0, 0)
    state.play(act(0, "explore", 3, 3))
    assert where(state) == ("open_explore", 1, 0)
    state.play(act(1, "explore", 4, 4))
    assert where(state) == ("open_plant", 0, 0)
    state.play(act(0, "plant", 0, 0))
    assert where(state) == ("open_plant", 1, 0)
    state.play(act(1, "plant", 7, 7))
    assert where(state) == ("explore", 0, 1)
    assert state.revealer(at(3, 3)) == 0 and state.revealer(at(4, 4)) == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_f1_second_opening_explore_must_be_a_different_cell(variant: Variant) -> None:
    """F1 step 2: the second player cannot explore the cell the first player opened."""
    state = GameState(variant)
    state.play(act(0, "explore", 2, 2))
    before = state.snapshot()
    assert state.apply(act(1, "explore", 2, 2)) is Refusal.REVEALED
    assert state.snapshot() == before


@pytest.mark.parametrize("variant", VARIANTS)
def test_f1_overlapping_initial_mines_are_allowed(variant: Variant) -> None:
    """F1: both initial mines on the same cell are accepted; the match goes on to turn 1."""
    state = GameState(variant)
    for action in (
        act(0, "explore", 0, 0),
        act(1, "explore", 0, 1),
        act(0, "plant", 5, 5),
        act(1, "plant", 5, 5),
    ):
        assert not isinstance(state.apply(action), Refusal)
    assert state.mines == [1 << at(5, 5), 1 << at(5, 5)]
    assert where(state) == ("explore", 0, 1)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("step", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", ["flag", "unflag", "end_turn"])
def test_f1_no_markers_and_no_end_turn_in_the_opening(variant: Variant, step: int, kind: str) -> None:
    """F1: in every opening step, markers and end turn are refused as wrong_phase, changing nothing."""
    state = GameState(variant)
    for action in [act(0, "explore", 0, 0), act(1, "explore", 0, 1), act(0, "plant", 5, 5)][:step]:
        state.play(action)
    seat = state.to_move
    assert seat is not None
    before = state.snapshot()
    action = act(seat, kind) if kind == "end_turn" else act(seat, kind, 3, 3)
    assert state.apply(action) is Refusal.WRONG_PHASE
    assert state.snapshot() == before


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("first", "second"), [((0, 0), (7, 7)), ((3, 3), (3, 4)), ((6, 1), (0, 0))])
def test_f1_opening_explores_are_always_safe(
    variant: Variant, first: tuple[int, int], second: tuple[int, int]
) -> None:
    """F1: no mine exists during the opening explores, so neither can end the match."""
    state = GameState(variant)
    state.play(act(0, "explore", *first))
    state.play(act(1, "explore", *second))
    assert state.outcome() is None
    assert state.mines == [0, 0]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("step", "kind"),
    [(0, "plant"), (1, "plant"), (2, "explore"), (3, "explore")],
)
def test_f1_opening_steps_come_in_their_fixed_order(variant: Variant, step: int, kind: str) -> None:
    """F1: a plant during the explore steps, or an explore during the plant steps, is refused."""
    state = GameState(variant)
    for action in [act(0, "explore", 0, 0), act(1, "explore", 0, 1), act(0, "plant", 5, 5)][:step]:
        state.play(action)
    seat = state.to_move
    assert seat is not None
    before = state.snapshot()
    assert state.apply(act(seat, kind, 4, 4)) is Refusal.WRONG_PHASE
    assert state.snapshot() == before


# ----- F2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_f2_normal_turn_is_explore_plant_end_wait_end_turn(variant: Variant) -> None:
    """F2: EXPLORE → PLANT → END_WAIT → end turn → the other seat's EXPLORE."""
    state = opened(variant)
    state.play(act(0, "explore", 3, 3))
    assert where(state) == ("plant", 0, 1)
    state.play(act(0, "plant", 4, 4))
    assert where(state) == ("end_wait", 0, 1)
    state.play(act(0, "end_turn"))
    assert where(state) == ("explore", 1, 2)
    state.play(act(1, "explore", 2, 2))
    state.play(act(1, "plant", 5, 5))
    state.play(act(1, "end_turn"))
    assert where(state) == ("explore", 0, 3)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("done", "kind"),
    [
        (0, "plant"),  # plant before explore
        (0, "end_turn"),  # end turn before explore
        (1, "explore"),  # a second explore
        (1, "end_turn"),  # end turn before plant
        (2, "explore"),  # explore after the plant
        (2, "plant"),  # a second plant
    ],
)
def test_f2_order_of_the_mandatory_actions_is_fixed(variant: Variant, done: int, kind: str) -> None:
    """F2: the two mandatory actions come in their order, once each; anything else is wrong_phase."""
    state = opened(variant)
    for action in [act(0, "explore", 3, 3), act(0, "plant", 4, 4)][:done]:
        state.play(action)
    before = state.snapshot()
    action = act(0, kind) if kind == "end_turn" else act(0, kind, 2, 2)
    assert state.apply(action) is Refusal.WRONG_PHASE
    assert state.snapshot() == before


# ----- F3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_f3_turn_number_0_in_opening_1_first_turn_then_plus_one_per_turn(variant: Variant) -> None:
    """F3: 0 through the whole opening, 1 for the first normal turn, +1 whenever a normal turn starts."""
    state = GameState(variant)
    turns = []
    for action in (act(0, "explore", 0, 0), act(1, "explore", 0, 7), act(0, "plant", 7, 0)):
        state.play(action)
        turns.append(state.turn)
    assert turns == [0, 0, 0]
    state.play(act(1, "plant", 7, 7))
    assert state.turn == 1
    cells = [(2, 2), (3, 3), (4, 4), (5, 5)]
    for i, cell in enumerate(cells):
        seat = state.to_move
        assert seat is not None
        state.play(act(seat, "explore", *cell))
        state.play(act(seat, "plant", cell[0], 0 if cell[0] % 2 else 1))
        assert state.turn == i + 1  # unchanged within the turn
        state.play(act(seat, "end_turn"))
        assert state.turn == i + 2


@pytest.mark.parametrize("variant", VARIANTS)
def test_f3_turn_number_unchanged_after_the_end(variant: Variant) -> None:
    """F3: a KO during turn 2 leaves the turn number at 2, and refused actions after the end keep it."""
    state = opened(variant)
    state.play(act(0, "explore", 3, 3))
    state.play(act(0, "plant", 4, 4))
    state.play(act(0, "end_turn"))
    state.play(act(1, "explore", 7, 0))  # seat 0's mine: KO
    assert state.turn == 2
    assert state.apply(act(0, "end_turn")) is Refusal.GAME_OVER
    assert state.turn == 2


def test_f3_a_draw_at_the_start_of_a_turn_counts_that_turn() -> None:
    """F3: end turn into a C1.1 all-flagged board ends at the new turn number (7 → 8)."""
    state = from_ascii(
        """
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? o? o? o?
        o? o? o? o? o? Ab Ba .a
        """,
        phase=Phase.END_WAIT,
        to_move=0,
        turn=7,
    )
    state.play(act(0, "end_turn"))
    outcome = state.outcome()
    assert outcome is not None and outcome.reason is Reason.ALL_FLAGGED
    assert state.turn == 8


# ----- F4 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    "kind_cell",
    [("explore", (3, 3)), ("plant", (3, 3)), ("flag", (3, 3)), ("unflag", (6, 6)), ("end_turn", None)],
)
@pytest.mark.parametrize("done", [0, 1, 2])
def test_f4_only_the_seat_to_move_may_act(
    variant: Variant, kind_cell: tuple[str, tuple[int, int] | None], done: int
) -> None:
    """F4: any core action by the seat not to move is refused not_your_turn and changes nothing."""
    state = opened(variant)
    state.markers[1] |= 1 << at(6, 6)
    for action in [act(0, "explore", 2, 2), act(0, "plant", 5, 5)][:done]:
        state.play(action)
    kind, cell = kind_cell
    action = act(1, kind) if cell is None else act(1, kind, *cell)
    before = state.snapshot()
    assert state.apply(action) is Refusal.NOT_YOUR_TURN
    assert state.snapshot() == before


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_f4_only_the_seat_to_move_may_act_in_the_opening(step: int) -> None:
    """F4: in each opening step the other seat's explore or plant is refused not_your_turn."""
    state = GameState()
    for action in [act(0, "explore", 0, 0), act(1, "explore", 0, 1), act(0, "plant", 5, 5)][:step]:
        state.play(action)
    other = 1 - state.to_move  # type: ignore[operator]
    kind = "explore" if state.phase is Phase.OPEN_EXPLORE else "plant"
    before = state.snapshot()
    assert state.apply(act(other, kind, 3, 3)) is Refusal.NOT_YOUR_TURN
    assert state.snapshot() == before


@pytest.mark.parametrize("done", [0, 1, 2])
def test_f4_resignation_is_the_one_exception(done: int) -> None:
    """F4/O11: the seat not to move may still resign (ONLINE), and loses."""
    state = opened(Variant.ONLINE)
    for action in [act(0, "explore", 2, 2), act(0, "plant", 5, 5)][:done]:
        state.play(action)
    assert not isinstance(state.apply(act(1, "resign")), Refusal)
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (0, Reason.RESIGN)
