"""RULES.md §6 (CPU progress checks and endings, C1–C4), in ASCII end-game positions.

Most boards here are fully revealed except the last row, so that each scenario is decided by
the two or three closed cells written out in the test.
"""

from __future__ import annotations

import pytest
from support.rule_helpers import act, at

from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Phase,
    Reason,
    Refusal,
    Variant,
)
from mineduel.shared.rules.notation import from_ascii


def endgame(
    last: str,
    *,
    variant: Variant = Variant.CPU,
    phase: Phase = Phase.EXPLORE,
    to_move: int = 0,
    turn: int = 20,
    marker_used: bool = False,
) -> GameState:
    """Rows 0–6 revealed by seat 0 (numbers unchecked); row 7 ends with the tokens of ``last``."""
    rows = ["o? " * 8] * 7 + ["o? " * (8 - len(last.split())) + last]
    return from_ascii(
        "\n".join(rows), variant=variant, phase=phase, to_move=to_move, turn=turn, marker_used=marker_used
    )


def reason(state: GameState) -> Reason | None:
    outcome = state.outcome()
    return None if outcome is None else outcome.reason


# ----- C1.1 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("last", ["Ab Ba .a", "Ab Ba .b", "Aa Bb Xa", ".a .b .a"])
def test_c1_1_all_flagged_at_turn_start_is_a_draw(last: str) -> None:
    """C1.1: when the next seat's turn starts with every unrevealed cell marked, the match is a draw: all flagged."""
    state = endgame(last, phase=Phase.END_WAIT)
    state.play(act(0, "end_turn"))
    outcome = state.outcome()
    assert outcome is not None
    assert (outcome.winner, outcome.reason, outcome.scores) == (None, Reason.ALL_FLAGGED, None)
    assert state.turn == 21


def test_c1_1_a_marker_in_explore_that_flags_everything_ends_in_a_draw() -> None:
    """C1.1: C1 runs again after a marker placed in EXPLORE; the last unmarked cell flagged → all flagged."""
    state = endgame("Ab Ba ..")
    state.play(act(0, "flag", 7, 7))
    assert reason(state) is Reason.ALL_FLAGGED


def test_c1_1_all_flagged_beats_c1_3() -> None:
    """C1.1 before C1.3: explorable empty and recoverable not empty, but all cells are flagged → draw."""
    state = endgame("Ab Ba .b", phase=Phase.END_WAIT)  # seat 1's recoverable: (7,7)
    assert state.recoverable(1) and not (state.explorable(1))
    state.play(act(0, "end_turn"))
    assert reason(state) is Reason.ALL_FLAGGED


def test_c1_1_a_held_seat_flagging_its_own_mine_ends_all_flagged() -> None:
    """C1.1/C2b: a seat held by C1.3 may use its quota; a bluff on its last unmarked mine flags everything → draw."""
    state = endgame("A. .a Bb")
    assert reason(state) is None and not state.explorable(0) and state.recoverable(0)
    assert not isinstance(state.apply(act(0, "flag", 7, 5)), Refusal)
    assert reason(state) is Reason.ALL_FLAGGED


# ----- C1.2 / C1.3 -------------------------------------------------------------------------------------
def test_c1_2_something_explorable_goes_on() -> None:
    """C1.2: with an explorable cell (even an opponent's mine) the turn goes on normally."""
    state = endgame("B. Ab .a", phase=Phase.END_WAIT, to_move=1)
    state.play(act(1, "end_turn"))
    assert (reason(state), state.phase, state.to_move) == (None, Phase.EXPLORE, 0)


