"""The tutorial's match behind the :class:`~mineduel.client.controller.MatchController` interface.

The real engine on the tutorial's fixed position (:mod:`mineduel.client.tutorial_script`), the
player as seat 0 and a scripted opponent as seat 1: the opponent plays exactly the moves it is
given (:meth:`TutorialMatch.queue`), one every 650 ms like the CPU (AI6, paused while a popup is
open), so the match screen shows it move by move. Nothing is recorded: a tutorial is not a match
anyone plays for (no record, no result popup). After the end it offers the full reveal (O13),
which is the tutorial's last lesson.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mineduel.client.controller import Applied, BoardReveal, Capabilities, Refused
from mineduel.client.local_match import LOCAL_SEAT, OTHER_SEAT, LocalMatch
from mineduel.shared.rules import events as ev
from mineduel.shared.rules.engine import Action, GameState, Outcome, Refusal

PLAYER = LOCAL_SEAT
OPPONENT = OTHER_SEAT


class _Reveal:
    """O13 for the player's side, from the engine's reveal (only after the end)."""

    def __init__(self, match: TutorialMatch) -> None:
        self._match = match

    def reveal(self) -> BoardReveal | None:
        state = self._match.state
        if state.outcome() is None:
            return None
        full = state.reveal()
        return BoardReveal(
            my_mines=full.mines[PLAYER],
            opponent_mines=full.mines[OPPONENT],
            overlaps=full.overlaps,
            my_markers=full.markers[PLAYER],
            opponent_markers=full.markers[OPPONENT],
            right=full.correct_markers[PLAYER] | full.correct_markers[OPPONENT],
            wrong=full.wrong_markers[PLAYER] | full.wrong_markers[OPPONENT],
            ko_cell=full.ko_cell,
        )


class TutorialMatch(LocalMatch):
    """A match on ``state`` whose opponent plays only the moves queued for it."""

    def __init__(self, state: GameState, *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        super().__init__(state, clock=clock, wall_clock=wall_clock)
        self._queue: deque[Action] = deque()
        self.actions: list[Action] = []  # every applied move, both seats, in order
        self._capabilities = Capabilities(reveal=_Reveal(self))
        if state.outcome() is not None:  # resumed after the end: the screen still has to hear it
            self._finish(state.outcome())  # type: ignore[arg-type]

    # ----- the script's side ------------------------------------------------------------------
    def queue(self, actions: tuple[Action, ...]) -> None:
        """The opponent's next moves, played one per 650 ms from now (AI6)."""
        if any(a.seat != OPPONENT for a in actions):
            raise ValueError("only the opponent's moves are queued")
        self._queue.extend(actions)
        if self._queue:
            self.pacer.arm()

    @property
    def opponent_busy(self) -> bool:
        """The opponent still has queued moves to play."""
        return bool(self._queue)

    # ----- MatchController (the rest is LocalMatch's) ------------------------------------------
    def update(self) -> None:
        if not self._queue or not self.pacer.due():
            return
        action = self._queue.popleft()
        self._apply(action)
        if self._queue and self.state.outcome() is None:
            self.pacer.arm()
        else:
            self._queue.clear()
            self.pacer.cancel()

    def record_text(self) -> str | None:
        return None  # a tutorial leaves no record

    @property
    def record_name(self) -> str:
        return "tutorial"

    def close(self) -> None:
        self._queue.clear()
        super().close()

    # ----- the one place that changes the match ----------------------------------------------------
    def _apply(self, action: Action) -> None:
        result = self.state.apply(action)
        if isinstance(result, Refusal):
            if action.seat == OPPONENT:  # the script promised a legal move: a bug, not a player error
                raise RuntimeError(f"the tutorial's opponent move {action} was refused: {result}")
            self._events.append(Refused(action, result))
            return
        self.actions.append(action)
        seen = ev.seen_by(result[0], PLAYER)  # the opponent's plant has no cell for the player (V2)
        cell = seen.cell if isinstance(seen, ev.Explored | ev.Planted | ev.Flagged | ev.Unflagged) else None
        self._events.append(Applied(action.seat, action.type, cell))
        if type(result[-1]) is ev.MatchEnded:
            self._finish(result[-1].outcome)

    def _finish(self, outcome: Outcome) -> None:
        self._queue.clear()
        super()._finish(outcome)
