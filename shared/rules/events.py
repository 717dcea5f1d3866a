"""What ``GameState.apply`` did, as typed events, and the rules read from them.

A successful ``apply`` returns a non-empty tuple: first the action's own event, then what it
caused (``TurnStarted`` or ``OpeningStep``), and ``MatchEnded`` last when the match ended.
Everything a caller once worked out by comparing the state before and after is in there.

Events are frozen and shared: every cell event (2 seats × 64 cells) and seat event exists once,
built at import, so ``apply`` allocates nothing but the tuple (see docs/ENGINE.md, performance).
Only ``MatchEnded`` is built when it happens, once per match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from mineduel.shared.rules.bitboard import CELLS, Cell
from mineduel.shared.rules.vocabulary import ActionType, Outcome, Phase


@dataclass(frozen=True, slots=True)
class Explored:
    """A1: ``seat`` explored ``cell``: safe and now revealed, or a KO when ``MatchEnded`` follows."""

    seat: int
    cell: Cell


@dataclass(frozen=True, slots=True)
class Planted:
    """A2: ``seat`` planted a mine on ``cell``; ``None`` in the opponent's eyes (V2, see seen_by)."""

    seat: int
    cell: Cell | None


@dataclass(frozen=True, slots=True)
class Flagged:
    """A3: ``seat`` put its marker on ``cell``."""

    seat: int
    cell: Cell


@dataclass(frozen=True, slots=True)
class Unflagged:
    """A4: ``seat`` took its marker off ``cell``."""

    seat: int
    cell: Cell


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A5: ``seat`` ended its turn (a ``TurnStarted`` for the other seat follows)."""

    seat: int


@dataclass(frozen=True, slots=True)
class TimedOut:
    """O4/O5: ``seat``'s deadline ran out (in a normal turn a ``TurnStarted`` follows)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Resigned:
    """O11: ``seat`` gave up."""

    seat: int


@dataclass(frozen=True, slots=True)
class Disconnected:
    """O12: ``seat``'s reconnection grace ran out."""

    seat: int


@dataclass(frozen=True, slots=True)
class Voided:
    """O12: both graces ran out."""


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """F2/F3: a normal turn of ``seat`` starts in the explore phase; the turn number went up."""

    seat: int


@dataclass(frozen=True, slots=True)
class OpeningStep:
    """F1: the next opening step (steps 2–4) is ``seat``'s, in ``phase``."""

    seat: int
    phase: Phase


@dataclass(frozen=True, slots=True)
class MatchEnded:
    """C4, O9–O12: the match is over with ``outcome`` (always the last event)."""

    outcome: Outcome


Event: TypeAlias = (
    Explored | Planted | Flagged | Unflagged | TurnEnded | TimedOut | Resigned | Disconnected | Voided
    | TurnStarted | OpeningStep | MatchEnded
)
Events: TypeAlias = tuple[Event, ...]

SEATS = (0, 1)
EXPLORED = tuple(tuple(Explored(s, c) for c in range(CELLS)) for s in SEATS)
"""``EXPLORED[seat][cell]``: the one instance of each event; the same for the tables below."""
PLANTED = tuple(tuple(Planted(s, c) for c in range(CELLS)) for s in SEATS)
FLAGGED = tuple(tuple(Flagged(s, c) for c in range(CELLS)) for s in SEATS)
UNFLAGGED = tuple(tuple(Unflagged(s, c) for c in range(CELLS)) for s in SEATS)
HIDDEN_PLANTED = tuple(Planted(s, None) for s in SEATS)
"""``HIDDEN_PLANTED[seat]``: ``seat``'s plant as its opponent sees it (V2)."""
TURN_ENDED = tuple(TurnEnded(s) for s in SEATS)
TIMED_OUT = tuple(TimedOut(s) for s in SEATS)
RESIGNED = tuple(Resigned(s) for s in SEATS)
DISCONNECTED = tuple(Disconnected(s) for s in SEATS)
VOIDED = Voided()
TURN_STARTED = tuple(TurnStarted(s) for s in SEATS)
OPENING_STEP = {p: tuple(OpeningStep(s, p) for s in SEATS) for p in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)}
"""``OPENING_STEP[phase][seat]``."""


def shows_cell(kind: ActionType, actor: int, viewer: int) -> bool:
    """V2: may ``viewer`` see the cell of ``actor``'s ``kind`` action? Not of the opponent's plant.

    The one rule for events, record entries and wire messages alike.
    """
    return kind is not ActionType.PLANT or actor == viewer


def seen_by(event: Event, seat: int) -> Event:
    """``event`` as ``seat`` may see it: the opponent's ``Planted`` loses its cell (V2); all
    other events are public."""
    if type(event) is Planted and not shows_cell(ActionType.PLANT, event.seat, seat):
        return HIDDEN_PLANTED[event.seat]
    return event


def restarts_deadline(events: Events) -> bool:
    """O4/O5: must the ONLINE server start a new 20-second deadline after these events?

    Yes exactly when the next opening step or a new normal turn began and the match goes on;
    an opening timeout alone (O4: the auto-move follows) and marker work do not restart it.
    """
    last = events[-1]
    return type(last) is TurnStarted or type(last) is OpeningStep
