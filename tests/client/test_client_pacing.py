"""AI6 pacing on a fake clock: the StepPacer on its own, then inside a CPU match."""

from __future__ import annotations

import random

import pytest
from support.client_driver import FakeClock

from mineduel.client.controller import Applied, Ended
from mineduel.client.cpu_match import CPU, HUMAN, CpuMatch
from mineduel.client.pacing import CPU_STEP_DELAY, StepPacer
from mineduel.shared.ai import cpu as ai
from mineduel.shared.rules.engine import Action, ActionType, Phase
from mineduel.shared.rules.views import SeatView


def test_step_delay_is_650_ms():
    """AI6: one CPU step every 650 ms."""
    assert pytest.approx(0.650) == CPU_STEP_DELAY


def test_countdown_runs_out_after_the_delay():
    """AI6: armed, the pacer is due exactly when 650 ms have passed, not a moment before."""
    clock = FakeClock()
    pacer = StepPacer(clock)
    assert not pacer.armed and not pacer.due()
    pacer.arm()
    clock.advance(0.649)
    assert not pacer.due()
    assert pacer.remaining() == pytest.approx(0.001)
    clock.advance(0.001)
    assert pacer.due()


def test_pause_keeps_what_is_left():
    """AI6: a pause freezes the countdown; after resuming only the rest has to pass."""
    clock = FakeClock()
    pacer = StepPacer(clock)
    pacer.arm()
    clock.advance(0.4)
    pacer.pause("popup")
    clock.advance(30.0)
    assert not pacer.due() and pacer.remaining() == pytest.approx(0.25)
    assert pacer.deadline() is None
    pacer.resume("popup")
    clock.advance(0.249)
    assert not pacer.due()
    clock.advance(0.001)
    assert pacer.due()


def test_overlapping_pause_reasons_need_all_lifted():
    """AI6: popup + minimised: lifting one reason does not restart the countdown."""
    clock = FakeClock()
    pacer = StepPacer(clock)
    pacer.arm()
    pacer.pause("popup")
    pacer.pause("minimised")
    pacer.resume("popup")
    clock.advance(5)
    assert not pacer.due() and pacer.paused and pacer.reasons == {"minimised"}
    pacer.set_paused("minimised", False)
    clock.advance(0.65)
    assert pacer.due()


def test_arming_while_paused_waits_for_resume():
    """AI6: a countdown armed during a pause starts only when the pause ends."""
    clock = FakeClock()
    pacer = StepPacer(clock)
    pacer.pause("hidden")
    pacer.arm()
    clock.advance(2)
    assert pacer.armed and not pacer.due() and pacer.remaining() == pytest.approx(0.65)
    pacer.resume("hidden")
    clock.advance(0.65)
    assert pacer.due()
    pacer.cancel()
    assert not pacer.armed and not pacer.due()


def _recording_step(seen: list[SeatView]):
    def step(view, difficulty, rng, last_safe):
        seen.append(view)
        return ai.next_step(view, difficulty, rng, last_safe)

    return step


def test_cpu_match_steps_650_ms_apart_and_pauses():
    """AI6 in a match: after my action the CPU waits 650 ms per step; a pause holds it."""
    clock = FakeClock()
    seen: list[SeatView] = []
    match = CpuMatch(seed=5, clock=clock, step=_recording_step(seen))
    match.submit(Action(HUMAN, ActionType.EXPLORE, 0))
    match.update()
    assert not seen
    clock.advance(0.3)
    match.set_paused("popup", True)
    clock.advance(10)
    match.update()
    assert not seen
    match.set_paused("popup", False)
    clock.advance(0.34)
    match.update()
    assert not seen
    clock.advance(0.01)
    match.update()
    assert len(seen) == 1
    assert match.view().revealed.bit_count() == 2


def test_cpu_sees_only_its_own_view():
    """V3: every view the AI is given is the CPU seat's view (it has no field for my mines)."""
    clock = FakeClock()
    seen: list[SeatView] = []
    match = CpuMatch(seed=11, clock=clock, step=_recording_step(seen))
    rng = random.Random(3)
    for _ in range(2000):
        if match.outcome is not None:
            break
        view = match.view()
        if view.to_move == HUMAN:
            if view.phase is Phase.END_WAIT:
                match.submit(Action(HUMAN, ActionType.END_TURN))
                continue
            options = view.explorable or view.recoverable
            cells = [c for c in range(64) if options >> c & 1]
            kind = ActionType.EXPLORE if view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE) else ActionType.PLANT
            if not view.explorable:
                kind = ActionType.UNFLAG
            match.submit(Action(HUMAN, kind, rng.choice(cells)))
        else:
            clock.advance(0.65)
            match.update()
    assert match.outcome is not None
    assert seen and all(isinstance(v, SeatView) and v.seat == CPU for v in seen)
    human_only = match.state.mines[HUMAN] & ~match.state.mines[CPU]
    assert all(not v.my_mines & human_only for v in seen)


def test_same_seed_same_match():
    """R4: two matches with the same seed and the same human moves are identical."""

    def play(seed: int) -> list:
        clock = FakeClock()
        match = CpuMatch(seed=seed, clock=clock)
        events = []
        order = list(range(64))
        for _ in range(3000):
            if match.outcome is not None:
                break
            view = match.view()
            if view.to_move == HUMAN:
                if view.phase is Phase.END_WAIT:
                    match.submit(Action(HUMAN, ActionType.END_TURN))
                else:
                    mask = view.explorable
                    if not mask:
                        match.submit(Action(HUMAN, ActionType.UNFLAG, next(c for c in order if view.recoverable >> c & 1)))
                    else:
                        kind = ActionType.EXPLORE if view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE) else ActionType.PLANT
                        match.submit(Action(HUMAN, kind, next(c for c in reversed(order) if mask >> c & 1)))
            else:
                clock.advance(0.65)
                match.update()
            events.extend(match.poll())
        return events

    first, second = play(42), play(42)
    assert first == second and isinstance(first[-1], Ended)


def test_cpu_plants_are_announced_without_their_cell():
    """V2: the event for the CPU's plant carries no cell; mine carry theirs."""
    clock = FakeClock()
    match = CpuMatch(seed=1, clock=clock)
    match.submit(Action(HUMAN, ActionType.EXPLORE, 0))
    for _ in range(3):
        clock.advance(0.65)
        match.update()
        view = match.view()
        if view.to_move == HUMAN and view.phase is Phase.OPEN_PLANT:
            match.submit(Action(HUMAN, ActionType.PLANT, 63))
    events = [e for e in match.poll() if isinstance(e, Applied)]
    plants = [e for e in events if e.kind is ActionType.PLANT]
    assert [(e.seat, e.cell) for e in plants] == [(HUMAN, 63), (CPU, None)]
