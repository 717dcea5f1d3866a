"""Hypothesis properties of the rules engine (derandomized: the same examples every run).

**The length bound** (``test_*_play_ends_within_the_bound``), derived from RULES.md:

* The opening is exactly 4 accepted actions (F1), plus, ONLINE, ``t_open`` opening timeouts
  (each followed by its auto-move, which is one of the 4).
* Let ``k`` be the number of normal turns ended by *end turn*. Each such turn revealed one cell
  (A1: exactly one cell per explore, B5) and planted one mine (A2). After the opening 62 cells
  are closed; mine cells are never revealed (B6; a KO cell stays closed), and seat ``s``'s mines
  are distinct cells (A2 refuses its own mine): its initial mine plus its normal plants ``P_s``.
  So ``62 − k ≥ closed cells ≥ mine cells ≥ 1 + max(P0, P1) ≥ 1 + ⌈k/2⌉``, hence **k ≤ 40**.
* Normal turns started ``T ≤ k + t_norm + 1 ≤ 41 + t_norm`` (a turn ends by end turn, by a
  timeout, or with the match); the turn number at the end is ``T`` (F3), so **turn ≤ 41 + t_norm**.
* Within one turn at most one explore, one plant, one *new* marker (A3) and one end turn or
  timeout; every removal (A4) removes a marker some flag placed, so removals ≤ flags ≤ ``T``.
  Hence accepted normal-turn actions ≤ ``5·T``, and in all
  **accepted actions ≤ 4 + t_open + 5·(41 + t_norm) = 209 + t_open + 5·t_norm** (CPU: 209).
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import reference_rules as ref
from support.strategies import RandomChooser, draw_style, legal_games, legal_move, records

from mineduel.shared.fairness.record import from_json
from mineduel.shared.rules.bitboard import cells
from mineduel.shared.rules.engine import (
    NORMAL_PHASES,
    Action,
    ActionType,
    GameState,
    Phase,
    Refusal,
    Variant,
)
from mineduel.shared.rules.events import MatchEnded, seen_by

PROPS = settings(
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

MAX_COMPLETED_TURNS = 40
MAX_TURNS = MAX_COMPLETED_TURNS + 1
CPU_ACTION_BOUND = 4 + 5 * MAX_TURNS


def action_bound(t_open: int, t_norm: int) -> int:
    """The module docstring's bound on accepted actions of legal play."""
    return 4 + t_open + 5 * (MAX_TURNS + t_norm)


def actions_of(rec: dict[str, Any]) -> tuple[Action, ...]:
    return from_json(rec).actions


def brute_numbers(state: GameState) -> list[int]:
    """B2/B4 recounted over (row, col) neighbours, without the engine's neighbour masks."""
    out = []
    for row in range(8):
        for col in range(8):
            if not state.revealed >> (row * 8 + col) & 1:
                out.append(-1)
                continue
            count = 0
            for r in range(row - 1, row + 2):
                for c in range(col - 1, col + 2):
                    if (r, c) != (row, col) and 0 <= r < 8 and 0 <= c < 8:
                        i = r * 8 + c
                        if (state.mines[0] | state.mines[1]) >> i & 1:
                            count += 1
            out.append(count)
    return out


# ----- the length bound -------------------------------------------------------------------------------
_INTEGERS: dict[int, st.SearchStrategy[int]] = {}


def index(data: st.DataObject, n: int) -> int:
    """A drawn index in range(n) (strategies cached: building one per draw is the slow part)."""
    if n not in _INTEGERS:
        _INTEGERS[n] = st.integers(0, n - 1)
    return int(data.draw(_INTEGERS[n]))


