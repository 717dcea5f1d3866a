"""RULES.md §5 (actions, A1–A6): explore, plant, markers, end turn — and that refusals change nothing."""

from __future__ import annotations

import pytest
from support.rule_helpers import act, at

from mineduel.shared.rules.engine import (
    Action,
    GameState,
    Phase,
    Reason,
    Refusal,
    Variant,
)
from mineduel.shared.rules.notation import from_ascii

VARIANTS = [Variant.CPU, Variant.ONLINE]
NORMAL = [Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT]


# Row 0 holds one of everything; the rest is empty except mines far away, so no check ends anything.
BOARD = """
    o? x? A. B. X. .a .b Ab
    Ba Bb Aa .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
"""
REVEALED_0, REVEALED_1 = (0, 0), (0, 1)
MINE_A, MINE_B, OVERLAP = (0, 2), (0, 3), (0, 4)
MARK_A, MARK_B = (0, 5), (0, 6)
A_MINE_B_MARK, B_MINE_A_MARK, B_MINE_B_MARK, A_MINE_A_MARK = (0, 7), (1, 0), (1, 1), (1, 2)
EMPTY = (4, 4)


def board(
    variant: Variant = Variant.CPU, phase: Phase = Phase.EXPLORE, to_move: int = 0, marker_used: bool = False
) -> GameState:
    return from_ascii(BOARD, variant=variant, phase=phase, to_move=to_move, marker_used=marker_used)


def refused(state: GameState, action: Action) -> Refusal | None:
    """Apply ``action``; assert that a refusal leaves snapshot() and both views exactly as they were."""
    before = state.snapshot()
    views = (state.view(0), state.view(1))
    result = state.apply(action)
    if not isinstance(result, Refusal):
        assert result, f"{action} was accepted without events"
        return None
    assert state.snapshot() == before, f"{action} was refused ({result}) but changed the state"
    assert (state.view(0), state.view(1)) == views
    return result


# ----- A1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("seat", "cell", "expected"),
    [
        (0, MINE_A, Refusal.OWN_MINE),
        (1, MINE_B, Refusal.OWN_MINE),
        (0, OVERLAP, Refusal.OWN_MINE),  # O8: an overlap holds one's own mine
        (1, OVERLAP, Refusal.OWN_MINE),
        (0, REVEALED_0, Refusal.REVEALED),
        (0, REVEALED_1, Refusal.REVEALED),
        (1, REVEALED_0, Refusal.REVEALED),
        (0, MARK_A, Refusal.MARKED),  # A6: even one's own marker blocks
        (0, MARK_B, Refusal.MARKED),
        (1, MARK_A, Refusal.MARKED),
        (0, B_MINE_A_MARK, Refusal.MARKED),  # a marker even saves the explorer from a KO
        (1, A_MINE_B_MARK, Refusal.MARKED),
    ],
)
def test_a1_explore_refusals_change_nothing(
    variant: Variant, seat: int, cell: tuple[int, int], expected: Refusal
) -> None:
    """A1: an own-mine, revealed or marked cell is refused with its reason and nothing changes."""
    state = board(variant, to_move=seat)
    assert refused(state, act(seat, "explore", *cell)) is expected


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seat", [0, 1])
def test_a1_own_mine_under_a_bluff_marker_is_refused(variant: Variant, seat: int) -> None:
    """A1/A3: one's own mine under one's own marker cannot be explored (refused, nothing changes)."""
    state = board(variant, to_move=seat)
    cell = A_MINE_A_MARK if seat == 0 else B_MINE_B_MARK
    assert refused(state, act(seat, "explore", *cell)) in (Refusal.OWN_MINE, Refusal.MARKED)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("seat", "cell"), [(0, MINE_B), (1, MINE_A)])
def test_a1_exploring_the_opponents_mine_loses_at_once_and_stays_closed(
    variant: Variant, seat: int, cell: tuple[int, int]
) -> None:
    """A1: the explorer of an opponent's mine loses at once (KO); the cell is not revealed; the KO cell is kept."""
    state = board(variant, to_move=seat)
    revealed = state.revealed
    assert not isinstance(state.apply(act(seat, "explore", *cell)), Refusal)
    outcome = state.outcome()
    assert outcome is not None
    assert (outcome.winner, outcome.reason, outcome.scores) == (1 - seat, Reason.KO, None)
    assert state.revealed == revealed
    assert state.ko_cell == at(*cell)
    assert (state.phase, state.to_move) == (Phase.OVER, None)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seat", [0, 1])
def test_a1_a_safe_explore_reveals_by_the_seat_and_moves_to_plant(variant: Variant, seat: int) -> None:
    """A1: a safe cell is revealed with revealer = seat and the normal turn's phase becomes PLANT."""
    state = board(variant, to_move=seat)
    assert not isinstance(state.apply(act(seat, "explore", *EMPTY)), Refusal)
    assert state.revealer(at(*EMPTY)) == seat
    assert (state.phase, state.to_move, state.turn) == (Phase.PLANT, seat, 1)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", [Phase.PLANT, Phase.END_WAIT])
