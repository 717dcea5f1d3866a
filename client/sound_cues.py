"""Which sound a match event makes: the match screen hands over what it drained, this picks the cues.

Kept apart from the screen so that :class:`~mineduel.client.scenes.game.GameScene` carries only a
few calls, and so the choice is one table, the same for CPU and online matches (it reads
controller events and seat views only, never the kind of controller):

* ``explore`` — either seat explored (an automatic explore too, O4); ``plant`` — either seat
  planted (the opponent's cell stays unknown, V4: the sound says only that it happened);
  ``flag`` — a flag placed or taken back, by either seat;
* ``number_changed`` — a number already on the board changed (a newly revealed cell is not a change),
  except by the local seat's own plant: the player knows where that went, the plant's thunk says enough;
* ``refused`` — the local seat's action was refused (or the board was touched on the opponent's turn);
* ``turn_start`` — the local seat's turn began;
* ``ko`` at once when a match ends on a mine, then ``win`` or ``loss`` (nothing for a draw or a
  void) a moment later, so the two never sound on top of each other;
* ``deadline_tick`` — once per whole second in the last :data:`TICK_FROM` seconds of the local
  seat's deadline (ONLINE's server deadline; a CPU match has none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mineduel.client.controller import Applied, Ended, MatchEvent, Refused
from mineduel.shared.rules.engine import ActionType
from mineduel.shared.rules.views import Result, SeatView, seat_result

if TYPE_CHECKING:
    from mineduel.client.scenes.base import Context

KIND_CUES = {ActionType.EXPLORE: "explore", ActionType.PLANT: "plant", ActionType.FLAG: "flag", ActionType.UNFLAG: "flag"}
END_DELAY = 0.45  # seconds from the KO burst to the win/loss phrase
TICK_FROM = 5  # the last seconds of a deadline that tick


class MatchCues:
    """One match screen's sounds (reset with the match)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._end_cue: tuple[float, str] | None = None
        self._ticked: int | None = None

    def reset(self) -> None:
        self._end_cue = None
        self._ticked = None

    def play(self, cue: str) -> None:
        self.ctx.sounds.play(cue)

    def drained(self, events: Sequence[MatchEvent], me: int, before: SeatView | None, after: SeatView) -> None:
        """The events of one poll, with the board's view before and after them."""
        cues: list[str] = []
        for event in events:
            if isinstance(event, Refused):
                cues.append("refused")
            elif isinstance(event, Applied):
                cue = KIND_CUES.get(event.kind)
                if cue is not None:
                    cues.append(cue)
            elif isinstance(event, Ended):
                result = seat_result(event.outcome, me).outcome
                end = {Result.WIN: "win", Result.LOSS: "loss"}.get(result)
                now = self.ctx.clock()
                if event.ko_cell is not None:
                    cues.append("ko")
                    if end is not None:
                        self._end_cue = (now + END_DELAY, end)
                elif end is not None:
                    cues.append(end)
        my_plant = any(isinstance(e, Applied) and e.seat == me and e.kind is ActionType.PLANT for e in events)
        if before is not None:
            both = before.revealed & after.revealed
            if not my_plant and any(both >> c & 1 and before.numbers[c] != after.numbers[c] for c in range(len(after.numbers))):
                cues.append("number_changed")
            if after.outcome is None and after.to_move == after.seat and before.to_move != before.seat:
                cues.append("turn_start")
        for cue in dict.fromkeys(cues):  # each cue once per poll, in order
            self.play(cue)

    def update(self, now: float) -> None:
        """Play the win/loss phrase when its moment comes (after a KO)."""
        if self._end_cue is not None and now >= self._end_cue[0]:
            cue = self._end_cue[1]
            self._end_cue = None
            self.play(cue)

    def deadline(self, seconds: float | None, my_turn: bool) -> None:
        """Tick once as each of the last whole seconds of my deadline starts."""
        if seconds is None or not my_turn or seconds <= 0:
            self._ticked = None
            return
        whole = math.ceil(seconds)
        if whole <= TICK_FROM and whole != self._ticked:
            self.play("deadline_tick")
        self._ticked = whole
