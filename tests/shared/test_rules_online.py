"""RULES.md §7 (ONLINE, O1–O16) as far as the rules engine carries them.

The engine has no clock, sockets or storage: deadlines arrive as ``timeout`` actions, the
server's random source as a ``Picker``, and the rules about rooms, tokens and retention
(O1, O15, O16) belong to the server; tests/test_server_rooms.py proves them.
"""

from __future__ import annotations

import pytest
from support.rule_helpers import act, at

from mineduel.shared.rules.bitboard import cells, nth_cell
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

ONLINE = Variant.ONLINE


def endgame(
    last: str,
    *,
    phase: Phase = Phase.EXPLORE,
    to_move: int = 0,
    turn: int = 20,
    marker_used: bool = False,
    variant: Variant = ONLINE,
) -> GameState:
    """Rows 0–6 revealed (numbers unchecked); row 7 ends with the tokens of ``last``."""
    rows = ["o? " * 8] * 7 + ["o? " * (8 - len(last.split())) + last]
    return from_ascii(
        "\n".join(rows), variant=variant, phase=phase, to_move=to_move, turn=turn, marker_used=marker_used
    )


def opened() -> GameState:
    """An ONLINE match right after the opening (mines at (7,0) for seat 0 and (7,7) for seat 1)."""
    state = GameState(ONLINE)
    for action in (
        act(0, "explore", 0, 0),
        act(1, "explore", 0, 7),
        act(0, "plant", 7, 0),
        act(1, "plant", 7, 7),
    ):
        state.play(action)
    return state


OPENING_PREFIX = [act(0, "explore", 0, 0), act(1, "explore", 0, 7), act(0, "plant", 7, 0)]


def opening_step(step: int) -> GameState:
    state = GameState(ONLINE)
    for action in OPENING_PREFIX[:step]:
        state.play(action)
    return state


class FakePicker:
    """A Picker that answers a fixed index (negative: from the end) and records each ``n`` it was asked."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.calls: list[int] = []

    def pick(self, n: int) -> int:
        self.calls.append(n)
        return self.index if self.index >= 0 else n + self.index


# ----- O2 / O3 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", [Variant.CPU, ONLINE])
def test_o2_o3_a_match_starts_in_the_opening_with_the_first_player_seat_0(variant: Variant) -> None:
    """O2/O3/V1: a new match starts at opening step 1, seat 0 (whoever the server drew) to move, turn 0, empty board."""
    state = GameState(variant)
    assert (state.phase, state.to_move, state.turn, state.outcome()) == (Phase.OPEN_EXPLORE, 0, 0, None)
    assert (state.revealed, state.mines, state.markers) == (0, [0, 0], [0, 0])
    assert state.apply(act(1, "explore", 0, 0)) is Refusal.NOT_YOUR_TURN


# ----- O4 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_o4_an_opening_timeout_changes_nothing_by_itself(step: int) -> None:
    """O4: a timeout during an opening step is accepted and leaves the state exactly as it was."""
    state = opening_step(step)
    before = state.snapshot()
    assert not isinstance(state.apply(act(state.to_move, "timeout")), Refusal)  # type: ignore[arg-type]
    assert state.snapshot() == before


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_o4_only_the_seat_to_move_times_out_in_the_opening(step: int) -> None:
    """O4/RECORD.md: a timeout by the seat not to move is refused not_your_turn."""
    state = opening_step(step)
    before = state.snapshot()
    assert state.apply(act(1 - state.to_move, "timeout")) is Refusal.NOT_YOUR_TURN  # type: ignore[operator]
    assert state.snapshot() == before


@pytest.mark.parametrize("step", [0, 1, 2, 3])
@pytest.mark.parametrize("index", [0, 1, 17, -1])
def test_o4_the_auto_move_follows_a_timeout_uniform_over_valid_cells(step: int, index: int) -> None:
    """O4: after the timeout the auto-move is the picker's cell among all valid cells in ascending order, and is accepted."""
    state = opening_step(step)
    seat = state.to_move
    assert seat is not None
    state.play(act(seat, "timeout"))
    picker = FakePicker(index)
    action = state.opening_auto_action(picker)
    options = state.explorable(seat)
    assert picker.calls == [options.bit_count()]
    assert picker.calls[0] == [64, 63, 62, 62][step]
    assert action.seat == seat
    assert action.type is (ActionType.EXPLORE if step < 2 else ActionType.PLANT)
    assert action.cell == nth_cell(options, picker.calls[0] - 1 if index == -1 else index)
    assert not isinstance(state.apply(action), Refusal)


