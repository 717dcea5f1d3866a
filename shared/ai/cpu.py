"""The CPU AI of the CPU variant (RULES.md §8, AI1–AI5; seed chapter 09).

Pure: standard library only, no global random, no clock. The one entry point is
:func:`next_step`. It receives the CPU seat's view (V2/V3) — a :class:`SeatView` cannot hold
the opponent's mines — and returns **one** step as a :class:`Decision`. Pacing (AI6, 650 ms
between steps) is the caller's job, and so is remembering ``last_opponent_safe_cell`` (the
cell the opponent most recently explored safely; visible to everyone, so allowed by V2).

Randomness comes only from the ``rng`` argument, in a fixed way so that the frequencies can
be tested (R4, R5): ``rng.random() < rate`` for every rate decision (AI3, AI4, AI5) and
``rng.randrange(n)`` for every uniform pick, over the options listed in the canonical
ascending cell order (R2). A rate draw happens only when its branch really has a choice
(AI3: safe *and* uncertain cells are explorable; AI5: a marker candidate exists), so the
counts in :class:`Decision` measure exactly the documented rates.

What each step does, by phase of the view:

* ``OPEN_EXPLORE`` — AI2: a uniform unrevealed cell, no misjudgment.
* ``EXPLORE`` — AI1 classifies; AI2 chooses among ``explorable`` (S1): safe and uncertain
  cells → uncertain with the misjudgment rate (AI3), else safe; only uncertain → uncertain;
  only mine (C3) → a marker on a uniform mine cell if the quota allows (C1 runs again),
  else explore a uniform mine cell and lose. Nothing explorable (C1.3 holds the turn) →
  remove the own marker on the best cell, safe > uncertain > mine; the next step explores.
* ``OPEN_PLANT`` / ``PLANT`` — AI4: area 60 % all plantable / 25 % neighbours of
  ``last_opponent_safe_cell`` / 15 % neighbours of all revealed cells, uniform within the
  area's plantable cells, back to all plantable when the area has none. Nothing plantable
  (C2 holds the phase) → remove a uniform own marker; the next step plants.
* ``END_WAIT`` — AI5: quota left and explorable cells classed mine → 70 % a marker on a
  uniform one of them; otherwise (or after the marker) end the turn.

**[our choice]** details the rules leave open, all marked in the code:

* Misjudgment rates: :data:`EASY_MISJUDGMENT` 30 %, :data:`NORMAL_MISJUDGMENT` 15 %,
  :data:`HARD_MISJUDGMENT` 5 %. Only "hard 5 %" comes from the original specification.
* C3 marker: a marker that could only be removed again at once is not placed. That is the
  case when it would leave nothing explorable, the board is not all flagged (no C1.1 draw),
  and every own marker is classed mine (C1.3 would take a mine cell back). The outcome is the
  same (the CPU explores a mine cell and loses) without a pointless flag/unflag pair; it also
  makes the C1.3 recovery exactly two steps (unflag, then explore).
* C2 recovery: the marker removed to plant is a uniform one of the seat's recoverable cells.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, Cell, Mask
from mineduel.shared.rules.engine import Action, ActionType, Phase
from mineduel.shared.rules.views import SeatView

__all__ = [
    "EASY_MISJUDGMENT",
    "HARD_MISJUDGMENT",
    "MARKER_RATE",
    "MISJUDGMENT_RATE",
    "NORMAL_MISJUDGMENT",
    "PLANT_AREA_RATES",
    "Classification",
    "Decision",
    "Difficulty",
    "PlantArea",
    "StepKind",
    "classify",
    "next_step",
]


class Difficulty(StrEnum):
    """The CPU difficulties (AI3); normal is the default."""

    EASY = "easy"
    NORMAL = "normal"
    HARD = "hard"


EASY_MISJUDGMENT: Final = 0.30
"""AI3, easy: chance to explore an uncertain cell although a safe one exists [our choice]."""
NORMAL_MISJUDGMENT: Final = 0.15
"""AI3, normal (the default) [our choice]."""
HARD_MISJUDGMENT: Final = 0.05
"""AI3, hard: the original specification's "hard 5 %" (seed chapter 09.2)."""

