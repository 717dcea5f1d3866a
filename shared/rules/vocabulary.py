"""The words of the rules: variants, phases, action kinds, refusals, reasons, actions, outcomes.

Its own module so that the engine, its events and the seat views (which the engine builds) all
import it without importing each other in a circle. ``engine`` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mineduel.shared.rules.bitboard import CELLS, Cell

__all__ = [
    "CELL_ACTIONS", "NORMAL_PHASES", "ONLINE_ONLY_ACTIONS", "OPENING_PHASES", "Action", "ActionType",
    "Outcome", "Phase", "Reason", "Refusal", "Variant",
]


class Variant(StrEnum):
    """Which ending rules apply: CPU (§6) or ONLINE (§7)."""

    CPU = "cpu"
    ONLINE = "online"


class Phase(StrEnum):
    """Where the match is (F1, F2). The opening step is phase + seat to move."""

    OPEN_EXPLORE = "open_explore"  # F1 steps 1 (seat 0) and 2 (seat 1)
    OPEN_PLANT = "open_plant"  # F1 steps 3 (seat 0) and 4 (seat 1)
    EXPLORE = "explore"  # F2
    PLANT = "plant"  # F2
    END_WAIT = "end_wait"  # F2: optional marker work, then end turn
    OVER = "over"


NORMAL_PHASES = frozenset({Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT})
OPENING_PHASES = frozenset({Phase.OPEN_EXPLORE, Phase.OPEN_PLANT})


class ActionType(StrEnum):
    """Every action a record may hold (RECORD.md); the last four are ONLINE only."""

    EXPLORE = "explore"  # A1
    PLANT = "plant"  # A2
    FLAG = "flag"  # A3
    UNFLAG = "unflag"  # A4
    END_TURN = "end_turn"  # A5
    TIMEOUT = "timeout"  # O4/O5
    RESIGN = "resign"  # O11
    DISCONNECT = "disconnect"  # O12
    VOID = "void"  # O12


CELL_ACTIONS = frozenset({ActionType.EXPLORE, ActionType.PLANT, ActionType.FLAG, ActionType.UNFLAG})
ONLINE_ONLY_ACTIONS = frozenset(
    {ActionType.TIMEOUT, ActionType.RESIGN, ActionType.DISCONNECT, ActionType.VOID}
)


class Refusal(StrEnum):
    """Stable refusal codes, checked in this order (documented in docs/ENGINE.md)."""

    GAME_OVER = "game_over"  # any action after the end
    NOT_ONLINE = "not_online"  # an ONLINE-only action in a CPU match (RECORD.md)
    NOT_YOUR_TURN = "not_your_turn"  # F4
    WRONG_PHASE = "wrong_phase"  # F1/F2/A3/A5: not allowed in this phase
    REVEALED = "revealed"  # A1/A2/A3: the cell is already open
    MARKED = "marked"  # A1/A2/A6: a marker blocks the cell; A3: it already has one
    OWN_MINE = "own_mine"  # A1/A2/O8: the seat's own mine (overlap included)
    NO_MARKER = "no_marker"  # A4: nothing to remove there
    NOT_YOUR_MARKER = "not_your_marker"  # A4: someone else's marker
    QUOTA_USED = "quota_used"  # A3: one new marker per turn


class Reason(StrEnum):
    """Why a match ended; each member names the rule that produces it."""

    KO = "ko"  # A1/O8: explored the opponent's mine
    ALL_FLAGGED = "all_flagged"  # C1.1
    NO_EXPLORABLE = "no_explorable"  # C1.4
    NO_PLANTABLE = "no_plantable"  # C2
    SCORE = "score"  # O9 + O10
    RESIGN = "resign"  # O11
    DISCONNECT = "disconnect"  # O12: grace ran out
    VOID = "void"  # O12: both graces ran out


@dataclass(frozen=True, slots=True)
class Action:
    """One step by one seat. ``cell`` is set exactly for the four cell actions."""

    seat: int
    type: ActionType
    cell: Cell | None = None

    def __post_init__(self) -> None:
        if type(self.seat) is not int or self.seat not in (0, 1):
            raise ValueError(f"seat must be the integer 0 or 1, not {self.seat!r}")
        if self.type in CELL_ACTIONS and (type(self.cell) is not int or not 0 <= self.cell < CELLS):
            raise ValueError(f"{self.type} needs a cell 0..63, not {self.cell!r}")


@dataclass(frozen=True, slots=True)
class Outcome:
    """The one source of truth for the end: winner ``None`` means draw or void."""

    winner: int | None
    reason: Reason
    scores: tuple[int, int] | None = None