def test_o4_second_explore_auto_move_never_picks_the_revealed_cell() -> None:
    """O4: the auto-move obeys the manual conditions: seat 1's opening explore skips the revealed cell."""
    state = opening_step(1)  # seat 0 opened (0,0)
    action = state.opening_auto_action(FakePicker(0))
    assert action.cell == at(0, 1)


def test_o4_auto_plant_may_overlap_the_opponents_initial_mine() -> None:
    """O4: seat 1's automatic initial mine may land on seat 0's mine (overlap allowed)."""
    state = opening_step(3)  # seat 0's mine at (7,0)
    options = list(cells(state.explorable(1)))
    assert at(7, 0) in options
    action = state.opening_auto_action(FakePicker(options.index(at(7, 0))))
    assert action == Action(1, ActionType.PLANT, at(7, 0))
    assert not isinstance(state.apply(action), Refusal)
    assert state.mines == [1 << at(7, 0), 1 << at(7, 0)]


@pytest.mark.parametrize("phase", [Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT])
def test_o4_auto_moves_exist_only_in_the_opening(phase: Phase) -> None:
    """O4/O5: asking for an auto-move in a normal turn is an error (no automatic explore or plant)."""
    state = endgame(".. .. ..", phase=phase)
    with pytest.raises(ValueError):
        state.opening_auto_action(FakePicker(0))


# ----- O5 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("done", [0, 1, 2, 3])
def test_o5_timeout_skips_what_is_missing_and_passes_the_turn(done: int) -> None:
    """O5/F3: at expiry completed actions stay, nothing is added, the other seat's turn starts, turn +1."""
    state = opened()
    for action in [act(0, "explore", 3, 3), act(0, "plant", 4, 4), act(0, "flag", 5, 5)][:done]:
        state.play(action)
    revealed, mines, markers = state.revealed, list(state.mines), list(state.markers)
    assert not isinstance(state.apply(act(0, "timeout")), Refusal)
    assert (state.phase, state.to_move, state.turn) == (Phase.EXPLORE, 1, 2)
    assert (state.revealed, state.mines, state.markers) == (revealed, mines, markers)
    assert state.quota_left == 1 and state.outcome() is None


def test_o5_consecutive_timeouts_each_start_a_turn() -> None:
    """O5/F3: three timeouts in a row pass the turn three times and add three to the turn number."""
    state = opened()
    for expected_turn, expected_seat in ((2, 1), (3, 0), (4, 1)):
        state.play(act(state.to_move, "timeout"))  # type: ignore[arg-type]
        assert (state.turn, state.to_move, state.phase) == (expected_turn, expected_seat, Phase.EXPLORE)


@pytest.mark.parametrize("done", [0, 1, 2])
def test_o5_only_the_seat_to_move_times_out(done: int) -> None:
    """O5/RECORD.md: the seat not to move has no deadline: its timeout is refused and changes nothing."""
    state = opened()
    for action in [act(0, "explore", 3, 3), act(0, "plant", 4, 4)][:done]:
        state.play(action)
    before = state.snapshot()
    assert state.apply(act(1, "timeout")) is Refusal.NOT_YOUR_TURN
    assert state.snapshot() == before


# ----- O6 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("late", [act(0, "explore", 3, 3), act(0, "flag", 3, 3), act(0, "end_turn")])
def test_o6_a_late_action_after_the_settled_timeout_is_refused(late: Action) -> None:
    """O6: once the expired deadline is settled (the timeout), the late seat's action is refused not_your_turn."""
    state = opened()
    state.play(act(0, "timeout"))
    before = state.snapshot()
    assert state.apply(late) is Refusal.NOT_YOUR_TURN
    assert state.snapshot() == before


