"""The table-driven view serialisation (``board_of``/``reveal_of`` in shared/wire/board.py), the
``state`` message the server's presenter builds from it, and view building (shared/rules/engine.py)
give exactly what the plain per-cell code gives: same strings, same key order, same types, same bytes.

The references below are the straightforward loops the fast code replaced. Positions come from
seeded random play (every ending, both variants) and from Hypothesis (arbitrary masks, numbers,
deadlines and outcomes, including combinations the rules never produce).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mineduel.server import presenter
from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.rules.bitboard import CELLS, COLS, NEIGHBOURS, ROWS
from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Outcome,
    Phase,
    Reason,
    Variant,
)
from mineduel.shared.rules.views import FinalReveal, SeatView
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.board import board_of, reveal_of, view_of

FULL64 = (1 << CELLS) - 1


# ----- references: one cell at a time ------------------------------------------------------------
def ref_rows(chars: list[str]) -> list[str]:
    return ["".join(chars[r * COLS : (r + 1) * COLS]) for r in range(ROWS)]


def ref_board_json(view: SeatView) -> dict[str, list[str]]:
    numbers, opened, markers, mines = [], [], [], []
    for c in range(CELLS):
        b = 1 << c
        numbers.append("." if view.numbers[c] < 0 else str(view.numbers[c]))
        opened.append("." if not view.revealed & b else "m" if view.revealed_by_me & b else "o")
        markers.append("m" if view.my_markers & b else "o" if view.opponent_markers & b else ".")
        mines.append("x" if view.my_mines & b else ".")
    return {
        "numbers": ref_rows(numbers),
        "opened_by": ref_rows(opened),
        "markers": ref_rows(markers),
        "my_mines": ref_rows(mines),
    }


def ref_relative(seat: int | None, me: int) -> str | None:
    return None if seat is None else "me" if seat == me else "opponent"


def ref_outcome(outcome: Outcome | None, me: int) -> dict[str, Any] | None:
    if outcome is None:
        return None
    if outcome.reason.value == "void":
        result = "void"
    elif outcome.winner is None:
        result = "draw"
    else:
        result = "win" if outcome.winner == me else "loss"
    scores = None if outcome.scores is None else {"me": outcome.scores[me], "opponent": outcome.scores[1 - me]}
    return {"outcome": result, "winner": ref_relative(outcome.winner, me), "reason": outcome.reason.value, "scores": scores}


def ref_state_message(view: SeatView, *, match_id: str, seq: int, now: float, transcript: str,
                      events: list[m.SeenAction]) -> dict[str, Any]:
    me = view.seat
    deadline = None
    if view.deadline is not None:
        deadline = {"at": round(view.deadline, 3), "left": round(max(0.0, view.deadline - now), 3)}
    return {
        "type": "state",
        "match_id": match_id,
        "seq": seq,
        "seat": me,
        "phase": str(view.phase.value),
        "to_move": ref_relative(view.to_move, me),
        "turn": view.turn,
        "quota_left": view.quota_left,
        "deadline": deadline,
        "server_time": round(now, 3),
        "board": ref_board_json(view),
        "transcript": transcript,
        "events": [e.wire() for e in events],
        "result": ref_outcome(view.outcome, me),
    }


def ref_reveal_json(reveal: FinalReveal, me: int) -> dict[str, Any]:
    mines, markers, correct = [], [], []
    mine_me, mine_op = reveal.mines[me], reveal.mines[1 - me]
    for c in range(CELLS):
        b = 1 << c
        mines.append("x" if mine_me & mine_op & b else "m" if mine_me & b else "o" if mine_op & b else ".")
        if reveal.markers[me] & b:
            markers.append("m")
            correct.append("y" if reveal.correct_markers[me] & b else "n")
        elif reveal.markers[1 - me] & b:
            markers.append("o")
            correct.append("y" if reveal.correct_markers[1 - me] & b else "n")
        else:
            markers.append(".")
            correct.append(".")
    ko = None if reveal.ko_cell is None else [reveal.ko_cell // COLS, reveal.ko_cell % COLS]
    return {"mines": ref_rows(mines), "markers": ref_rows(markers), "marker_correct": ref_rows(correct), "ko_cell": ko}


def ref_view(state: GameState, seat: int, deadline: float | None) -> SeatView:
    """The view through the dataclass constructor, numbers recounted from the masks."""
    mines = state.mines[0] | state.mines[1]
    numbers = tuple((NEIGHBOURS[c] & mines).bit_count() if state.revealed >> c & 1 else -1 for c in range(CELLS))
    by0 = state.revealed_by0
    return SeatView(
        seat=seat,
        variant=state.variant,
        phase=state.phase,
        to_move=state.to_move,
        turn=state.turn,
        revealed=state.revealed,
        revealed_by_me=by0 if seat == 0 else state.revealed & ~by0,
        numbers=numbers,
        my_mines=state.mines[seat],
        my_markers=state.markers[seat],
        opponent_markers=state.markers[1 - seat],
        quota_left=state.quota_left if state.to_move == seat else 0,
        outcome=state.outcome(),
        deadline=deadline,
    )


def assert_same(got: Any, want: Any, path: str = "$") -> None:
    """Equal values of exactly the same types, dict keys in the same order (what orjson writes)."""
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for key in want:
            assert_same(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{path}[{i}]")
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


class _OneView:
    """Stands in for a match's ``GameState``: its view is the one given (any view, even one the rules never make)."""

    def __init__(self, view: SeatView) -> None:
        self._view = view

    def view(self, seat: int, deadline: float | None = None) -> SeatView:
        assert seat == self._view.seat and deadline == self._view.deadline
        return self._view


