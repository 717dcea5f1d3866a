"""What a seat may know and do, defined once (V2, O13): the seat view with its legal targets,
the full reveal after the end, and a seat's result.

The engine builds these (``GameState.view``, ``GameState.reveal``); bots, the wire protocol and
the client read them. Nothing here sees the opponent's mines.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from mineduel.shared.rules.bitboard import FULL, Cell, Mask
from mineduel.shared.rules.vocabulary import ActionType, Outcome, Phase, Reason, Variant


@dataclass(frozen=True, slots=True)
class SeatView:
    """What one seat may know (V2). It has no field that could hold the opponent's mines.

    ``numbers[i]`` is the number of a revealed cell, ``-1`` for an unrevealed one.
    ``deadline`` is set by the ONLINE server (the engine has no clock).
    """

    seat: int
    variant: Variant
    phase: Phase
    to_move: int | None
    turn: int
    revealed: Mask
    revealed_by_me: Mask
    numbers: tuple[int, ...]
    my_mines: Mask
    my_markers: Mask
    opponent_markers: Mask
    quota_left: int
    outcome: Outcome | None
    deadline: float | None = None

    @property
    def unrevealed(self) -> Mask:
        return FULL & ~self.revealed

    @property
    def markers(self) -> Mask:
        return self.my_markers | self.opponent_markers

    @property
    def explorable(self) -> Mask:
        """S1 from this seat's side: the same set the engine computes."""
        return FULL & ~self.revealed & ~self.markers & ~self.my_mines

    @property
    def recoverable(self) -> Mask:
        """S2 from this seat's side."""
        return self.my_markers & ~self.revealed & ~self.my_mines

    def targets(self, kind: ActionType) -> Mask:
        """The cells this seat may take ``kind`` on right now (F1, F2, A1–A4, S1, S3).

        From the view alone: 0 when it is not this seat's turn or the phase forbids ``kind``
        (or ``kind`` is not a cell action). An explore may still be a KO: the opponent's mines are
        not in the view. ``GameState.legal_actions`` agrees cell for cell (a property test).
        """
        if self.to_move != self.seat:
            return 0
        index = _TARGET_INDEX.get(kind)
        if index is None:
            return 0
        return targets_of(
            self.phase, self.revealed, self.my_mines, self.my_markers, self.opponent_markers, self.quota_left
        )[index]


_TARGET_INDEX = {ActionType.EXPLORE: 0, ActionType.PLANT: 1, ActionType.FLAG: 2, ActionType.UNFLAG: 3}
_NO_TARGETS = (0, 0, 0, 0)


def targets_of(
    phase: Phase, revealed: Mask, my_mines: Mask, my_markers: Mask, opponent_markers: Mask, quota_left: int
) -> tuple[Mask, Mask, Mask, Mask]:
    """The legal cells of the seat to move as (explore, plant, flag, unflag): the one definition.

    :meth:`SeatView.targets` reads it; a caller holding the masks already (the random player)
    calls it directly, without building a view.
    """
    free = FULL & ~revealed & ~(my_markers | opponent_markers)  # closed, no marker of anyone
    # S1 explore, S3 plant (the same cells; an overlap with the opponent's mine is allowed, V5);
    # A3 one new marker per turn on a free cell; A4 only one's own markers; F1 none in the opening.
    if phase is Phase.EXPLORE:
        return free & ~my_mines, 0, free if quota_left else 0, my_markers
    if phase is Phase.PLANT:
        return 0, free & ~my_mines, free if quota_left else 0, my_markers
    if phase is Phase.END_WAIT:
        return 0, 0, free if quota_left else 0, my_markers
    if phase is Phase.OPEN_EXPLORE:
        return free & ~my_mines, 0, 0, 0
    if phase is Phase.OPEN_PLANT:
        return 0, free & ~my_mines, 0, 0
    return _NO_TARGETS  # over


@dataclass(frozen=True, slots=True)
class FinalReveal:
    """O13: everything, once the match is over."""

    mines: tuple[Mask, Mask]
    overlaps: Mask
    markers: tuple[Mask, Mask]
    correct_markers: tuple[Mask, Mask]
    wrong_markers: tuple[Mask, Mask]
    ko_cell: Cell | None
    outcome: Outcome


class Result(StrEnum):
    """A match's end from one seat's side (C4, O9–O12)."""

    WIN = "win"
    LOSS = "loss"
    DRAW = "draw"
    VOID = "void"  # O12: both graces ran out; nobody won, and it is not a draw


@dataclass(frozen=True, slots=True)
class SeatResult:
    """An :class:`Outcome` as one seat sees it: every seat-dependent field relative to it."""

    outcome: Result
    winner: Literal["me", "opponent"] | None  # None: a draw or void
    reason: Reason
    scores: tuple[int, int] | None  # O10: (mine, opponent's), only for a score ending


def seat_result(outcome: Outcome, seat: int) -> SeatResult:
    """``outcome`` from ``seat``'s side; the one rule behind every result screen and message."""
    if outcome.reason is Reason.VOID:
        result = Result.VOID
    elif outcome.winner is None:
        result = Result.DRAW
    else:
        result = Result.WIN if outcome.winner == seat else Result.LOSS
    winner: Literal["me", "opponent"] | None = None
    if outcome.winner is not None:
        winner = "me" if outcome.winner == seat else "opponent"
    scores = None if outcome.scores is None else (outcome.scores[seat], outcome.scores[1 - seat])
    return SeatResult(result, winner, outcome.reason, scores)