def test_o6_the_deadline_is_the_servers_and_only_passes_through_the_view() -> None:
    """O6: the engine keeps no clock; the deadline a view shows is the one the server hands in."""
    state = opened()
    assert state.view(0).deadline is None
    assert state.view(0, deadline=1234.5).deadline == 1234.5
    assert "deadline" not in GameState.__slots__


# ----- O7 ---------------------------------------------------------------------------------------------
def test_o7_ko_ends_before_the_cannot_continue_check_runs() -> None:
    """O7: KO beats score: exploring the opponent's mine on a board with no safe cell ends by KO, not by score."""
    state = endgame("A. B. .a .b")  # no safe unmarked cell (a position O9 would end)
    state.play(act(0, "explore", 7, 5))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason, outcome.scores) == (1, Reason.KO, None)


def test_o7_a_refused_action_runs_no_check() -> None:
    """O7: validation comes first: a refused action does not reach the cannot-continue check."""
    state = endgame("A. B. .a .b")
    before = state.snapshot()
    assert state.apply(act(0, "explore", 7, 4)) is Refusal.OWN_MINE
    assert state.snapshot() == before and state.outcome() is None


# ----- O8 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seat", "token", "expected"),
    [
        (0, "A.", Refusal.OWN_MINE),
        (0, "X.", Refusal.OWN_MINE),
        (1, "B.", Refusal.OWN_MINE),
        (1, "X.", Refusal.OWN_MINE),
    ],
)
def test_o8_own_mine_and_overlap_cells_are_refused(seat: int, token: str, expected: Refusal) -> None:
    """O8: own-mine and overlap cells are refused as own mine (the overlap holds one's own mine)."""
    state = endgame(f"{token} .. ..", to_move=seat)
    before = state.snapshot()
    assert state.apply(act(seat, "explore", 7, 5)) is expected
    assert state.snapshot() == before


@pytest.mark.parametrize(("seat", "token"), [(0, "B."), (1, "A.")])
def test_o8_only_the_opponents_mine_alone_is_a_ko(seat: int, token: str) -> None:
    """O8: a cell holding only the opponent's mine is a KO: the explorer loses."""
    state = endgame(f"{token} .. ..", to_move=seat)
    state.play(act(seat, "explore", 7, 5))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (1 - seat, Reason.KO)


# ----- O9 ---------------------------------------------------------------------------------------------
def test_o9_exploring_the_last_safe_cell_ends_by_score_at_once() -> None:
    """O9: when no unrevealed, unmarked, mine-free cell remains after an explore, the match ends by score before the plant."""
    state = endgame("A. B. ..")
    state.play(act(0, "explore", 7, 7))
    outcome = state.outcome()
    assert outcome is not None and (outcome.reason, outcome.scores, outcome.winner) == (
        Reason.SCORE,
        (0, 0),
        None,
    )
    assert state.phase is Phase.OVER and state.turn == 20


def test_o9_ends_even_when_a_wrong_marker_hides_the_last_safe_cell() -> None:
    """O9: flagging the last safe cell (a wrong marker) ends the match at once; no chance to remove it; it counts −1."""
    state = endgame("A. B. ..", phase=Phase.END_WAIT)
    assert not isinstance(state.apply(act(0, "flag", 7, 7)), Refusal)
    outcome = state.outcome()
    assert outcome is not None and (outcome.reason, outcome.scores, outcome.winner) == (
        Reason.SCORE,
        (-1, 0),
        1,
    )
    assert state.apply(act(0, "unflag", 7, 7)) is Refusal.GAME_OVER


@pytest.mark.parametrize("phase", [Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT])
def test_o9_any_marker_action_can_end_the_match(phase: Phase) -> None:
    """O9: the check runs after markers in every normal phase, not only after explore and plant."""
    state = endgame("A. B. ..", phase=phase)
    state.play(act(0, "flag", 7, 7))
    assert state.outcome() is not None and state.outcome().reason is Reason.SCORE  # type: ignore[union-attr]