def test_a1_explore_only_in_the_explore_phase(variant: Variant, phase: Phase) -> None:
    """A1: outside EXPLORE (and the opening explore steps) an explore is refused wrong_phase."""
    state = board(variant, phase=phase)
    assert refused(state, act(0, "explore", *EMPTY)) is Refusal.WRONG_PHASE


# ----- A2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("seat", "cell", "expected"),
    [
        (0, MINE_A, Refusal.OWN_MINE),
        (0, OVERLAP, Refusal.OWN_MINE),
        (1, MINE_B, Refusal.OWN_MINE),
        (0, REVEALED_0, Refusal.REVEALED),
        (1, REVEALED_0, Refusal.REVEALED),
        (0, MARK_A, Refusal.MARKED),
        (0, MARK_B, Refusal.MARKED),
        (1, B_MINE_A_MARK, Refusal.MARKED),
    ],
)
def test_a2_plant_refusals_change_nothing(
    variant: Variant, seat: int, cell: tuple[int, int], expected: Refusal
) -> None:
    """A2: a plant outside plantable(seat) — revealed, marked, own mine — is refused and changes nothing."""
    state = board(variant, phase=Phase.PLANT, to_move=seat)
    got = refused(state, act(seat, "plant", *cell))
    if cell == B_MINE_A_MARK:
        assert got in (Refusal.MARKED, Refusal.OWN_MINE)
    else:
        assert got is expected


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("seat", "cell"), [(0, EMPTY), (1, EMPTY), (0, MINE_B), (1, MINE_A)])
def test_a2_plant_goes_to_end_wait_and_overlap_counts_for_both(
    variant: Variant, seat: int, cell: tuple[int, int]
) -> None:
    """A2: a plant on a plantable cell (an opponent's mine included) is accepted; the phase becomes END_WAIT."""
    state = board(variant, phase=Phase.PLANT, to_move=seat)
    counts = [state.mines[0].bit_count(), state.mines[1].bit_count()]
    assert not isinstance(state.apply(act(seat, "plant", *cell)), Refusal)
    assert (state.phase, state.to_move) == (Phase.END_WAIT, seat)
    counts[seat] += 1
    assert [state.mines[0].bit_count(), state.mines[1].bit_count()] == counts  # both totals keep the cell
    if cell != EMPTY:
        assert state.mines[0] >> at(*cell) & 1 and state.mines[1] >> at(*cell) & 1


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", [Phase.EXPLORE, Phase.END_WAIT])
def test_a2_plant_only_in_the_plant_phase(variant: Variant, phase: Phase) -> None:
    """A2: outside PLANT (and the opening plant steps) a plant is refused wrong_phase."""
    state = board(variant, phase=phase)
    assert refused(state, act(0, "plant", *EMPTY)) is Refusal.WRONG_PHASE


# ----- A3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", NORMAL)
@pytest.mark.parametrize("seat", [0, 1])
def test_a3_a_marker_may_be_placed_in_any_normal_phase(variant: Variant, phase: Phase, seat: int) -> None:
    """A3: during one's own normal turn, EXPLORE, PLANT and END_WAIT all accept a new marker."""
    state = board(variant, phase=phase, to_move=seat)
    assert not isinstance(state.apply(act(seat, "flag", *EMPTY)), Refusal)
    assert state.markers[seat] >> at(*EMPTY) & 1
    assert (state.phase, state.to_move) == (phase, seat)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        (REVEALED_0, Refusal.REVEALED),
        (REVEALED_1, Refusal.REVEALED),
        (MARK_A, Refusal.MARKED),
        (MARK_B, Refusal.MARKED),
        (A_MINE_B_MARK, Refusal.MARKED),
    ],
)
def test_a3_markers_only_on_unrevealed_unmarked_cells(
    variant: Variant, cell: tuple[int, int], expected: Refusal
) -> None:
    """A3: a marker needs an unrevealed cell without a marker."""
    state = board(variant)
    assert refused(state, act(0, "flag", *cell)) is expected


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("seat", "cell"), [(0, MINE_A), (0, OVERLAP), (1, MINE_B), (1, OVERLAP)])
def test_a3_bluff_markers_on_ones_own_mine_are_allowed(
    variant: Variant, seat: int, cell: tuple[int, int]
) -> None:
    """A3: a seat may place a marker on its own mine (a bluff)."""
    state = board(variant, phase=Phase.END_WAIT, to_move=seat)
    assert not isinstance(state.apply(act(seat, "flag", *cell)), Refusal)
    assert state.markers[seat] >> at(*cell) & 1


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", NORMAL)
def test_a3_one_new_marker_per_turn(variant: Variant, phase: Phase) -> None:
    """A3: the second new marker in a turn is refused quota_used and changes nothing."""
    state = board(variant, phase=phase)
    state.play(act(0, "flag", 4, 4))
    assert state.quota_left == 0
    assert refused(state, act(0, "flag", 5, 5)) is Refusal.QUOTA_USED


