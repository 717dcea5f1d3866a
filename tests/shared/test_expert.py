"""The expert level (issue 18; docs/AI.md): V3, its explore/plant/marker rules, strength, analysis.

The expert is handed ``state.view(seat)`` and its own memory only, like every level (V3). The
strength test is a fixed-seed sample big enough that a level no better than hard fails it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import random

import pytest

from mineduel.shared.ai.analysis import explore_risks, hint, probabilities_before, seat_timeline, turn_heat_maps
from mineduel.shared.ai.cpu import Difficulty, StepKind, next_step
from mineduel.shared.ai.expert import expert_step, seat_probabilities
from mineduel.shared.ai.levels import LEVELS, CpuPlayer, Level, specified
from mineduel.shared.ai.memory import Memory
from mineduel.shared.cli import simulate as sim
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, cells
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Refusal, Variant
from mineduel.shared.rules.views import SeatView


def play(
    levels: tuple[str, str], seed: str, *, reserves: bool = True
) -> tuple[GameState, list[Action], list[tuple[int, SeatView, Memory, object, tuple[int, ...]]]]:
    """One CPU match; every expert decision kept as (seat, view, its memory, decision, true mines then)."""
    rng = random.Random(seed)
    state = GameState(Variant.CPU)
    memories: list[Memory | None] = [None, None]
    last: list[int | None] = [None, None]
    actions: list[Action] = []
    decisions: list[tuple[int, SeatView, Memory, object, tuple[int, ...]]] = []
    while not state.over:
        seat = state.to_move
        assert seat is not None
        view = state.view(seat)
        difficulty = specified(levels[seat])
        if difficulty is None:
            step = expert_step(view, memories[seat], rng, reserves=reserves)
            decisions.append((seat, view, step.memory, step.decision, tuple(state.mines)))
            memories[seat] = step.memory
            decision = step.decision
        else:
            decision = next_step(view, difficulty, rng, last[1 - seat])
        result = state.apply(decision.action)
        assert not isinstance(result, Refusal), (decision, result)
        actions.append(decision.action)
        action = decision.action
        if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
            last[seat] = action.cell
    return state, actions, decisions


def test_v3_the_expert_takes_a_view_and_its_own_memory_only() -> None:
    """V3: the entry point's inputs are the seat view, the seat's memory, a random source and a count."""
    params = list(inspect.signature(expert_step).parameters)
    assert params == ["view", "memory", "rng", "opponent_plants", "reserves"]
    assert {f.name for f in dataclasses.fields(Memory)} == {
        "seat", "revealed", "numbers", "my_mines", "opponent_plants", "evidence",
    }


def _hidden_twin(state: GameState, seat: int) -> GameState | None:
    """The same board with one opponent mine moved to a cell no revealed number sees (or None)."""
    opponent = 1 - seat
    unseen = FULL & ~state.revealed
    for cell in cells(state.revealed):
        unseen &= ~NEIGHBOURS[cell]
    markers = state.markers[0] | state.markers[1]
    movable = state.mines[opponent] & unseen & ~state.mines[seat]
    targets = unseen & ~state.mines[0] & ~state.mines[1] & ~markers
    if not movable or not targets:
        return None
    twin = state.copy()
    source = movable & -movable
    target = targets & -targets
    twin.mines[opponent] = twin.mines[opponent] & ~source | target
    return twin


def test_v3_two_worlds_that_differ_only_in_hidden_mines_get_the_same_decision() -> None:
    """V3: move an opponent mine between cells no number sees — equal views, so equal decisions."""
    compared = 0
    for index in range(12):
        state = GameState(Variant.CPU)
        rng = random.Random(f"twins:{index}")
        memories: list[Memory | None] = [None, None]
        players = [CpuPlayer("expert"), CpuPlayer("hard")]
        last: list[int | None] = [None, None]
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            if seat == 0:
                twin = _hidden_twin(state, seat)
                if twin is not None and twin.mines[1] != state.mines[1]:
                    twin_view = twin.view(seat)
                    assert twin_view == view  # the seat cannot tell the worlds apart
                    a = expert_step(view, memories[0], random.Random(index))
                    b = expert_step(twin_view, memories[0], random.Random(index))
                    assert a.decision == b.decision and a.memory == b.memory
                    compared += 1
                step = expert_step(view, memories[0], rng)
                memories[0] = step.memory
                decision = step.decision
            else:
                decision = players[1].step(view, rng, last[0])
            state.play(decision.action)
            action = decision.action
            if action.type is ActionType.EXPLORE and state.revealed >> action.cell & 1:  # type: ignore[operator]
                last[seat] = action.cell
    assert compared >= 100


@pytest.fixture(scope="module")
def matches() -> list[tuple[GameState, list[Action], list[tuple[int, SeatView, Memory, object, tuple[int, ...]]]]]:
    out = [play(("expert", "hard"), f"rules:{i}") for i in range(8)]
    out += [play(("normal", "expert"), f"rules:{i}") for i in range(8)]
    out += [play(("expert", "expert"), f"rules:{i}") for i in range(4)]
    return out


def test_expert_explores_a_lowest_probability_cell_or_takes_back_a_reserve(matches) -> None:  # type: ignore[no-untyped-def]
    """Explore rule: the chosen cell has the lowest exact probability among explorable cells; a
    reserve is taken back only when every explorable cell carries some risk."""
    explores = unflags = 0
    for _state, _actions, decisions in matches:
        for _seat, view, memory, decision, _mines in decisions:
            if view.phase is not Phase.EXPLORE:
                continue
            probs = seat_probabilities(view, memory)
            action = decision.action  # type: ignore[attr-defined]
            if action.type is ActionType.EXPLORE:
                lowest = min(probs.weights[c] for c in cells(view.explorable))
                assert probs.weights[action.cell] == lowest
                explores += 1
            elif action.type is ActionType.UNFLAG:
                assert not view.explorable or not view.explorable & probs.safe & ~view.my_mines
                unflags += 1
    assert explores > 300 and unflags > 0


def test_expert_reserves_only_cells_it_knows_are_safe(matches) -> None:  # type: ignore[no-untyped-def]
    """Marker rule: a reserve marker goes on an explorable cell with exact probability 0, in END_WAIT,
    and always leaves the opponent a cell it may explore (no C1.4 draw made by a reserve)."""
    reserves = 0
    for _state, _actions, decisions in matches:
        for _seat, view, _memory, decision, _mines in decisions:
            action = decision.action  # type: ignore[attr-defined]
            if action.type is not ActionType.FLAG or decision.kind is not StepKind.MARK:  # type: ignore[attr-defined]
                continue
            verdict = decision.classification  # type: ignore[attr-defined]
            assert view.phase is Phase.END_WAIT
            assert verdict.safe >> action.cell & 1 and view.explorable >> action.cell & 1
            reserves += 1
    assert reserves > 100


def test_every_expert_match_ends_legally_and_its_certainties_are_true(matches) -> None:  # type: ignore[no-untyped-def]
    """Chapter 13 for expert: the matches end, every action was legal (play() asserts it), and the
    classification derived from exact 0 and 1 never contradicts the true board."""
    for state, _actions, decisions in matches:
        assert state.over
        for _seat, _view, _memory, decision, mines in decisions:
            verdict = decision.classification  # type: ignore[attr-defined]
            if verdict is None:
                continue
            assert verdict.safe & (mines[0] | mines[1]) == 0
            assert verdict.mine & ~mines[0] & ~mines[1] == 0


def test_specified_levels_through_cpu_player_are_exactly_next_step() -> None:
    """AI1–AI5 stay as specified: CpuPlayer of easy/normal/hard is next_step, step for step."""
    assert [level.value for level in LEVELS] == ["easy", "normal", "hard", "expert"]
    assert [d.value for d in Difficulty] == ["easy", "normal", "hard"]
    for level in ("easy", "normal", "hard"):
        state = GameState(Variant.CPU)
        rng_a, rng_b = random.Random(level), random.Random(level)
        players = [CpuPlayer(level), CpuPlayer(level)]
        while not state.over:
            seat = state.to_move
            assert seat is not None
            view = state.view(seat)
            a = players[seat].step(view, rng_a, None)
            b = next_step(view, Difficulty(level), rng_b, None)
            assert a == b
            state.play(a.action)
    assert specified(Level.EXPERT) is None


STRENGTH_GAMES = 80
"""Per seat order. At hard's own strength (50 %) the chance to pass is below 1e-6."""