def test_o9_planting_on_the_last_safe_cell_ends_by_score() -> None:
    """O9: a plant that fills the last safe cell ends the match by score."""
    state = endgame("A. B. ..", phase=Phase.PLANT, to_move=1)
    state.play(act(1, "plant", 7, 7))
    outcome = state.outcome()
    assert outcome is not None and outcome.reason is Reason.SCORE


def test_o9_overlap_plant_on_a_mine_does_not_end_the_match() -> None:
    """O9/V5: a plant on the opponent's mine leaves the safe cells as they were: the match goes on."""
    state = endgame("A. B. ..", phase=Phase.PLANT, to_move=1)
    state.play(act(1, "plant", 7, 5))
    assert (state.outcome(), state.phase) == (None, Phase.END_WAIT)


def test_o9_with_u_empty_every_unrevealed_cell_marked() -> None:
    """O9: a marker on the last unmarked cell leaves U empty (so S empty): the end by score at once."""
    state = endgame("Ab Ba ..")
    state.play(act(0, "flag", 7, 7))
    outcome = state.outcome()
    # seat 0: (7,6) on B's mine +1, (7,7) empty −1 → 0; seat 1: (7,5) on A's mine +1 → 1
    assert outcome is not None and (outcome.reason, outcome.scores, outcome.winner) == (
        Reason.SCORE,
        (0, 1),
        1,
    )


def test_o9_is_checked_after_timeouts_too() -> None:
    """O9: a timeout is an applied action; the check runs after it like after any other."""
    state = endgame("A. B. .a")  # no safe cell: the check has not run on this hand-made board yet
    state.play(act(0, "timeout"))
    outcome = state.outcome()
    assert outcome is not None and outcome.reason is Reason.SCORE
    assert state.turn == 21  # the timeout started the next turn first (F3)


def test_o9_replaces_the_cpu_draws_online() -> None:
    """O9: a board that would be a CPU C1.4 draw ends by score online — the CPU draws do not exist here."""
    cpu = endgame("B. Ba Aa", phase=Phase.END_WAIT, variant=Variant.CPU)
    cpu.play(act(0, "end_turn"))
    assert cpu.outcome().reason is Reason.NO_EXPLORABLE  # type: ignore[union-attr]
    online = endgame("B. .. Aa", phase=Phase.PLANT, to_move=0)
    online.play(act(0, "plant", 7, 6))  # (7,6) was the last safe cell: O9 at once
    assert online.outcome().reason is Reason.SCORE  # type: ignore[union-attr]


def test_o9_online_never_holds_a_turn_like_c1_3() -> None:
    """O9/§6: online, a turn is never held like C1.3: with no safe cell left the match has already ended by score."""
    state = endgame("B. .b Aa ..", phase=Phase.END_WAIT, to_move=0)
    state.play(act(0, "flag", 7, 7))
    assert state.outcome() is not None and state.outcome().reason is Reason.SCORE  # type: ignore[union-attr]


# ----- O10 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("last", "scores", "winner"),
    [
        ("Ba Ab", (1, 1), None),  # equal scores draw
        ("Xa Ab", (1, 1), None),  # an overlap marker counts as correct
        ("Aa .b", (-1, -1), None),  # own-mine bluff is wrong; empty-cell marker is wrong
        ("Ba .b", (1, -1), 0),
        (".a .b .b", (-1, -2), 0),  # −1 beats −2
        (".a .a .b", (-2, -1), 1),
        ("Ba Xa .a Ab", (1, 1), None),
        ("Ba Xa A. Ab", (2, 1), 0),
        ("Bb Ab Aa", (-1, 0), 1),  # bluffs on one's own mine count −1 for both seats
        ("A. B.", (0, 0), None),  # no markers at all
    ],
)
def test_o10_score_is_correct_minus_wrong_higher_wins(
    last: str, scores: tuple[int, int], winner: int | None
) -> None:
    """O10: correct (on an opponent's mine, overlap included) minus wrong markers; higher wins, equal draws."""
    state = endgame(last + " ..")  # seat 0 explores the safe cell in the last column: O9 ends by score
    expected_scores = state.scores()
    assert expected_scores == scores
    state.play(act(0, "explore", 7, 7))
    outcome = state.outcome()
    assert outcome is not None
    assert (outcome.reason, outcome.scores, outcome.winner) == (Reason.SCORE, scores, winner)