MISJUDGMENT_RATE: Final[dict[Difficulty, float]] = {
    Difficulty.EASY: EASY_MISJUDGMENT,
    Difficulty.NORMAL: NORMAL_MISJUDGMENT,
    Difficulty.HARD: HARD_MISJUDGMENT,
}
"""AI3: the misjudgment rate of each difficulty. It is not a win rate."""


class PlantArea(StrEnum):
    """AI4: where the CPU plants."""

    ALL = "all"  # every plantable cell
    RECENT = "recent"  # neighbours of the cell the opponent most recently explored safely
    REVEALED = "revealed"  # neighbours of all revealed cells


PLANT_AREA_RATES: Final[tuple[tuple[PlantArea, float], ...]] = (
    (PlantArea.ALL, 0.60),
    (PlantArea.RECENT, 0.25),
    (PlantArea.REVEALED, 0.15),
)
"""AI4: the area split, in the order the cumulative draw reads it."""

_ALL_BELOW: Final = PLANT_AREA_RATES[0][1]  # draw < 0.60 → all
_RECENT_BELOW: Final = _ALL_BELOW + PLANT_AREA_RATES[1][1]  # draw < 0.85 → recent, else revealed

MARKER_RATE: Final = 0.70
"""AI5: chance to place a marker on a cell classed mine in END_WAIT (the rest: forgotten)."""


_NOT_COL0: Final = FULL & ~sum(1 << (8 * row) for row in range(8))
_NOT_COL7: Final = FULL & ~sum(1 << (8 * row + 7) for row in range(8))


def _dilate(mask: Mask) -> Mask:
    """``mask`` plus every neighbour of its cells (B2), by shifts instead of a loop over cells."""
    row = mask | (mask << 1) & _NOT_COL0 | (mask >> 1) & _NOT_COL7
    return (row | row << 8 | row >> 8) & FULL


class StepKind(StrEnum):
    """Which branch of AI2–AI5 produced a step."""

    OPENING_EXPLORE = "opening_explore"  # AI2: uniform, no misjudgment
    EXPLORE_SAFE = "explore_safe"  # AI2: a safe cell
    EXPLORE_UNCERTAIN = "explore_uncertain"  # AI2/AI3: misjudged, or no safe cell
    EXPLORE_MINE = "explore_mine"  # AI2/C3: only mine cells, no quota — loses
    MARK_CHECKMATE = "mark_checkmate"  # AI2/C3: only mine cells, marker, C1 runs again
    RECOVER_UNFLAG = "recover_unflag"  # AI2/C1.3: remove own marker to explore there
    PLANT = "plant"  # AI4
    PLANT_RECOVER_UNFLAG = "plant_recover_unflag"  # C2: remove own marker to plant there
    MARK = "mark"  # AI5
    END_TURN = "end_turn"  # AI5 then A5


@dataclass(frozen=True, slots=True)
class Classification:
    """AI1's verdict on every unrevealed cell: the three masks partition ``view.unrevealed``.

    ``mine`` holds the seat's own mines too (AI1.1); a cell of ``mine`` that is not the
    seat's own mine is deduced to hold the opponent's mine.
    """

    safe: Mask
    mine: Mask
    uncertain: Mask


@dataclass(frozen=True, slots=True)
class Decision:
    """One CPU step and why it was taken (the fields feed the simulator's statistics).

    * ``classification`` — AI1 at decision time, when the step used it (explore, recover and
      END_WAIT steps); ``None`` for opening explores and plants, which do not deduce.
    * ``misjudgment_possible`` — AI3's draw happened: safe and uncertain cells were both
      explorable. ``misjudged`` — it chose an uncertain cell.
    * ``plant_area`` — AI4's drawn area; ``plant_fell_back`` — that area had no plantable
      cell, so the cell came from all plantable cells.
    * ``marker_candidate`` — AI5's draw happened (quota left, an explorable cell classed
      mine); ``marker_placed`` — it placed the marker (otherwise the step ends the turn).
    """

    action: Action
    kind: StepKind
    classification: Classification | None = None
    misjudgment_possible: bool = False
    misjudged: bool = False
    plant_area: PlantArea | None = None
    plant_fell_back: bool = False
    marker_candidate: bool = False
    marker_placed: bool = False