def play_randomly(data: st.DataObject, variant: Variant, timeouts: bool) -> tuple[GameState, int, int, int]:
    """Random play by the engine's own legal_actions (a type first, then one of its actions)."""
    state = GameState(variant)
    accepted = t_open = t_norm = 0
    safe_bias = index(data, 2) == 1  # avoid a KO when possible
    while not state.over:
        legal = list(state.legal_actions())
        assert legal, f"no legal action in a live match:\n{state!r}"
        # at most 40 timeouts: timeouts alone never end a match (O5 changes no cell)
        if timeouts and t_open + t_norm < 40 and index(data, 10) == 9:
            seat = state.to_move
            opening = state.phase in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)
            assert not isinstance(state.apply(Action(seat, ActionType.TIMEOUT)), Refusal)  # type: ignore[arg-type]
            accepted += 1
            if opening:
                t_open += 1
                picker = _DataPicker(data)
                assert not isinstance(state.apply(state.opening_auto_action(picker)), Refusal)
                accepted += 1
            else:
                t_norm += 1
            continue
        kinds = sorted({a.type for a in legal})
        kind = kinds[index(data, len(kinds))]
        options = [a for a in legal if a.type is kind]
        if kind is ActionType.EXPLORE and safe_bias and state.to_move is not None:
            safe = [a for a in options if not state.mines[1 - state.to_move] >> a.cell & 1]  # type: ignore[operator]
            options = safe or options
        action = options[index(data, len(options))]
        assert not isinstance(state.apply(action), Refusal), f"legal_actions offered a refused {action}"
        accepted += 1
        assert accepted <= action_bound(t_open, t_norm) + 1
    return state, accepted, t_open, t_norm


class _DataPicker:
    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def pick(self, n: int) -> int:
        return index(self.data, n)


@PROPS
@given(st.data())
def test_cpu_random_legal_play_ends_within_the_bound(data: st.DataObject) -> None:
    """CPU random legal play ends with turn ≤ 41 and at most 209 accepted actions (module docstring)."""
    state, accepted, _, _ = play_randomly(data, Variant.CPU, timeouts=False)
    assert state.outcome() is not None
    assert state.turn <= MAX_TURNS
    assert accepted <= CPU_ACTION_BOUND


@PROPS
@given(st.data())
def test_online_random_legal_play_with_timeouts_ends_within_the_bound(data: st.DataObject) -> None:
    """ONLINE random legal play with timeouts ends with turn ≤ 41 + t_norm and ≤ 209 + t_open + 5·t_norm actions."""
    state, accepted, t_open, t_norm = play_randomly(data, Variant.ONLINE, timeouts=True)
    assert state.outcome() is not None
    assert state.turn <= MAX_TURNS + t_norm
    assert accepted <= action_bound(t_open, t_norm)


@PROPS
@given(
    st.sampled_from(["cpu", "online"]).flatmap(
        lambda v: st.tuples(st.just(v), legal_games(v, timeouts=v == "online"))
    )
)
def test_styled_long_games_end_within_the_bound(game: tuple[str, list[dict[str, Any]]]) -> None:
    """Long styled games (safe explores, many markers and overlaps) also end within the bound, every action accepted."""
    variant, actions = game
    state = GameState(variant)
    rec = {"format": "mine-duel-record/1", "variant": variant, "actions": actions}
    t_open = t_norm = 0
    for action in actions_of(rec):
        if action.type is ActionType.TIMEOUT:
            if state.phase in NORMAL_PHASES:
                t_norm += 1
            else:
                t_open += 1
        assert not isinstance(state.apply(action), Refusal)
    assert state.over
    assert state.turn <= MAX_TURNS + t_norm
    assert len(actions) <= action_bound(t_open, t_norm)


def test_the_bound_is_not_vacuous() -> None:
    """Seeded long CPU games come within reach of the bound (the longest reaches turn 30 or more)."""
    rng = random.Random(3)
    longest = 0
    for _ in range(60):
        ch = RandomChooser(rng)
        style = draw_style(ch, "cpu")
        m = ref.RefMatch("cpu")
        while not m.over:
            m.act(*legal_move(ch, m, style))
        longest = max(longest, m.turn)
        assert m.turn <= MAX_TURNS
    assert longest >= 30


# ----- invariants along random records ---------------------------------------------------------------
@PROPS
@given(records())
def test_numbers_equal_a_brute_force_recount_after_every_step(rec: dict[str, Any]) -> None:
    """B2/B4: after every step, numbers() and every view's numbers equal a (row, col) neighbour recount."""
    state = GameState(rec["variant"])
    for action in actions_of(rec):
        state.apply(action)
        expected = brute_numbers(state)
        assert list(state.numbers()) == expected
        assert list(state.view(0).numbers) == expected == list(state.view(1).numbers)
        assert [state.number(c) if expected[c] >= 0 else -1 for c in range(64)] == expected