def test_c1_3_keeps_the_turn_so_the_seat_removes_its_marker_and_explores_there() -> None:
    """C1.3: explorable empty but recoverable not → turn and phase kept; unflag, then explore that cell."""
    state = endgame("B. .b Aa", phase=Phase.END_WAIT, to_move=0)
    state.play(act(0, "end_turn"))
    assert (reason(state), state.phase, state.to_move, state.turn) == (None, Phase.EXPLORE, 1, 21)
    assert state.apply(act(1, "end_turn")) is Refusal.WRONG_PHASE  # no pass
    assert not isinstance(state.apply(act(1, "unflag", 7, 6)), Refusal)
    assert (reason(state), state.phase, state.to_move) == (None, Phase.EXPLORE, 1)
    assert not isinstance(state.apply(act(1, "explore", 7, 6)), Refusal)
    assert state.revealer(at(7, 6)) == 1


def test_c1_3_after_flagging_the_last_explorable_cell_the_turn_is_held() -> None:
    """C1.3: C1 runs after a marker in EXPLORE; flagging one's last explorable cell holds the turn (no draw)."""
    state = endgame("B. .. Aa", to_move=1)
    assert not isinstance(state.apply(act(1, "flag", 7, 6)), Refusal)
    assert (reason(state), state.phase, state.to_move) == (None, Phase.EXPLORE, 1)
    assert not isinstance(state.apply(act(1, "unflag", 7, 6)), Refusal)
    assert not isinstance(state.apply(act(1, "explore", 7, 6)), Refusal)


# ----- C1.4 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("last", ["B. Ba Aa", "B. Bb Aa", "B. Bb X."])
def test_c1_4_nothing_explorable_nothing_recoverable_is_a_draw(last: str) -> None:
    """C1.4: no explorable and no recoverable cell (own markers only on own mines) → draw: no explorable cell."""
    state = endgame(last, phase=Phase.END_WAIT, to_move=0)
    state.play(act(0, "end_turn"))
    outcome = state.outcome()
    assert outcome is not None
    assert (outcome.winner, outcome.reason) == (None, Reason.NO_EXPLORABLE)
    assert (state.phase, state.to_move, state.turn) == (Phase.OVER, None, 21)


def test_c1_does_not_run_in_the_opening() -> None:
    """C1: the opening has no progress check; a fresh match never ends on its own."""
    state = GameState(Variant.CPU)
    for action in (act(0, "explore", 0, 0), act(1, "explore", 0, 1), act(0, "plant", 1, 1)):
        state.play(action)
        assert state.outcome() is None


# ----- C2 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("last", ["A. .. Bb", "A. .. Ab", "A. .. Aa"])
def test_c2_entering_plant_with_nothing_plantable_is_a_draw(last: str) -> None:
    """C2: after exploring the last non-own-mine cell, no plantable and no recoverable cell → draw: no cell to plant."""
    state = endgame(last)
    assert not isinstance(state.apply(act(0, "explore", 7, 6)), Refusal)
    outcome = state.outcome()
    assert outcome is not None
    assert (outcome.winner, outcome.reason) == (None, Reason.NO_PLANTABLE)
    assert state.revealer(at(7, 6)) == 0  # the explore itself stands


def test_c2_recoverable_marker_holds_the_plant_phase() -> None:
    """C2: plantable empty but recoverable not → PLANT is kept; removing the marker lets the seat plant there."""
    state = endgame("A. .. .a")
    state.play(act(0, "explore", 7, 6))
    assert (reason(state), state.phase, state.to_move) == (None, Phase.PLANT, 0)
    assert state.apply(act(0, "end_turn")) is Refusal.WRONG_PHASE
    state.play(act(0, "unflag", 7, 7))
    assert not isinstance(state.apply(act(0, "plant", 7, 7)), Refusal)
    assert state.phase is Phase.END_WAIT


def test_c2_has_no_all_flagged_test() -> None:
    """C2: entering PLANT with every unrevealed cell marked is a hold (recoverable), not an all-flagged draw."""
    state = endgame("Ab .. .a")
    state.play(act(0, "explore", 7, 6))
    assert (reason(state), state.phase) == (None, Phase.PLANT)