def classify(view: SeatView) -> Classification:
    """AI1: deduce from the current view only (own mines, revealed numbers; no history).

    Markers are not evidence [decision]: a marked cell is classified like any other.
    A number counts cells with at least one mine (B4), so "mine" means "holds a mine".
    """
    revealed = view.revealed
    mine = view.my_mines & ~revealed
    unknown = FULL & ~revealed & ~mine
    safe = 0
    numbers = view.numbers
    # The numbers that touch an unclassified cell (the frontier), as (neighbours, number).
    pending: list[tuple[Mask, int]] = []
    rest = revealed & _dilate(unknown)
    while rest:
        low = rest & -rest
        rest ^= low
        cell = low.bit_length() - 1
        pending.append((NEIGHBOURS[cell], numbers[cell]))
    changed = True
    while changed and pending:
        changed = False
        still: list[tuple[Mask, int]] = []
        for nb, number in pending:
            open_ = nb & unknown
            if not open_:
                continue
            left = number - (nb & mine).bit_count()
            if left == 0:
                safe |= open_
                unknown &= ~open_
                changed = True
            elif left == open_.bit_count():
                mine |= open_
                unknown &= ~open_
                changed = True
            else:
                still.append((nb, number))
        pending = still
    return Classification(safe=safe, mine=mine, uncertain=unknown)


def _nth(mask: Mask, n: int) -> Cell:
    """The ``n``-th cell (0-based) of ``mask`` in ascending order (the canonical order, R2)."""
    for _ in range(n):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1


def _uniform(mask: Mask, rng: random.Random) -> Cell:
    """A uniform cell of a non-empty ``mask``: ``rng.randrange`` over ascending cells."""
    return _nth(mask, rng.randrange(mask.bit_count()))


def next_step(
    view: SeatView,
    difficulty: Difficulty,
    rng: random.Random,
    last_opponent_safe_cell: int | None,
) -> Decision:
    """The CPU's next step in ``view`` (V3: the CPU seat's view, never the full state).

    Raises ``ValueError`` when it is not this seat's move (or the match is over).
    """
    seat = view.seat
    if view.outcome is not None or view.to_move != seat:
        raise ValueError("the CPU can only move on its own turn in a running match")
    phase = view.phase
    if phase is Phase.EXPLORE:
        return _explore(view, MISJUDGMENT_RATE[Difficulty(difficulty)], rng)
    if phase is Phase.PLANT or phase is Phase.OPEN_PLANT:
        return _plant(view, rng, last_opponent_safe_cell)
    if phase is Phase.END_WAIT:
        return _end_wait(view, rng)
    if phase is Phase.OPEN_EXPLORE:
        cell = _uniform(view.explorable, rng)  # = unrevealed: no mines or markers yet
        return Decision(Action(seat, ActionType.EXPLORE, cell), StepKind.OPENING_EXPLORE)
    raise ValueError(f"no CPU step in phase {phase}")