@pytest.mark.parametrize("variant", VARIANTS)
def test_a3_one_new_marker_per_turn_across_phases(variant: Variant) -> None:
    """A3: a marker placed in EXPLORE uses the quota for PLANT and END_WAIT of the same turn."""
    state = board(variant)
    state.play(act(0, "flag", 5, 5))
    state.play(act(0, "explore", 4, 4))
    assert refused(state, act(0, "flag", 6, 6)) is Refusal.QUOTA_USED
    state.play(act(0, "plant", 3, 3))
    assert refused(state, act(0, "flag", 6, 6)) is Refusal.QUOTA_USED


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("same_cell", [True, False])
def test_a3_removal_does_not_refund_the_quota(variant: Variant, same_cell: bool) -> None:
    """A3: flag, unflag, flag again in one turn: the second flag is refused quota_used."""
    state = board(variant, phase=Phase.END_WAIT)
    state.play(act(0, "flag", 4, 4))
    state.play(act(0, "unflag", 4, 4))
    assert state.quota_left == 0
    assert refused(state, act(0, "flag", *((4, 4) if same_cell else (5, 5)))) is Refusal.QUOTA_USED


@pytest.mark.parametrize("variant", VARIANTS)
def test_a3_removing_an_old_marker_does_not_give_a_quota(variant: Variant) -> None:
    """A3: removing a marker from an earlier turn after using the quota still leaves no new marker."""
    state = board(variant, phase=Phase.END_WAIT, marker_used=True)
    state.play(act(0, "unflag", *MARK_A))
    assert refused(state, act(0, "flag", *EMPTY)) is Refusal.QUOTA_USED


@pytest.mark.parametrize("variant", VARIANTS)
def test_a3_markers_stay_across_turns_and_the_quota_renews(variant: Variant) -> None:
    """A3: markers stay on the board across turns; each new turn brings one new marker again."""
    state = board(variant, phase=Phase.END_WAIT, marker_used=True)
    markers = list(state.markers)
    state.play(act(0, "end_turn"))
    assert state.markers == markers
    assert state.quota_left == 1
    state.play(act(1, "flag", 5, 5))
    state.play(act(1, "explore", 4, 4))
    state.play(act(1, "plant", 3, 3))
    state.play(act(1, "end_turn"))
    assert state.markers[1] >> at(5, 5) & 1 and state.markers == [markers[0], markers[1] | 1 << at(5, 5)]
    assert not isinstance(state.apply(act(0, "flag", 6, 6)), Refusal)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a3_no_limit_on_markers_on_the_board(variant: Variant) -> None:
    """A3: a seat with 20 markers on the board may still place one more."""
    state = board(variant)
    for cell in range(at(2, 0), at(4, 4)):
        state.markers[0] |= 1 << cell
    assert state.markers[0].bit_count() >= 20
    assert not isinstance(state.apply(act(0, "flag", 6, 6)), Refusal)


# ----- A4 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("seat", "cell", "expected"),
    [
        (0, MARK_B, Refusal.NOT_YOUR_MARKER),
        (0, A_MINE_B_MARK, Refusal.NOT_YOUR_MARKER),
        (1, MARK_A, Refusal.NOT_YOUR_MARKER),
        (1, B_MINE_A_MARK, Refusal.NOT_YOUR_MARKER),
        (0, EMPTY, Refusal.NO_MARKER),
        (0, MINE_A, Refusal.NO_MARKER),
        (0, REVEALED_0, Refusal.NO_MARKER),
    ],
)
def test_a4_only_ones_own_markers_can_be_removed(
    variant: Variant, seat: int, cell: tuple[int, int], expected: Refusal
) -> None:
    """A4: removing someone else's marker, or a marker that is not there, is refused and changes nothing."""
    state = board(variant, phase=Phase.END_WAIT, to_move=seat)
    assert refused(state, act(seat, "unflag", *cell)) is expected


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", NORMAL)
def test_a4_own_markers_any_phase_any_number_of_times(variant: Variant, phase: Phase) -> None:
    """A4: in EXPLORE, PLANT or END_WAIT a seat may remove all its markers, one after the other."""
    state = board(variant, phase=phase, marker_used=True)
    own = [MARK_A, B_MINE_A_MARK, A_MINE_A_MARK]
    for cell in own:
        assert not isinstance(state.apply(act(0, "unflag", *cell)), Refusal)
    assert state.markers[0] == 0
    assert (state.phase, state.to_move) == (phase, 0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", [Phase.OPEN_EXPLORE, Phase.OPEN_PLANT])
def test_a4_no_marker_removal_in_the_opening(variant: Variant, phase: Phase) -> None:
    """A4/F1: markers are a normal-turn matter: removal in the opening is refused."""
    state = board(variant, phase=phase)
    assert refused(state, act(0, "unflag", *MARK_A)) is Refusal.WRONG_PHASE


# ----- A5 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        (Phase.OPEN_EXPLORE, Refusal.WRONG_PHASE),
        (Phase.OPEN_PLANT, Refusal.WRONG_PHASE),
        (Phase.EXPLORE, Refusal.WRONG_PHASE),
        (Phase.PLANT, Refusal.WRONG_PHASE),
        (Phase.END_WAIT, None),
    ],
)
def test_a5_end_turn_only_in_end_wait(variant: Variant, phase: Phase, expected: Refusal | None) -> None:
    """A5: end turn is accepted in END_WAIT only; elsewhere it is refused and changes nothing."""
    state = board(variant, phase=phase)
    assert refused(state, act(0, "end_turn")) is expected
    if expected is None:
        assert (state.phase, state.to_move, state.turn) == (Phase.EXPLORE, 1, 2)