class _Match:
    """What ``presenter.state`` reads of a ``LiveMatch``: the id, seq, transcript, the state and its deadline."""

    def __init__(self, state: Any, deadline: float | None, *, match_id: str, seq: int, transcript: str) -> None:
        self.state, self.deadline, self.id, self.seq, self.transcript = state, deadline, match_id, seq, transcript


def state_message(view: SeatView, *, match_id: str, seq: int, now: float, transcript: str,
                  events: list[m.SeenAction]) -> m.State:
    """The server's ``state`` for ``view``'s seat, built by the presenter (the one builder)."""
    match = _Match(_OneView(view), view.deadline, match_id=match_id, seq=seq, transcript=transcript)
    return presenter.state(match, view.seat, now, events)  # type: ignore[arg-type]  # duck-typed LiveMatch


# ----- positions from seeded random play ---------------------------------------------------------
def careful_action(state: GameState, rng: random.Random, care: float) -> Action:
    """A uniformly random legal action, drawn again (up to 50 times, each with probability
    ``care``) while it would explore the opponent's mine: careful games last and fill the board."""
    action = random_legal_action(state, rng)
    for _ in range(50):
        if not (action.type is ActionType.EXPLORE and state.mines[1 - action.seat] >> (action.cell or 0) & 1):
            break
        if rng.random() >= care:
            break
        action = random_legal_action(state, rng)
    return action


def played_states(seed: int, games: int, variant: Variant) -> list[GameState]:
    """A copy of the state after every action of ``games`` random games, half of them careful
    (timeouts and resignations too in ONLINE, so every ending and the auto-moves appear)."""
    rng = random.Random(seed)
    out = []
    for game in range(games):
        state = GameState(variant)
        care = 0.0 if game % 2 else 1.0
        while not state.over:
            seat = state.to_move
            assert seat is not None
            roll = rng.random()
            if variant is Variant.ONLINE and roll < 0.03:
                state.play(Action(seat, ActionType.TIMEOUT))
            elif variant is Variant.ONLINE and roll < 0.032:
                state.play(Action(rng.randrange(2), ActionType.RESIGN))
            else:
                state.play(careful_action(state, rng, care))
            out.append(state.copy())
    return out


STATES = played_states(11, 40, Variant.ONLINE) + played_states(12, 40, Variant.CPU)