def test_expert_beats_hard_in_both_seat_orders_at_a_fixed_seed() -> None:
    """Issue 18's strength claim with teeth: over 2 × 80 fixed-seed matches against hard, the expert's
    Wilson 95 % lower bound is above the 65 % target in each seat order."""
    for first, second, expert_seat in (("expert", "hard", 0), ("hard", "expert", 1)):
        report = sim.simulate(first, second, STRENGTH_GAMES, seed="expert-beats-hard", workers=1)
        assert report.tally.violation_count == 0
        _rate, low, _high = sim.wilson(report.tally.winners[expert_seat], STRENGTH_GAMES)
        assert low > 0.65, (first, second, report.tally.winners)


def test_probabilities_alone_beat_hard() -> None:
    """Without reserve markers (probabilities, memory and quiet plants only) the expert still wins
    clearly more than half of 2 × 60 fixed-seed matches against hard (Wilson lower bound > 55 %)."""
    wins = 0
    for index in range(60):
        for expert_seat in (0, 1):
            levels = ("expert", "hard") if expert_seat == 0 else ("hard", "expert")
            state, _actions, _decisions = play(levels, f"ablation:{index}", reserves=False)
            outcome = state.outcome()
            assert outcome is not None
            wins += outcome.winner == expert_seat
    _rate, low, _high = sim.wilson(wins, 120)
    assert low > 0.55, wins