# ----- A6 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("owner", [0, 1])
@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize("kind", ["explore", "plant"])
def test_a6_a_marked_cell_is_blocked_for_everyone_until_its_owner_removes_it(
    variant: Variant, owner: int, seat: int, kind: str
) -> None:
    """A6: nobody explores or plants a marked cell; after the owner's removal it is open to both again."""
    phase = Phase.EXPLORE if kind == "explore" else Phase.PLANT
    state = board(variant, phase=phase, to_move=seat)
    state.markers[owner] |= 1 << at(*EMPTY)
    assert refused(state, act(seat, kind, *EMPTY)) is Refusal.MARKED
    if owner != seat:
        assert refused(state, act(seat, "unflag", *EMPTY)) is Refusal.NOT_YOUR_MARKER
    state.markers[owner] &= ~(1 << at(*EMPTY))  # the owner removed it (in its own turn)
    assert not isinstance(state.apply(act(seat, kind, *EMPTY)), Refusal)


# ----- refusals change nothing, whatever the refusal --------------------------------------------
REFUSALS: list[tuple[str, Phase, Action]] = [
    ("not_your_turn explore", Phase.EXPLORE, act(1, "explore", *EMPTY)),
    ("not_your_turn end_turn", Phase.END_WAIT, act(1, "end_turn")),
    ("wrong_phase plant", Phase.EXPLORE, act(0, "plant", *EMPTY)),
    ("wrong_phase end_turn", Phase.PLANT, act(0, "end_turn")),
    ("revealed", Phase.EXPLORE, act(0, "explore", *REVEALED_1)),
    ("marked", Phase.PLANT, act(0, "plant", *MARK_B)),
    ("own_mine", Phase.EXPLORE, act(0, "explore", *OVERLAP)),
    ("no_marker", Phase.END_WAIT, act(0, "unflag", *EMPTY)),
    ("not_your_marker", Phase.EXPLORE, act(0, "unflag", *MARK_B)),
    ("not_online", Phase.EXPLORE, act(0, "resign")),
]


@pytest.mark.parametrize(("name", "phase", "action"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a1_to_a6_refusals_leave_the_snapshot_identical(name: str, phase: Phase, action: Action) -> None:
    """A1–A6/F4: every kind of refusal returns its code and leaves snapshot() exactly as before."""
    state = board(Variant.CPU, phase=phase)
    before = state.snapshot()
    refusal = state.apply(action)
    assert isinstance(refusal, Refusal) and str(refusal) == name.split()[0]
    assert state.snapshot() == before


def test_a3_quota_refusal_leaves_the_snapshot_identical() -> None:
    """A3: a refused second marker changes nothing, not even the used-quota flag."""
    state = board(Variant.ONLINE, phase=Phase.PLANT, marker_used=True)
    before = state.snapshot()
    assert state.apply(act(0, "flag", *EMPTY)) is Refusal.QUOTA_USED
    assert state.snapshot() == before


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    "action", [act(0, "explore", *EMPTY), act(1, "flag", *EMPTY), act(0, "end_turn"), act(1, "void")]
)
def test_any_action_after_the_end_is_refused_game_over(variant: Variant, action: Action) -> None:
    """RECORD.md: after the end every action is refused game_over and the state stays as it ended."""
    state = board(variant)
    state.play(act(0, "explore", *MINE_B))  # KO
    before = state.snapshot()
    assert state.apply(action) is Refusal.GAME_OVER
    assert state.snapshot() == before