def test_the_played_positions_cover_the_cases() -> None:
    """The positions include every phase, several endings, overlaps, both seats' markers and dense boards."""
    assert {s.phase for s in STATES} == set(Phase)
    # The CPU draws (C1/C2) need boards full of markers; every reason is in the Hypothesis tests.
    assert {s.outcome().reason for s in STATES if s.over} >= {Reason.KO, Reason.SCORE, Reason.RESIGN}
    assert any(s.mines[0] & s.mines[1] for s in STATES)
    assert max(s.revealed.bit_count() for s in STATES) >= 30
    assert any(s.markers[0] and s.markers[1] for s in STATES)


@pytest.mark.parametrize("seat", [0, 1])
def test_views_equal_the_dataclass_views(seat: int) -> None:
    """GameState.view fills a SeatView slot by slot: the same object the constructor builds."""
    for state in STATES:
        view = state.view(seat, 1000.25)
        want = ref_view(state, seat, 1000.25)
        assert view == want
        assert dataclasses.asdict(view) == dataclasses.asdict(want)
        assert type(view) is SeatView
        with pytest.raises(dataclasses.FrozenInstanceError):
            view.turn = 0  # type: ignore[misc]


def test_numbers_follow_a_state_changed_in_place() -> None:
    """The remembered numbers are recomputed whenever revealed cells or any mine change,
    including masks edited directly (as notation and the tests do)."""
    rng = random.Random(5)
    for _ in range(40):
        state = GameState(Variant.ONLINE)
        while not state.over:
            for seat in (0, 1):
                assert state.view(seat) == ref_view(state, seat, None)
            state.play(random_legal_action(state, rng))
        state.mines[0] ^= 1 << rng.randrange(CELLS)
        state.revealed |= 1 << rng.randrange(CELLS)
        assert state.numbers() == ref_view(state, 0, None).numbers
        assert state.copy().numbers() == state.numbers()


@pytest.mark.parametrize("seat", [0, 1])
def test_played_positions_serialise_like_the_reference(seat: int) -> None:
    """board_of, the presenter's state (and its orjson bytes) and reveal_of on played positions."""
    for i, state in enumerate(STATES):
        view = state.view(seat, None if i % 5 == 0 else 500.0 + i / 7)
        now = 480.0 + i / 3
        assert_same(board_of(view).wire(), ref_board_json(view))
        events = [m.SeenAction(i, "me", "explore", [0, 0], 1.5)]
        args: dict[str, Any] = {"match_id": "0123456789abcdef", "seq": i, "now": now, "transcript": "ab" * 32, "events": events}
        got = presenter.state(_Match(state, view.deadline, match_id="0123456789abcdef", seq=i, transcript="ab" * 32),
                              seat, now, events)  # type: ignore[arg-type]  # the real GameState, a duck-typed LiveMatch
        want = ref_state_message(view, **args)
        assert_same(got.wire(), want)
        assert codec.encode_message(got) == codec.encode(want)
        back = codec.decode_server(codec.encode_message(got))
        assert isinstance(back, m.State)
        assert view_of(back) == dataclasses.replace(
            view, variant=Variant.ONLINE, deadline=None if view.deadline is None else round(view.deadline, 3)
        )
        if state.over:
            assert_same(reveal_of(state.reveal(), seat).wire(), ref_reveal_json(state.reveal(), seat))


# ----- arbitrary inputs (Hypothesis) -------------------------------------------------------------
masks = st.one_of(st.integers(0, FULL64), st.sampled_from([0, FULL64, 1, 1 << 63, 0xFF << 56, 0x8181818181818181]))
numbers = st.lists(st.integers(-1, 8), min_size=CELLS, max_size=CELLS).map(tuple)
outcomes = st.one_of(
    st.none(),
    st.builds(
        Outcome,
        st.sampled_from([None, 0, 1]),
        st.sampled_from(list(Reason)),
        st.one_of(st.none(), st.tuples(st.integers(-20, 20), st.integers(-20, 20))),
    ),
)
times = st.floats(0, 1e10, allow_nan=False)