def _explore(view: SeatView, rate: float, rng: random.Random) -> Decision:
    """AI2/AI3 in EXPLORE, with C1.3 recovery and the C3 checkmate."""
    seat = view.seat
    verdict = classify(view)
    explorable = view.explorable
    if not explorable:
        # C1.3: the turn is held; take back the own marker on the best cell.
        recoverable = view.recoverable
        if not recoverable:
            raise ValueError("nothing explorable or recoverable: C1 should have ended the match")
        best = recoverable & verdict.safe or recoverable & verdict.uncertain or recoverable
        cell = _uniform(best, rng)
        return Decision(Action(seat, ActionType.UNFLAG, cell), StepKind.RECOVER_UNFLAG, verdict)
    safe = explorable & verdict.safe
    uncertain = explorable & verdict.uncertain
    if safe:
        if uncertain:
            misjudged = rng.random() < rate
            cell = _uniform(uncertain if misjudged else safe, rng)
            kind = StepKind.EXPLORE_UNCERTAIN if misjudged else StepKind.EXPLORE_SAFE
            return Decision(
                Action(seat, ActionType.EXPLORE, cell),
                kind,
                verdict,
                misjudgment_possible=True,
                misjudged=misjudged,
            )
        cell = _uniform(safe, rng)
        return Decision(Action(seat, ActionType.EXPLORE, cell), StepKind.EXPLORE_SAFE, verdict)
    if uncertain:
        cell = _uniform(uncertain, rng)
        return Decision(Action(seat, ActionType.EXPLORE, cell), StepKind.EXPLORE_UNCERTAIN, verdict)
    # C3: every explorable cell is classed mine.
    mines = explorable
    if view.quota_left and _checkmate_marker_useful(view, verdict):
        cell = _uniform(mines, rng)
        return Decision(Action(seat, ActionType.FLAG, cell), StepKind.MARK_CHECKMATE, verdict)
    cell = _uniform(mines, rng)
    return Decision(Action(seat, ActionType.EXPLORE, cell), StepKind.EXPLORE_MINE, verdict)


def _checkmate_marker_useful(view: SeatView, verdict: Classification) -> bool:
    """C3 [our choice]: False when the marker would only be taken back at once by C1.3."""
    explorable = view.explorable
    if explorable & (explorable - 1):
        return True  # more than one cell: after the marker C1 goes on (the rule's literal case)
    unmarked_after = view.unrevealed & ~view.markers & ~explorable
    if not unmarked_after:
        return True  # C1.1: the marker makes every unrevealed cell flagged — a draw
    # C1.3 would hold; it takes back a safe or uncertain own marker if there is one.
    return bool(view.recoverable & ~verdict.mine)


def _plant(view: SeatView, rng: random.Random, last_opponent_safe_cell: int | None) -> Decision:
    """AI4 in PLANT and OPEN_PLANT, with the C2 recovery."""
    seat = view.seat
    plantable = view.explorable  # S3 = S1
    if not plantable:
        recoverable = view.recoverable
        if not recoverable:
            raise ValueError("nothing plantable or recoverable: C2 should have ended the match")
        cell = _uniform(recoverable, rng)  # [our choice] a uniform own marker
        return Decision(Action(seat, ActionType.UNFLAG, cell), StepKind.PLANT_RECOVER_UNFLAG)
    draw = rng.random()
    if draw < _ALL_BELOW:
        area = PlantArea.ALL
        options = plantable
    elif draw < _RECENT_BELOW:
        area = PlantArea.RECENT
        options = (
            NEIGHBOURS[last_opponent_safe_cell] & plantable
            if last_opponent_safe_cell is not None
            else 0
        )
    else:
        area = PlantArea.REVEALED
        options = _dilate(view.revealed) & plantable  # plantable cells are never revealed
    fell_back = not options
    if fell_back:
        options = plantable
    cell = _uniform(options, rng)
    return Decision(
        Action(seat, ActionType.PLANT, cell),
        StepKind.PLANT,
        plant_area=area,
        plant_fell_back=fell_back,
    )


def _end_wait(view: SeatView, rng: random.Random) -> Decision:
    """AI5: maybe one marker on an explorable cell classed mine, then end the turn."""
    seat = view.seat
    if not view.quota_left:
        return Decision(Action(seat, ActionType.END_TURN), StepKind.END_TURN)
    verdict = classify(view)
    candidates = view.explorable & verdict.mine
    if not candidates:
        return Decision(Action(seat, ActionType.END_TURN), StepKind.END_TURN, verdict)
    if rng.random() < MARKER_RATE:
        cell = _uniform(candidates, rng)
        return Decision(
            Action(seat, ActionType.FLAG, cell),
            StepKind.MARK,
            verdict,
            marker_candidate=True,
            marker_placed=True,
        )
    return Decision(
        Action(seat, ActionType.END_TURN), StepKind.END_TURN, verdict, marker_candidate=True
    )
