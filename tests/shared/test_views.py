"""RULES.md §2 (seats, views and fairness, V1–V5): what each seat may know, and nothing more."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.rule_helpers import act, at

from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Phase,
    Refusal,
    Variant,
)
from mineduel.shared.rules.notation import from_ascii
from mineduel.shared.rules.views import SeatView

VARIANTS = [Variant.CPU, Variant.ONLINE]


def view_json(view: SeatView) -> bytes:
    """A view as the server would serialise it: json of dataclasses.asdict, keys sorted."""
    return json.dumps(dataclasses.asdict(view), sort_keys=True, separators=(",", ":")).encode()


# Seat 0 sees: revealed cells in rows 0–1, its mines A, all markers. Seat 1's mines differ
# between the two boards only on overlap cells (X vs A) and far from any revealed cell.
HIDDEN_1 = """
    o? o? x? o? .. .. .. ..
    x? o? o? x? .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. X. .a .b .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. B. .. ..
    .. .. .. .. .. .. .. Bb
    A. .. .. .. .. .. .. ..
"""
HIDDEN_2 = """
    o? o? x? o? .. .. .. ..
    x? o? o? x? .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. A. .a .b .. .. .. ..
    .. .. .. .. .. .. B. B.
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. .b
    X. .. .. .. .. .. .. ..
"""


# ----- V1 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_v1_two_seats_seat_0_moves_first(variant: Variant) -> None:
    """V1: there are exactly two seats; seat 0 is the first player (the human in CPU play)."""
    state = GameState(variant)
    assert state.to_move == 0
    assert len(state.mines) == len(state.markers) == 2
    with pytest.raises(ValueError):
        Action(2, ActionType.EXPLORE, 0)


@pytest.mark.parametrize("seat", [1.0, 0.0])
def test_v1_a_seat_is_the_integer_0_or_1_not_a_float(seat: float) -> None:
    """V1/RECORD.md: the seats are the integers 0 and 1; a float seat is malformed, as it is in a record."""
    with pytest.raises(ValueError):
        Action(seat, ActionType.END_TURN)  # type: ignore[arg-type]


@pytest.mark.parametrize("seat", [0, 1])
def test_v1_me_and_opponent_are_relative_to_the_viewer(seat: int) -> None:
    """V1: each view's 'my' fields are the viewer's own mines, markers and revealed cells."""
    state = from_ascii(HIDDEN_1, to_move=seat)
    view = state.view(seat)
    assert view.seat == seat
    assert view.my_mines == state.mines[seat]
    assert view.my_markers == state.markers[seat]
    assert view.opponent_markers == state.markers[1 - seat]
    by0 = state.revealed_by0
    assert view.revealed_by_me == (by0 if seat == 0 else state.revealed & ~by0)


# ----- V2 ---------------------------------------------------------------------------------------------
def test_v2_a_view_has_exactly_the_allowed_fields() -> None:
    """V2: a view holds revealed cells with numbers and revealer, markers, own mines, turn facts, quota, deadline."""
    assert {f.name for f in dataclasses.fields(SeatView)} == {
        "seat",
        "variant",
        "phase",
        "to_move",
        "turn",
        "revealed",
        "revealed_by_me",
        "numbers",
        "my_mines",
        "my_markers",
        "opponent_markers",
        "quota_left",
        "outcome",
        "deadline",
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_v2_view_never_exposes_opponent_mines(variant: Variant) -> None:
    """V2: seat 0's view is IDENTICAL for two boards whose seat-1 mines differ only on overlaps and unneighboured cells."""
    first = from_ascii(HIDDEN_1, variant=variant)
    second = from_ascii(HIDDEN_2, variant=variant)
    assert (first.markers, first.mines[0], first.revealed) == (
        second.markers,
        second.mines[0],
        second.revealed,
    )
    assert first.mines[1] != second.mines[1]
    assert first.view(0) == second.view(0)
    assert view_json(first.view(0)) == view_json(second.view(0))