def test_c2_all_flagged_without_recoverable_is_no_plantable_not_all_flagged() -> None:
    """C2: every unrevealed cell marked and nothing recoverable on entering PLANT → no_plantable."""
    state = endgame("Ab .. Aa")
    state.play(act(0, "explore", 7, 6))
    assert reason(state) is Reason.NO_PLANTABLE


def test_c2_runs_after_a_marker_in_plant_and_holds() -> None:
    """C2: a marker placed on the last plantable cell during PLANT holds the phase instead of ending the match."""
    state = endgame("A. .. ..")
    state.play(act(0, "explore", 7, 6))
    assert not isinstance(state.apply(act(0, "flag", 7, 7)), Refusal)
    assert (reason(state), state.phase, state.to_move) == (None, Phase.PLANT, 0)
    state.play(act(0, "unflag", 7, 7))
    assert not isinstance(state.apply(act(0, "plant", 7, 7)), Refusal)


# ----- C2b -----------------------------------------------------------------------------------------------
def test_c2b_marker_work_in_end_wait_triggers_no_check() -> None:
    """C2b: flagging the last unmarked cell in END_WAIT ends nothing; the next seat's C1 notices (all flagged)."""
    state = endgame("Ab Ba ..", phase=Phase.END_WAIT)
    assert not isinstance(state.apply(act(0, "flag", 7, 7)), Refusal)
    assert (reason(state), state.phase, state.to_move, state.turn) == (None, Phase.END_WAIT, 0, 20)
    state.play(act(0, "end_turn"))
    assert reason(state) is Reason.ALL_FLAGGED
    assert state.turn == 21


def test_c2b_a_bluff_that_blocks_the_seats_own_board_in_end_wait_ends_nothing() -> None:
    """C2b: after a bluff in END_WAIT nothing is plantable or explorable for the seat (C1.4/C2 would draw), yet play goes on."""
    state = endgame("A. A. Bb", phase=Phase.END_WAIT)
    assert not isinstance(state.apply(act(0, "flag", 7, 5)), Refusal)
    assert not state.plantable(0) and not state.recoverable(0)
    assert (reason(state), state.phase, state.to_move) == (None, Phase.END_WAIT, 0)
    state.play(act(0, "end_turn"))
    assert (reason(state), state.phase, state.to_move) == (None, Phase.EXPLORE, 1)  # seat 1 may explore (7,6)


def test_c2b_unflag_in_end_wait_triggers_no_check_either() -> None:
    """C2b: a removal in END_WAIT on a blocked board leaves the turn in END_WAIT."""
    state = endgame("A. Bb .a", phase=Phase.END_WAIT)
    assert not isinstance(state.apply(act(0, "unflag", 7, 7)), Refusal)
    assert (reason(state), state.phase) == (None, Phase.END_WAIT)


@pytest.mark.parametrize("hold", ["c1_3", "c2"])
def test_c2b_a_held_seat_may_still_use_its_unused_quota(hold: str) -> None:
    """C2b: while C1.3 or C2 holds the turn, a new marker (one) is still accepted."""
    if hold == "c1_3":
        state = endgame("B. B. .b Aa", to_move=1)
        phase = Phase.EXPLORE
    else:
        state = endgame("B. B. .. .b", to_move=1)
        state.play(act(1, "explore", 7, 6))
        phase = Phase.PLANT
    assert (reason(state), state.phase, state.to_move) == (None, phase, 1)
    assert not state.explorable(1) and state.recoverable(1)
    assert state.quota_left == 1
    assert not isinstance(state.apply(act(1, "flag", 7, 4)), Refusal)  # a bluff on its own mine
    assert (reason(state), state.phase, state.to_move) == (None, phase, 1)  # still held
    assert state.apply(act(1, "flag", 7, 5)) is Refusal.QUOTA_USED