@PROPS
@given(records())
def test_a_refused_action_leaves_the_snapshot_identical(rec: dict[str, Any]) -> None:
    """Refusals change nothing (snapshot and views), and accepted actions only grow mines and revealed cells (B3, B6)."""
    state = GameState(rec["variant"])
    refused = 0
    for action in actions_of(rec):
        before = state.snapshot()
        views = (state.view(0), state.view(1))
        old = state.copy()
        if isinstance(state.apply(action), Refusal):
            refused += 1
            assert state.snapshot() == before
            assert (state.view(0), state.view(1)) == views
            continue
        for seat in (0, 1):
            assert state.mines[seat] & old.mines[seat] == old.mines[seat]  # B6
        assert state.revealed & old.revealed == old.revealed
        assert state.revealed_by0 & old.revealed == old.revealed_by0  # B3: revealer never changes
        assert state.turn >= old.turn
        assert not (state.mines[0] | state.mines[1]) & state.revealed  # B6
        assert (
            not (state.markers[0] & state.markers[1])
            and not (state.markers[0] | state.markers[1]) & state.revealed
        )


@PROPS
@given(records())
def test_engine_sets_and_legal_actions_match_the_oracle(rec: dict[str, Any]) -> None:
    """S1–S3, the legal core actions of the seat to move, and accept/refuse are the oracle's, step after step."""
    state = GameState(rec["variant"])
    m = ref.RefMatch(rec["variant"])
    for action in actions_of(rec):
        refusal = state.apply(action)
        error = m.act(
            action.seat, str(action.type), divmod(action.cell, 8) if action.cell is not None else None
        )
        assert (not isinstance(refusal, Refusal)) == (error is None), (action, refusal, error)
        for seat in (0, 1):
            for name in ("explorable", "recoverable", "plantable"):
                assert {divmod(c, 8) for c in cells(getattr(state, name)(seat))} == set(
                    getattr(m, name)(seat)
                )
        engine_legal = {
            (a.seat, str(a.type), divmod(a.cell, 8) if a.cell is not None else None)
            for a in state.legal_actions()
        }
        assert engine_legal == set(m.legal_actions())


@PROPS
@given(records())
def test_copy_is_independent(rec: dict[str, Any]) -> None:
    """copy() gives an equal state that later actions on the copy never reach back into."""
    state = GameState(rec["variant"])
    actions = actions_of(rec)
    half = len(actions) // 2
    for action in actions[:half]:
        state.apply(action)
    frozen = state.snapshot()
    twin = state.copy()
    assert twin == state
    for action in actions[half:]:
        twin.apply(action)
    assert state.snapshot() == frozen


@PROPS
@given(records())
def test_ascii_notation_round_trips_every_reached_position(rec: dict[str, Any]) -> None:
    """The notation the rule tests are written in loses nothing: from_ascii(to_ascii(s)) is s (outcome aside)."""
    from mineduel.shared.rules.notation import from_ascii, to_ascii

    state = GameState(rec["variant"])
    for action in actions_of(rec):
        state.apply(action)
        if state.over:
            break
        again = from_ascii(
            to_ascii(state),
            variant=state.variant,
            phase=state.phase,
            to_move=state.to_move,
            turn=state.turn,
            marker_used=state.marker_used,
        )
        assert again == state


# ----- views: hidden information -------------------------------------------------------------------
def _revealed_neighbour(state: GameState, cell: int) -> bool:
    row, col = divmod(cell, 8)
    return any(
        state.revealed >> (r * 8 + c) & 1
        for r in range(row - 1, row + 2)
        for c in range(col - 1, col + 2)
        if (r, c) != (row, col) and 0 <= r < 8 and 0 <= c < 8
    )


