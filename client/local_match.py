"""What every match played inside this process shares behind the MatchController interface.

A CPU match (:mod:`mineduel.client.cpu_match`) and the tutorial's match
(:mod:`mineduel.client.tutorial_match`) both hold the engine's :class:`GameState` with the local
player as seat 0, pace the other seat's moves with a :class:`StepPacer` (AI6, paused while a popup
is open), hand the screen its events through :meth:`poll` and fix the result, turns and elapsed
time once at the end (C4, E1). That part is written here once; each subclass says how the other
seat moves (``update``), what is recorded and what the reveal offers.
"""

from __future__ import annotations

from collections.abc import Callable

from mineduel.client.controller import Capabilities, Ended, MatchEvent, OpponentKind, Timing
from mineduel.client.pacing import StepPacer
from mineduel.shared.rules.engine import Action, GameState, Outcome, Reason
from mineduel.shared.rules.views import SeatView

LOCAL_SEAT = 0  # the person at this screen (V1: the human moves first)
OTHER_SEAT = 1  # the CPU or the tutorial's scripted opponent


class LocalMatch:
    """The engine state, the pacer, the event queue and the match clock of a match in this process."""

    def __init__(self, state: GameState, *, clock: Callable[[], float], wall_clock: Callable[[], float]) -> None:
        self.state = state
        self._clock = clock
        self._wall_clock = wall_clock
        self.pacer = StepPacer(clock)
        self._events: list[MatchEvent] = []
        self._started = clock()
        self._started_at = wall_clock()
        self._elapsed: float | None = None
        self._ended_at: float | None = None
        self._capabilities = Capabilities()

    # ----- MatchController ----------------------------------------------------------------------
    @property
    def seat(self) -> int:
        return LOCAL_SEAT

    @property
    def opponent(self) -> OpponentKind:
        return OpponentKind.CPU

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def view(self) -> SeatView:
        return self.state.view(LOCAL_SEAT)

    def submit(self, action: Action) -> None:
        if action.seat != LOCAL_SEAT:
            raise ValueError("the local player is seat 0")
        self._apply(action)

    def poll(self) -> list[MatchEvent]:
        events, self._events = self._events, []
        return events

    def next_wakeup(self) -> float | None:
        return self.pacer.deadline()

    def set_paused(self, reason: str, paused: bool) -> None:
        self.pacer.set_paused(reason, paused)

    @property
    def opponent_to_move(self) -> bool:
        return self.state.to_move == OTHER_SEAT

    @property
    def outcome(self) -> Outcome | None:
        return self.state.outcome()

    def timing(self) -> Timing:
        elapsed = self._elapsed if self._elapsed is not None else self._clock() - self._started
        return Timing(self._started_at, elapsed, self.state.turn, self._elapsed is not None)

    def close(self) -> None:
        self.pacer.cancel()

    # ----- for the subclasses --------------------------------------------------------------------
    def _apply(self, action: Action) -> None:
        """The one place that changes the match (each subclass's own bookkeeping around ``apply``)."""
        raise NotImplementedError

    def _finish(self, outcome: Outcome) -> None:
        """C4/E1: the result, turns and elapsed time are fixed once; the other seat's timer stops."""
        self.pacer.cancel()
        self._elapsed = self._clock() - self._started
        self._ended_at = self._wall_clock()
        ko = self.state.ko_cell if outcome.reason is Reason.KO else None
        self._events.append(Ended(outcome, self.state.turn, self._elapsed, ko))