@st.composite
def seat_views(draw: Any) -> SeatView:
    """Any SeatView, masks unconstrained (opened-by-me outside revealed, overlapping markers)."""
    return SeatView(
        seat=draw(st.sampled_from([0, 1])),
        variant=draw(st.sampled_from(list(Variant))),
        phase=draw(st.sampled_from(list(Phase))),
        to_move=draw(st.sampled_from([None, 0, 1])),
        turn=draw(st.integers(0, 500)),
        revealed=draw(masks),
        revealed_by_me=draw(masks),
        numbers=draw(numbers),
        my_mines=draw(masks),
        my_markers=draw(masks),
        opponent_markers=draw(masks),
        quota_left=draw(st.sampled_from([0, 1])),
        outcome=draw(outcomes),
        deadline=draw(st.one_of(st.none(), times)),
    )


@settings(max_examples=400, deadline=None)
@given(view=seat_views(), now=times, seq=st.integers(0, 10**6))
def test_any_view_serialises_like_the_reference(view: SeatView, now: float, seq: int) -> None:
    assert_same(board_of(view).wire(), ref_board_json(view))
    args: dict[str, Any] = {"match_id": "f" * 16, "seq": seq, "now": now, "transcript": "0" * 64, "events": []}
    got = state_message(view, **args)
    assert_same(got.wire(), ref_state_message(view, **args))
    assert codec.encode_message(got) == codec.encode(ref_state_message(view, **args))


@settings(max_examples=400, deadline=None)
@given(
    mines=st.tuples(masks, masks), markers=st.tuples(masks, masks), correct=st.tuples(masks, masks),
    ko=st.one_of(st.none(), st.integers(0, CELLS - 1)), me=st.sampled_from([0, 1]),
)
def test_any_reveal_serialises_like_the_reference(mines: Any, markers: Any, correct: Any, ko: int | None, me: int) -> None:
    reveal = FinalReveal(
        mines=mines, overlaps=mines[0] & mines[1], markers=markers, correct_markers=correct,
        wrong_markers=(0, 0), ko_cell=ko, outcome=Outcome(None, Reason.VOID),
    )
    assert_same(reveal_of(reveal, me).wire(), ref_reveal_json(reveal, me))


# ----- the remembered numbers rows, and the checks themselves --------------------------------------
def test_number_rows_are_a_fresh_list_each_time() -> None:
    """Both seats' messages get their own list even when the numbers rows come from the cache."""
    view = STATES[40].view(0)
    board_of(view)  # the rows are remembered now
    first = board_of(view).numbers
    assert isinstance(first, list)
    first[0] = "changed"
    again = board_of(STATES[40].view(1)).numbers
    assert again == ref_board_json(view)["numbers"] and again is not first
    # Equal numbers in another tuple object hit the cache; different ones do not.
    copy = dataclasses.replace(view, numbers=tuple(n for n in view.numbers))
    assert copy.numbers is not view.numbers
    assert board_of(copy).numbers == ref_board_json(view)["numbers"]
    other = dataclasses.replace(view, numbers=(8, *view.numbers[1:]))
    assert board_of(other).numbers[0] == "8" + ref_board_json(view)["numbers"][0][1:]


def test_the_comparison_catches_a_wrong_symbol_a_type_or_the_key_order() -> None:
    """assert_same is strict: one cell, a str subclass or reordered keys each fail."""
    view = next(s for s in STATES if s.revealed and s.markers[0]).view(0)
    want = ref_board_json(view)
    row = want["opened_by"][3]
    changed = {".": "m", "m": "o", "o": "."}[row[0]] + row[1:]
    wrong_cell = {**want, "opened_by": [*want["opened_by"][:3], changed, *want["opened_by"][4:]]}
    reordered = {k: want[k] for k in reversed(want)}
    state = ref_state_message(view, match_id="a" * 16, seq=1, now=1.0, transcript="", events=[])
    enum_phase = {**state, "phase": view.phase}
    for bad, good in ((wrong_cell, want), (reordered, want), (enum_phase, state)):
        with pytest.raises(AssertionError):
            assert_same(bad, good)