@pytest.mark.parametrize("variant", VARIANTS)
def test_v2_the_test_above_can_fail_a_visible_mine_changes_the_view(variant: Variant) -> None:
    """V2/B4: moving an opponent mine next to a revealed cell changes a number, so the view differs."""
    first = from_ascii(HIDDEN_1, variant=variant)
    second = first.copy()
    second.mines = [first.mines[0], first.mines[1] | 1 << at(2, 0)]
    assert first.view(0) != second.view(0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_v2_view_never_shows_whether_a_cell_is_an_overlap(variant: Variant) -> None:
    """V2: an own mine alone and an own mine overlapped by the opponent look the same to its owner."""
    alone = from_ascii(HIDDEN_2, variant=variant)
    overlapped = alone.copy()
    overlapped.mines = [alone.mines[0], alone.mines[1] | 1 << at(3, 1)]
    assert alone.view(0) == overlapped.view(0)


@pytest.mark.parametrize(("to_move", "marker_used"), [(0, False), (0, True), (1, False), (1, True)])
def test_v2_quota_left_is_the_movers_and_zero_for_the_other(to_move: int, marker_used: bool) -> None:
    """V2/A3: the marker quota shows 1 or 0 for the seat to move, 0 for the other seat."""
    state = from_ascii(HIDDEN_1, to_move=to_move, marker_used=marker_used)
    assert state.view(to_move).quota_left == (0 if marker_used else 1)
    assert state.view(1 - to_move).quota_left == 0


def test_v2_view_numbers_only_for_revealed_cells() -> None:
    """V2/B4: the view's numbers are -1 exactly on unrevealed cells."""
    view = from_ascii(HIDDEN_1).view(1)
    assert {c for c in range(64) if view.numbers[c] == -1} == {
        c for c in range(64) if not view.revealed >> c & 1
    }


# ----- V3 ---------------------------------------------------------------------------------------------
def test_v3_the_cpu_seat_view_holds_no_field_for_the_humans_mines() -> None:
    """V3: the CPU's input (a SeatView) carries only its own mines; the human's mines have no field to live in."""
    mine_fields = {f.name for f in dataclasses.fields(SeatView) if "mine" in f.name}
    assert mine_fields == {"my_mines"}
    state = from_ascii(HIDDEN_1, to_move=1)
    assert state.view(1).my_mines == state.mines[1]
    other = state.copy()
    other.mines = [
        state.mines[0] & ~(1 << at(7, 0)) | 1 << at(6, 0),
        state.mines[1],
    ]  # the human's mine moved unseen
    assert other.view(1) == state.view(1)


# ----- V4 ---------------------------------------------------------------------------------------------
def _opened(variant: Variant = Variant.ONLINE) -> GameState:
    state = GameState(variant)
    for action in (
        act(0, "explore", 0, 0),
        act(1, "explore", 0, 1),
        act(0, "plant", 4, 4),
        act(1, "plant", 7, 7),
    ):
        state.play(action)
    return state


@pytest.mark.parametrize("target", [(5, 5), (6, 2), (3, 6)])
def test_v4_online_view_json_is_byte_identical_whether_or_not_the_opponent_overlapped(
    target: tuple[int, int],
) -> None:
    """V4/V5: seat 0's serialised view is the same bytes whether seat 1 planted on seat 0's mine or on an unseen cell."""
    overlap = _opened()
    overlap.play(act(0, "explore", 1, 1))
    overlap.play(act(0, "plant", 5, 5))
    overlap.play(act(0, "end_turn"))
    overlap.play(act(1, "explore", 2, 2))
    elsewhere = overlap.copy()
    assert not isinstance(overlap.apply(act(1, "plant", 4, 4)), Refusal)  # on seat 0's mine
    assert not isinstance(elsewhere.apply(act(1, "plant", *target)), Refusal)  # seat 0's other mine, or unseen cells
    assert view_json(overlap.view(0)) == view_json(elsewhere.view(0))
    for more in (act(1, "end_turn"), act(0, "explore", 0, 7)):
        overlap.play(more)
        elsewhere.play(more)
        assert view_json(overlap.view(0)) == view_json(elsewhere.view(0))


def test_v4_view_json_carries_no_opponent_mine_bits() -> None:
    """V4: the serialised view of seat 0 never contains seat 1's mine mask."""
    state = from_ascii(HIDDEN_1, variant=Variant.ONLINE)
    payload = dataclasses.asdict(state.view(0))
    assert state.mines[1] not in [v for v in payload.values() if isinstance(v, int)]
    assert state.mines[0] in payload.values()


# ----- V5 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_v5_a_plant_on_the_opponents_mine_answers_like_any_other(variant: Variant) -> None:
    """V5: overlap or not, the plant is accepted with the same answer, phase, turn and seat to move."""
    base = _opened(variant)
    base.play(act(0, "explore", 2, 2))
    overlap, plain = base.copy(), base.copy()
    # seat 0 to plant: (7,7) is seat 1's mine, (6,0) is empty; neither is next to a revealed cell
    assert not isinstance(overlap.apply(act(0, "plant", 7, 7)), Refusal)
    assert not isinstance(plain.apply(act(0, "plant", 6, 0)), Refusal)
    assert (
        (overlap.phase, overlap.to_move, overlap.turn)
        == (plain.phase, plain.to_move, plain.turn)
        == (Phase.END_WAIT, 0, 1)
    )
    assert overlap.view(1) == plain.view(1)  # the opponent cannot tell
    assert overlap.numbers() == plain.numbers()


def test_v5_neighbouring_numbers_do_not_go_up_after_an_overlap() -> None:
    """V5/B4: an overlap plant next to revealed cells leaves their numbers as they were (the only way to infer it)."""
    state = _opened()
    state.play(act(0, "explore", 3, 3))  # next to seat 0's mine at (4,4): shows 1
    assert state.number(at(3, 3)) == 1
    state.play(act(0, "plant", 6, 6))
    state.play(act(0, "end_turn"))
    state.play(act(1, "explore", 2, 2))
    before = state.numbers()
    state.play(act(1, "plant", 4, 4))  # seat 1 overlaps seat 0's mine
    assert state.numbers() == before