def test_o10_removed_markers_do_not_count() -> None:
    """O10: a wrong marker removed before the end counts for nothing."""
    state = endgame("Aa Ab .. ..")  # seat 0's bluff would count −1
    state.play(act(0, "unflag", 7, 4))
    state.play(act(0, "explore", 7, 6))
    assert state.outcome() is None
    assert not isinstance(state.apply(act(0, "plant", 7, 7)), Refusal)  # the last safe cell planted: O9
    outcome = state.outcome()
    assert outcome is not None and (outcome.reason, outcome.scores, outcome.winner) == (
        Reason.SCORE,
        (0, 1),
        1,
    )


# ----- O11 ---------------------------------------------------------------------------------------------
MOMENTS = ["open_explore_1", "open_explore_2", "open_plant_3", "open_plant_4", "explore", "plant", "end_wait"]


def at_moment(moment: str) -> GameState:
    if moment.startswith("open"):
        return opening_step(int(moment[-1]) - 1)
    state = opened()
    for action in [act(0, "explore", 3, 3), act(0, "plant", 4, 4)][
        : ["explore", "plant", "end_wait"].index(moment)
    ]:
        state.play(action)
    return state


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("seat", [0, 1])
def test_o11_either_seat_may_resign_at_any_moment_and_loses(moment: str, seat: int) -> None:
    """O11: resignation by the seat to move or the other, in the opening or any phase, is a loss for the resigner."""
    state = at_moment(moment)
    turn = state.turn
    assert not isinstance(state.apply(act(seat, "resign")), Refusal)
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason, outcome.scores) == (
        1 - seat,
        Reason.RESIGN,
        None,
    )
    assert (state.phase, state.to_move, state.turn) == (Phase.OVER, None, turn)


def test_o11_score_never_overturns_a_resignation() -> None:
    """O11: a seat leading on markers that resigns still loses; resign ends before any score."""
    state = endgame("Ba Ba Ba .. ..")
    assert state.scores() == (3, 0)
    state.play(act(0, "resign"))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason, outcome.scores) == (
        1,
        Reason.RESIGN,
        None,
    )


@pytest.mark.parametrize("kind", ["resign", "disconnect", "void", "timeout"])
def test_o11_nothing_changes_a_fixed_result(kind: str) -> None:
    """O11/O12: after a KO, a resignation, disconnection, void or timeout is refused game_over."""
    state = endgame("B. .. ..")
    state.play(act(0, "explore", 7, 5))
    outcome, before = state.outcome(), state.snapshot()
    for seat in (0, 1):
        assert state.apply(act(seat, kind)) is Refusal.GAME_OVER
    assert state.outcome() == outcome and state.snapshot() == before


# ----- O12 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("seat", [0, 1])
def test_o12_disconnection_grace_over_loses_for_that_seat(moment: str, seat: int) -> None:
    """O12: when a seat's grace runs out (any moment, whoever is to move) that seat loses."""
    state = at_moment(moment)
    assert not isinstance(state.apply(act(seat, "disconnect")), Refusal)
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (1 - seat, Reason.DISCONNECT)


@pytest.mark.parametrize("seat", [0, 1])
def test_o12_both_graces_over_is_void(seat: int) -> None:
    """O12: both absent with both graces run out → void, no winner (the seat field means nothing)."""
    state = at_moment("plant")
    state.play(act(seat, "void"))
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason, outcome.scores) == (
        None,
        Reason.VOID,
        None,
    )


def test_o12_the_seat_that_ran_out_first_loses_and_a_later_grace_changes_nothing() -> None:
    """O12: the first grace to run out decides; the other seat's later disconnection or a void is refused."""
    state = at_moment("explore")
    state.play(act(1, "disconnect"))
    assert state.apply(act(0, "disconnect")) is Refusal.GAME_OVER
    assert state.apply(act(0, "void")) is Refusal.GAME_OVER
    outcome = state.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (0, Reason.DISCONNECT)