def test_simulate_cli_accepts_expert(capsys: pytest.CaptureFixture[str]) -> None:
    """`mine-duel simulate --first expert`: JSON names the level, has no AI3 target, and passes the checks."""
    assert sim.main(["--games", "6", "--first", "expert", "--second", "hard", "--workers", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["first"] == "expert" and report["violation_count"] == 0
    assert report["decisions"]["first"]["misjudgment"]["rate_target"] is None
    assert report["decisions"]["second"]["misjudgment"]["rate_target"] == 0.05


# ----- analysis -------------------------------------------------------------------------------------------


def test_analysis_rates_each_explore_from_the_seats_own_views(matches) -> None:  # type: ignore[no-untyped-def]
    """Analysis: every explore of the seat is listed with its probability and the safest alternative;
    the expert never took an avoidable risk, the normal level did (AI3 misjudgments)."""
    risky_normal = 0
    for state, actions, _decisions in matches[8:16]:  # normal (seat 0) against expert (seat 1)
        expert = explore_risks(actions, 1)
        normal = explore_risks(actions, 0)
        explores = [a for a in actions if a.type is ActionType.EXPLORE]
        assert len(expert) + len(normal) == len(explores)
        assert all(not r.risky and r.chosen <= r.safest + 1e-9 for r in expert)
        assert all(r.chosen >= r.safest - 1e-9 for r in normal)
        risky_normal += sum(r.risky for r in normal)
        outcome = state.outcome()
        assert outcome is not None and outcome.reason.value == "ko"
        assert [r.ko for r in normal + expert].count(True) == 1
    assert risky_normal > 0


def test_analysis_heat_map_uses_only_the_seats_view() -> None:
    """probabilities_before at any step equals the count from that seat's timeline, and moving a
    hidden opponent mine (a record whose seat views are equal) changes nothing."""
    _state, actions, _ = play(("hard", "expert"), "heat")
    timeline = seat_timeline(actions, 0)
    assert len(timeline) == len(actions) + 1 or timeline[-1].view.outcome is not None
    for index in (4, 20, len(actions) // 2):
        probs = probabilities_before(actions, 0, index)
        moment = timeline[index]
        assert probs == seat_probabilities(moment.view, moment.memory)
        assert sum(probs.values) == pytest.approx(moment.memory.opponent_plants)


def test_turn_heat_maps_and_hint_follow_the_seats_turns() -> None:
    """Analysis: one heat map per turn of the seat (stepping through), each summing to the opponent's
    mine count; the hint is the set of lowest-probability explorable cells."""
    _state, actions, _ = play(("expert", "normal"), "turns")
    maps = turn_heat_maps(actions, 1)
    turns = [m.turn for m in maps]
    assert turns == sorted(set(turns)) and turns[0] == 0 and all(t % 2 == 0 for t in turns[1:])
    timeline = seat_timeline(actions, 1)
    for turn_map in maps:
        moment = timeline[turn_map.index]
        assert sum(turn_map.probabilities.values) == pytest.approx(moment.memory.opponent_plants)
        if moment.view.phase is Phase.EXPLORE:
            best = hint(moment.view, moment.memory)
            lowest = min(turn_map.probabilities.weights[c] for c in cells(moment.view.explorable))
            assert best and all(turn_map.probabilities.weights[c] == lowest for c in cells(best))


def test_expert_simulation_is_reproducible_whatever_the_worker_count() -> None:
    """R4: the expert's memory lives in its match, so one worker or two give the same report."""
    one = sim.simulate("expert", "normal", 12, seed=18, workers=1).to_json()
    two = sim.simulate("expert", "normal", 12, seed=18, workers=2, chunk=5).to_json()
    for report in (one, two):
        del report["elapsed_seconds"], report["matches_per_second"], report["workers"]
    assert one == two
