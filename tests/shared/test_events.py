"""The engine's typed events (shared/rules/events.py) and the four rules defined once in
shared/rules: legal targets per input mode, what a seat may see, a seat's result, and when a
deadline restarts. Deterministic: fixed actions, fixed seeds, derandomized Hypothesis."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from support.strategies import random_records, records

from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.fairness.record import from_json
from mineduel.shared.rules.bitboard import FULL
from mineduel.shared.rules.engine import (
    CELL_ACTIONS,
    OPENING_PHASES,
    Action,
    ActionType,
    GameState,
    Outcome,
    Phase,
    Reason,
    Refusal,
    Variant,
)
from mineduel.shared.rules.events import (
    Disconnected,
    Event,
    Explored,
    Flagged,
    MatchEnded,
    OpeningStep,
    Planted,
    Resigned,
    TimedOut,
    TurnEnded,
    TurnStarted,
    Unflagged,
    Voided,
    restarts_deadline,
    seen_by,
    shows_cell,
)
from mineduel.shared.rules.views import Result, SeatResult, seat_result
from mineduel.shared.wire import messages
from mineduel.shared.wire.board import outcome_of

PROPS = settings(
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
E, P, F, U = ActionType.EXPLORE, ActionType.PLANT, ActionType.FLAG, ActionType.UNFLAG


def opened(variant: Variant = Variant.ONLINE) -> GameState:
    """A match after the four opening steps (F1): seat 0 to explore in turn 1.

    Seat 0 explored cell 0 and planted on 63, seat 1 explored cell 7 and planted on 56."""
    state = GameState(variant)
    for action in (Action(0, E, 0), Action(1, E, 7), Action(0, P, 63), Action(1, P, 56)):
        state.play(action)
    return state


# ----- the events of each action ------------------------------------------------------------
def test_a1_explore_returns_explored_event() -> None:
    """A1/F2: a safe normal explore is one Explored event; the seat goes on to plant."""
    state = opened()
    assert state.apply(Action(0, E, 27)) == (Explored(0, 27),)
    assert state.phase is Phase.PLANT


def test_f1_opening_steps_name_the_next_seat_and_phase() -> None:
    """F1: each opening action is followed by the next step; the fourth starts turn 1 (F2)."""
    state = GameState(Variant.ONLINE)
    assert state.apply(Action(0, E, 0)) == (Explored(0, 0), OpeningStep(1, Phase.OPEN_EXPLORE))
    assert state.apply(Action(1, E, 7)) == (Explored(1, 7), OpeningStep(0, Phase.OPEN_PLANT))
    assert state.apply(Action(0, P, 63)) == (Planted(0, 63), OpeningStep(1, Phase.OPEN_PLANT))
    assert state.apply(Action(1, P, 56)) == (Planted(1, 56), TurnStarted(0))
    assert (state.turn, state.to_move, state.phase) == (1, 0, Phase.EXPLORE)


def test_a2_normal_plant_returns_planted_event() -> None:
    """A2: a normal plant is one Planted event with its cell (the planter's own account)."""
    state = opened()
    state.play(Action(0, E, 27))
    assert state.apply(Action(0, P, 28)) == (Planted(0, 28),)


def test_a3_a4_markers_return_flagged_and_unflagged_events() -> None:
    """A3/A4: placing and removing a marker are one event each."""
    state = opened()
    assert state.apply(Action(0, F, 40)) == (Flagged(0, 40),)
    assert state.apply(Action(0, U, 40)) == (Unflagged(0, 40),)


def test_a5_end_turn_returns_turn_ended_then_turn_started() -> None:
    """A5/F2: ending the turn is TurnEnded, then the opponent's TurnStarted."""
    state = opened()
    state.play(Action(0, E, 27))
    state.play(Action(0, P, 28))
    assert state.apply(Action(0, ActionType.END_TURN)) == (TurnEnded(0), TurnStarted(1))
    assert state.turn == 2


def test_a1_ko_explore_ends_with_match_ended() -> None:
    """A1/O8: exploring the opponent's mine is Explored, then MatchEnded with the KO outcome."""
    state = opened()
    assert state.apply(Action(0, E, 56)) == (Explored(0, 56), MatchEnded(Outcome(1, Reason.KO)))


def test_o4_opening_timeout_changes_nothing_but_is_reported() -> None:
    """O4: an opening timeout is TimedOut alone; the auto-move that follows is the next step."""
    state = GameState(Variant.ONLINE)
    assert state.apply(Action(0, ActionType.TIMEOUT)) == (TimedOut(0),)
    assert (state.phase, state.to_move) == (Phase.OPEN_EXPLORE, 0)


def test_o5_timeout_starts_the_next_turn_event() -> None:
    """O5: a normal-turn timeout is TimedOut, then the opponent's TurnStarted."""
    state = opened()
    assert state.apply(Action(0, ActionType.TIMEOUT)) == (TimedOut(0), TurnStarted(1))


@pytest.mark.parametrize(
    ("kind", "event", "outcome"),
    [
        (ActionType.RESIGN, Resigned(1), Outcome(0, Reason.RESIGN)),
        (ActionType.DISCONNECT, Disconnected(1), Outcome(0, Reason.DISCONNECT)),
        (ActionType.VOID, Voided(), Outcome(None, Reason.VOID)),
    ],
)
def test_o11_o12_endings_return_their_event_and_match_ended(kind: ActionType, event: Event, outcome: Outcome) -> None:
    """O11/O12: resign, disconnect and void are their own event, then MatchEnded."""
    state = opened()
    assert state.apply(Action(1, kind)) == (event, MatchEnded(outcome))


def test_o9_score_end_is_match_ended_last() -> None:
    """O9/O10: when the last safe cell goes, MatchEnded closes the action's events."""
    for record in random_records(5, 40, "online"):
        state = GameState(Variant.ONLINE)
        for action in from_json(record).actions:
            result = state.apply(action)
            if not isinstance(result, Refusal) and state.over:
                assert result[-1] == MatchEnded(state.outcome())  # type: ignore[arg-type]
                assert sum(isinstance(e, MatchEnded) for e in result) == 1


def test_events_are_shared_instances() -> None:
    """Performance (docs/ENGINE.md): the same event is the same object, not built per call."""
    a, b = opened(), opened()
    first, second = a.apply(Action(0, E, 27)), b.apply(Action(0, E, 27))
    assert first is second
    assert a.apply(Action(0, ActionType.TIMEOUT))[0] is b.apply(Action(0, ActionType.TIMEOUT))[0]  # type: ignore[index]


def test_f4_refusal_is_a_refusal_and_no_events() -> None:
    """F4: a refused action returns its code, not an empty tuple, and changes nothing."""
    state = opened()
    before = state.snapshot()
    assert state.apply(Action(1, E, 27)) is Refusal.NOT_YOUR_TURN
    assert state.snapshot() == before


def test_play_returns_the_events() -> None:
    """``play`` is ``apply`` for trusted callers: the same events."""
    assert opened().play(Action(0, F, 40)) == (Flagged(0, 40),)


# ----- events tell what comparing states told -------------------------------------------------
def diff_facts(before: tuple[Any, ...], state: GameState) -> dict[str, Any]:
    """What a caller used to work out by comparing (phase, to_move, turn, over) before and after."""
    phase, to_move, turn, _ = before
    return {
        # F2: the first turn is seat 0's; later ones pass to the other seat (even if C1 ends it at once)
        "turn_started": (0 if phase in OPENING_PHASES else 1 - to_move) if state.turn != turn else None,
        "opening_step": (state.to_move, state.phase)
        if phase in OPENING_PHASES and state.phase in OPENING_PHASES and (state.phase, state.to_move) != (phase, to_move)
        else None,
        "ended": state.outcome(),
    }


def event_facts(events: tuple[Event, ...]) -> dict[str, Any]:
    started = [e.seat for e in events if isinstance(e, TurnStarted)]
    steps = [(e.seat, e.phase) for e in events if isinstance(e, OpeningStep)]
    ended = [e.outcome for e in events if isinstance(e, MatchEnded)]
    return {
        "turn_started": started[0] if started else None,
        "opening_step": steps[0] if steps else None,
        "ended": ended[0] if ended else None,
    }


def old_deadline_rule(before: tuple[Any, ...], state: GameState) -> bool:
    """server/match.py before events: restart when (phase, to_move, turn) changed and it was
    the opening or the turn number went up; never once the match is over."""
    after = (state.phase, state.to_move, state.turn)
    return not state.over and after != before[:3] and (before[0] in OPENING_PHASES or after[2] != before[2])


def check_record(record: dict[str, Any]) -> None:
    state = GameState(record["variant"])
    for action in from_json(record).actions:
        before = (state.phase, state.to_move, state.turn, state.over)
        snapshot = state.snapshot()
        result = state.apply(action)
        if isinstance(result, Refusal):
            assert state.snapshot() == snapshot
            continue
        assert result, f"{action} accepted without events"
        assert restarts_deadline(result) == old_deadline_rule(before, state), (action, result)
        assert event_facts(result) == diff_facts(before, state), (action, result)
        if action.type in CELL_ACTIONS:
            first = result[0]
            assert (type(first).__name__.lower(), first.seat, first.cell) == (  # type: ignore[union-attr]
                {"explore": "explored", "plant": "planted", "flag": "flagged", "unflag": "unflagged"}[action.type],
                action.seat,
                action.cell,
            )


@PROPS
@given(records("online"))
def test_o4_o5_restarts_deadline_equals_the_state_diff_rule_online(record: dict[str, Any]) -> None:
    """O4/O5: restarts_deadline(events) is the old (phase, to_move, turn) diff rule on every step
    of random ONLINE records (timeouts, resign, disconnect, void, refusals mixed in)."""
    check_record(record)


@PROPS
@given(records("cpu"))
def test_c1_c4_events_tell_what_the_state_diff_told_cpu(record: dict[str, Any]) -> None:
    """C1–C4/F2: in CPU records too, turn starts, opening steps and the end are in the events."""
    check_record(record)


def test_o4_o5_restarts_deadline_on_seeded_records() -> None:
    """The same equivalence over 300 seeded records of both variants."""
    for record in random_records(13, 300):
        check_record(record)


# ----- legal targets (SeatView.targets) -----------------------------------------------------
def check_targets(state: GameState) -> None:
    for seat in (0, 1):
        view = state.view(seat)
        legal = list(state.legal_actions()) if state.to_move == seat else []
        for kind in (E, P, F, U):
            expected = 0
            for a in legal:
                if a.type is kind:
                    expected |= 1 << a.cell  # type: ignore[operator]
            assert view.targets(kind) == expected, (seat, kind, state)
        assert view.targets(ActionType.END_TURN) == 0


@PROPS
@given(records())
def test_a1_a4_targets_agree_with_legal_actions(record: dict[str, Any]) -> None:
    """A1–A4/S1/S3/F1: for every position of random records and each seat, the view's targets of
    each kind are exactly the cells of legal_actions of that kind (none when not to move)."""
    state = GameState(record["variant"])
    check_targets(state)
    for action in from_json(record).actions:
        if not isinstance(state.apply(action), Refusal):
            check_targets(state)


def test_a1_a4_targets_agree_on_seeded_random_play() -> None:
    """The same agreement over 100 seeded random games of both variants."""
    rng = random.Random(7)
    for variant in (Variant.CPU, Variant.ONLINE) * 50:
        state = GameState(variant)
        while not state.over:
            check_targets(state)
            state.play(random_legal_action(state, rng))
        check_targets(state)


def test_a3_no_flag_targets_once_the_quota_is_used() -> None:
    """A3: after one new marker the flag targets are empty, the own markers stay removable (A4)."""
    state = opened()
    state.play(Action(0, F, 40))
    view = state.view(0)
    assert view.targets(F) == 0 and view.targets(U) == 1 << 40
    assert view.targets(E) == FULL & ~view.revealed & ~(1 << 40) & ~view.my_mines


# ----- what a seat may see -----------------------------------------------------------------
@pytest.mark.parametrize(("kind", "actor", "viewer", "shown"), [
    (P, 0, 0, True), (P, 0, 1, False), (P, 1, 0, False), (P, 1, 1, True),
    (E, 0, 1, True), (F, 1, 0, True), (U, 0, 1, True), (ActionType.END_TURN, 0, 1, True),
])
def test_v2_shows_cell_hides_only_the_opponents_plant(kind: ActionType, actor: int, viewer: int, shown: bool) -> None:
    """V2: every action's cell is public except the opponent's plant."""
    assert shows_cell(kind, actor, viewer) is shown


def test_v2_seen_by_hides_the_opponents_plant_cell() -> None:
    """V2/V5: the opponent's Planted loses its cell; one's own keeps it; everything else is public."""
    assert seen_by(Planted(0, 28), 1) == Planted(0, None)
    assert seen_by(Planted(0, 28), 0) == Planted(0, 28)
    for event in (Explored(0, 3), Flagged(1, 4), Unflagged(1, 4), TurnEnded(0), TimedOut(1),
                  TurnStarted(0), OpeningStep(1, Phase.OPEN_PLANT), Resigned(0), Voided(),
                  MatchEnded(Outcome(0, Reason.KO))):
        assert seen_by(event, 0) is event and seen_by(event, 1) is event


# ----- a seat's result ---------------------------------------------------------------------
OUTCOMES = [
    Outcome(0, Reason.KO), Outcome(1, Reason.RESIGN), Outcome(1, Reason.DISCONNECT),
    Outcome(None, Reason.VOID), Outcome(None, Reason.ALL_FLAGGED), Outcome(None, Reason.NO_EXPLORABLE),
    Outcome(None, Reason.NO_PLANTABLE), Outcome(0, Reason.SCORE, (3, -1)), Outcome(None, Reason.SCORE, (2, 2)),
]


def _spelled_result(outcome: Outcome, me: int) -> dict[str, Any]:
    """The wire's ``result`` object (PROTOCOL.md §5) written out from the rules text, independently."""
    if outcome.reason is Reason.VOID:
        word = "void"
    elif outcome.winner is None:
        word = "draw"
    else:
        word = "win" if outcome.winner == me else "loss"
    return {
        "outcome": word,
        "winner": None if outcome.winner is None else ("me" if outcome.winner == me else "opponent"),
        "reason": outcome.reason.value,
        "scores": None if outcome.scores is None else {"me": outcome.scores[me], "opponent": outcome.scores[1 - me]},
    }


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: f"{o.reason}-{o.winner}")
@pytest.mark.parametrize("seat", [0, 1])
def test_c4_o9_o12_seat_result_matches_the_wire_result(outcome: Outcome, seat: int) -> None:
    """C4/O9–O12: seat_result says what the wire's ``result`` says (void is void, no winner is a
    draw), and a client reading that ``result`` back (``outcome_of``) gets the record's outcome."""
    result = seat_result(outcome, seat)
    wire = _spelled_result(outcome, seat)
    assert (result.outcome.value, result.winner, result.reason.value) == (wire["outcome"], wire["winner"], wire["reason"])
    expected_scores = None if wire["scores"] is None else (wire["scores"]["me"], wire["scores"]["opponent"])
    assert result.scores == expected_scores
    assert outcome_of(messages.Result.parse(wire), seat) == outcome


def test_o10_seat_result_is_relative() -> None:
    """O10: the scores and the winner are the seat's own first."""
    assert seat_result(Outcome(0, Reason.SCORE, (3, -1)), 1) == SeatResult(Result.LOSS, "opponent", Reason.SCORE, (-1, 3))