# ----- C3 ------------------------------------------------------------------------------------------------
def test_c3_checkmate_forces_the_loss() -> None:
    """C3: no quota, only opponent mines explorable: no pass, no end turn; every legal action explores and loses."""
    state = endgame("B. B. Aa", marker_used=True)
    legal = list(state.legal_actions())
    assert {a.type for a in legal} == {ActionType.EXPLORE, ActionType.UNFLAG}
    assert state.apply(act(0, "end_turn")) is Refusal.WRONG_PHASE
    assert state.apply(act(0, "flag", 7, 5)) is Refusal.QUOTA_USED
    state.play(act(0, "unflag", 7, 7))  # removing the bluff changes nothing: (7,7) is its own mine
    assert {a.cell for a in state.legal_actions() if a.type is ActionType.EXPLORE} == {at(7, 5), at(7, 6)}
    state.play(act(0, "explore", 7, 5))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (1, Reason.KO)


def test_c3_a_marker_only_delays_checkmate() -> None:
    """C3: with quota left, marking one opponent mine still leaves the other to explore (C1.2), and the KO follows."""
    state = endgame("B. B. A.")
    state.play(act(0, "flag", 7, 5))
    assert (reason(state), state.phase) == (None, Phase.EXPLORE)
    state.play(act(0, "explore", 7, 6))
    assert reason(state) is Reason.KO


# ----- C4 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("explorer", "winner"), [(0, 1), (1, 0)])
def test_c4_human_exploring_cpu_mine_loses_cpu_exploring_human_mine_wins(explorer: int, winner: int) -> None:
    """C4: the human is seat 0 (V1): exploring the CPU's mine is a loss, the CPU exploring the human's mine a win."""
    state = endgame("A. B. ..", to_move=explorer)
    target = (7, 6) if explorer == 0 else (7, 5)
    state.play(act(explorer, "explore", *target))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (winner, Reason.KO)


@pytest.mark.parametrize(
    ("last", "phase", "action", "expected"),
    [
        ("Ab Ba ..", Phase.EXPLORE, act(0, "flag", 7, 7), Reason.ALL_FLAGGED),
        ("B. Ba Aa", Phase.END_WAIT, act(0, "end_turn"), Reason.NO_EXPLORABLE),
        ("A. .. Bb", Phase.EXPLORE, act(0, "explore", 7, 6), Reason.NO_PLANTABLE),
    ],
)
def test_c4_the_three_draws_have_no_winner_and_the_result_is_fixed_once(
    last: str, phase: Phase, action: Action, expected: Reason
) -> None:
    """C4: each CPU draw has winner None; afterwards every action is refused and the result never changes."""
    state = endgame(last, phase=phase)
    state.play(action)
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (None, expected)
    for later in (act(1, "explore", 7, 7), act(0, "unflag", 7, 5), act(1, "end_turn")):
        assert state.apply(later) is Refusal.GAME_OVER
    assert state.outcome() == outcome


# ----- the CPU variant never uses the ONLINE score ending (O9) ----------------------------------------
def test_cpu_variant_has_no_score_ending() -> None:
    """§6 vs §7: a CPU board with no safe unmarked cell left goes on (C1.2), where ONLINE would end by score."""
    cpu = endgame("A. .. B.")
    online = endgame("A. .. B.", variant=Variant.ONLINE)
    for state in (cpu, online):
        state.play(act(0, "explore", 7, 6))
    assert (reason(cpu), cpu.phase) == (None, Phase.PLANT)
    assert reason(online) is Reason.SCORE


@pytest.mark.parametrize("kind", ["timeout", "resign", "disconnect", "void"])
@pytest.mark.parametrize("seat", [0, 1])
def test_cpu_variant_refuses_online_only_actions(kind: str, seat: int) -> None:
    """O11/RECORD.md: the CPU variant has no resignation, timeout, disconnection or void (refused, nothing changes)."""
    state = endgame("A. .. B.")
    before = state.snapshot()
    assert state.apply(act(seat, kind)) is Refusal.NOT_ONLINE
    assert state.snapshot() == before