@PROPS
@given(records(), st.data())
def test_views_ignore_opponent_mines_that_change_no_number(rec: dict[str, Any], data: st.DataObject) -> None:
    """V2: moving the opponent's mines among overlap cells and cells without a revealed neighbour gives an IDENTICAL view."""
    state = GameState(rec["variant"])
    actions = actions_of(rec)
    stop = data.draw(st.integers(0, len(actions)), label="prefix")
    for action in actions[:stop]:
        state.apply(action)
    viewer = data.draw(st.integers(0, 1), label="viewer")
    opponent = 1 - viewer
    invisible = [
        c
        for c in range(64)
        if not state.revealed >> c & 1 and (state.mines[viewer] >> c & 1 or not _revealed_neighbour(state, c))
    ]
    flips = data.draw(
        st.lists(st.sampled_from(invisible), unique=True) if invisible else st.just([]), label="flips"
    )
    other = state.copy()
    for c in flips:
        other.mines[opponent] ^= 1 << c
    assert other.view(viewer) == state.view(viewer)
    visible = [c for c in range(64) if not state.revealed >> c & 1 and c not in invisible]
    if visible:  # and the converse: a visible change shows (the property can fail)
        c = data.draw(st.sampled_from(visible), label="visible flip")
        changed = state.copy()
        changed.mines[opponent] ^= 1 << c
        assert changed.view(viewer) != state.view(viewer)


def view_bytes(state: GameState, seat: int) -> bytes:
    return json.dumps(dataclasses.asdict(state.view(seat)), sort_keys=True).encode()


def overlap_comparisons(rec: dict[str, Any]) -> int:
    """At each ONLINE plant, plant once on the viewer's mine and once on an unseen empty cell; compare JSON views."""
    state = GameState(rec["variant"])
    compared = 0
    for action in actions_of(rec):
        if (
            state.phase in (Phase.PLANT, Phase.OPEN_PLANT)
            and state.to_move is not None
            and state.phase is Phase.PLANT
        ):
            planter = state.to_move
            viewer = 1 - planter
            options = list(cells(state.plantable(planter)))
            overlap = [c for c in options if state.mines[viewer] >> c & 1]
            unseen = [
                c for c in options if not state.mines[viewer] >> c & 1 and not _revealed_neighbour(state, c)
            ]
            if overlap and unseen:
                a, b = state.copy(), state.copy()
                answer_a = a.apply(Action(planter, ActionType.PLANT, overlap[0]))
                answer_b = b.apply(Action(planter, ActionType.PLANT, unseen[-1]))
                assert not isinstance(answer_a, Refusal) and not isinstance(answer_b, Refusal)
                assert [seen_by(e, viewer) for e in answer_a if not isinstance(e, MatchEnded)] == [
                    seen_by(e, viewer) for e in answer_b if not isinstance(e, MatchEnded)
                ]  # V5: the same answer in the viewer's eyes
                if not a.over and not b.over:  # O9 may (legitimately) end one of them
                    assert view_bytes(a, viewer) == view_bytes(b, viewer)
                    compared += 1
        state.apply(action)
    return compared


@PROPS
@given(records(variant="online"))
def test_online_view_json_is_byte_identical_whether_or_not_the_opponent_overlapped(
    rec: dict[str, Any],
) -> None:
    """V4/V5: an ONLINE view serialised with json after dataclasses.asdict is byte-identical with or without an overlap."""
    overlap_comparisons(rec)


def test_overlap_view_comparison_actually_happens() -> None:
    """The byte-identity property above is exercised: seeded ONLINE records give hundreds of comparisons."""
    from support.strategies import random_records

    total = sum(overlap_comparisons(rec) for rec in random_records(seed=11, count=150, variant="online"))
    assert total >= 100


@pytest.mark.parametrize("variant", ["cpu", "online"])
def test_views_after_the_end_still_hide_nothing_new(variant: str) -> None:
    """V2/E2: after a KO the seat views still hold only own mines (the full truth is FinalReveal's, O13)."""
    state = GameState(variant)
    for action in (
        Action(0, ActionType.EXPLORE, 0),
        Action(1, ActionType.EXPLORE, 1),
        Action(0, ActionType.PLANT, 63),
        Action(1, ActionType.PLANT, 62),
        Action(0, ActionType.EXPLORE, 62),
    ):
        state.play(action)
    assert state.over
    assert state.view(0).my_mines == 1 << 63 and state.view(1).my_mines == 1 << 62
    assert all(f.name != "ko_cell" for f in dataclasses.fields(type(state.view(0))))