def test_o12_turns_keep_running_while_a_seat_is_away() -> None:
    """O12/O5: an absent seat's turns time out and pass like any other."""
    state = opened()
    state.play(act(0, "timeout"))
    state.play(act(1, "explore", 3, 3))
    state.play(act(1, "plant", 4, 4))
    state.play(act(1, "end_turn"))
    state.play(act(0, "timeout"))
    assert (state.turn, state.to_move, state.outcome()) == (4, 1, None)


# ----- O13 ---------------------------------------------------------------------------------------------
def test_o13_final_reveal_has_owners_overlaps_marker_correctness_and_ko_cell() -> None:
    """O13: after the end, all mines with owners, overlaps, each marker right or wrong, and the KO cell."""
    state = endgame("X. Ab Ba .a Xb Aa B. ..")
    state.play(act(0, "explore", 7, 6))  # B.: KO for seat 0
    reveal = state.reveal()
    assert reveal.mines == (
        (1 << at(7, 0)) | (1 << at(7, 1)) | (1 << at(7, 4)) | (1 << at(7, 5)),
        (1 << at(7, 0)) | (1 << at(7, 2)) | (1 << at(7, 4)) | (1 << at(7, 6)),
    )
    assert reveal.overlaps == (1 << at(7, 0)) | (1 << at(7, 4))
    assert reveal.markers == (
        (1 << at(7, 2)) | (1 << at(7, 3)) | (1 << at(7, 5)),
        (1 << at(7, 1)) | (1 << at(7, 4)),
    )
    assert reveal.correct_markers == (
        1 << at(7, 2),
        (1 << at(7, 1)) | (1 << at(7, 4)),
    )  # Xb: overlap is correct
    assert reveal.wrong_markers == ((1 << at(7, 3)) | (1 << at(7, 5)), 0)
    assert reveal.ko_cell == at(7, 6)
    assert reveal.outcome == state.outcome()


def test_o13_final_reveal_agrees_with_the_scores() -> None:
    """O13/O10: correct minus wrong per seat in the final reveal equals the score of the result."""
    state = endgame("Xa Ab .a ..")
    state.play(act(0, "explore", 7, 7))
    reveal = state.reveal()
    scores = tuple(
        reveal.correct_markers[s].bit_count() - reveal.wrong_markers[s].bit_count() for s in (0, 1)
    )
    assert reveal.outcome.scores == scores == (0, 1)
    assert reveal.ko_cell is None


@pytest.mark.parametrize("moment", MOMENTS)
def test_o13_final_reveal_is_refused_before_the_end(moment: str) -> None:
    """O13/V4: there is no full reveal while the match goes on."""
    with pytest.raises(ValueError):
        at_moment(moment).reveal()


def test_o13_rejoining_after_the_end_shows_the_same_result() -> None:
    """O13: asking again (a rejoin) gives the same reveal; nothing a seat sends afterwards changes it."""
    state = endgame("B. .. ..")
    state.play(act(0, "explore", 7, 5))
    first = state.reveal()
    state.apply(act(1, "resign"))
    state.apply(act(0, "disconnect"))
    assert state.reveal() == first


# ----- O14 ---------------------------------------------------------------------------------------------
def test_o14_a_rematch_is_a_fresh_state_sharing_nothing_with_the_last() -> None:
    """O14: board, mines, markers, quota, turn, phase and result all reset; states share no mutable parts."""
    finished = opened()
    finished.play(act(0, "flag", 5, 5))
    finished.play(act(0, "resign"))
    rematch = GameState(ONLINE)
    assert rematch.snapshot() == GameState(ONLINE).snapshot()
    assert (rematch.phase, rematch.to_move, rematch.turn, rematch.outcome(), rematch.quota_left) == (
        Phase.OPEN_EXPLORE,
        0,
        0,
        None,
        0,
    )
    assert (rematch.revealed, rematch.mines, rematch.markers) == (0, [0, 0], [0, 0])
    rematch.play(act(0, "explore", 1, 1))
    rematch.mines[0] |= 1
    assert GameState(ONLINE).mines == [0, 0] and finished.mines == [1 << at(7, 0), 1 << at(7, 7)]
    copy = finished.copy()
    copy.markers[0] = 0
    assert finished.markers[0] == 1 << at(5, 5)
