"""The ``expert`` CPU level (issue 18): exact probabilities, memory, quiet plants, reserve markers.

Like every level it sees only its seat's view (V3) — :func:`expert_step` takes a :class:`SeatView`
and the seat's own :class:`Memory` of earlier views, nothing else — and it returns one step as a
:class:`~mineduel.shared.ai.cpu.Decision`, so callers pace and check it like the other levels (AI6).
The specified levels (AI1–AI5) are untouched; this one plays by the same rules with better judgement.
Randomness only breaks exact ties, through ``rng`` (R4). docs/AI.md explains every choice:

* **Explore** (AI2's step): the explorable cell with the lowest exact probability of an opponent
  mine (``shared/ai/probability.py``, with the memory's pins and overlaps). Exact ties: fewer of its
  own mines around (a number there tells the opponent less about them), then more unrevealed
  neighbours (its number tells the expert more), then uniform. A reserve (below) is taken back first
  when every explorable cell carries some risk. Only certain mines left (C3): a marker when that
  flags the whole board (a C1.1 draw) instead of a loss, else the explore that loses.
* **Plant** (AI4's step): each plantable cell is scored by how many cells the opponent could still
  prove safe after it (read with AI1's rules on the public numbers and the opponent mines the expert
  knows), by the chance that the cell already holds an opponent mine (a wasted, overlapping plant),
  and by how much its number changes would give it away (the fewer cells share its pattern of
  revealed neighbours, the more exactly a remembering opponent pins it). Lowest score wins.
* **Markers** (AI5's step): a *reserve* — a marker on a cell the expert knows to be safe. Nobody may
  explore or plant a marked cell (A6) but its owner may take it back (A4), so the opponent loses a
  safe cell and the expert keeps it for a turn with no safe cell. Never when it could leave the
  opponent with nothing to explore (a draw, C1.4) or flag the whole board (C1.1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from mineduel.shared.ai.cpu import Classification, Decision, StepKind
from mineduel.shared.ai.memory import Memory, remember
from mineduel.shared.ai.probability import (
    NO_EVIDENCE,
    InconsistentEvidence,
    Probabilities,
    mine_probabilities,
)
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, Cell, Mask, cells, nth_cell
from mineduel.shared.rules.views import SeatView
from mineduel.shared.rules.vocabulary import Action, ActionType, Phase

__all__ = [
    "INTERIOR",
    "LEAK_WEIGHT",
    "OVERLAP_WEIGHT",
    "ExpertStep",
    "expert_step",
    "opponent_provable_safe",
    "seat_probabilities",
]

INTERIOR: Final = sum(1 << (8 * r + c) for r in range(1, 7) for c in range(1, 7))
"""Opening explores go to a cell with eight neighbours, so its number watches the most cells."""

OVERLAP_WEIGHT: Final = 6.0
"""Plant score: a plant on an opponent mine is wasted; its cost in cells the opponent may prove safe."""
LEAK_WEIGHT: Final = 4.0
"""Plant score: the cost of a plant a remembering opponent can pin to one cell (scaled by 1/|group|)."""


@dataclass(frozen=True, slots=True)
class ExpertStep:
    """One expert step: the decision, the memory to pass next time, the probabilities it used."""

    decision: Decision
    memory: Memory
    probabilities: Probabilities | None


def seat_probabilities(view: SeatView, memory: Memory) -> Probabilities:
    """The exact probabilities for ``view`` with the evidence in ``memory`` (the seat's own views).

    If the evidence contradicts the view (it cannot when the memory came from the same match), the
    view alone is used.
    """
    plants = memory.opponent_plants
    try:
        return mine_probabilities(view, plants, memory.evidence)
    except InconsistentEvidence:
        return mine_probabilities(view, plants, NO_EVIDENCE)


def expert_step(
    view: SeatView,
    memory: Memory | None,
    rng: random.Random,
    opponent_plants: int | None = None,
    *,
    reserves: bool = True,
) -> ExpertStep:
    """The expert's next step in ``view`` (V3), after adding ``view`` to ``memory``.

    ``opponent_plants`` as for :func:`~mineduel.shared.ai.memory.remember` (derived in the CPU variant).
    Raises ``ValueError`` when it is not this seat's move.
    """
    seat = view.seat
    if view.outcome is not None or view.to_move != seat:
        raise ValueError("the CPU can only move on its own turn in a running match")
    memory = remember(memory, view, opponent_plants)
    phase = view.phase
    if phase is Phase.OPEN_EXPLORE:
        options = view.explorable & INTERIOR or view.explorable
        cell = nth_cell(options, rng.randrange(options.bit_count()))
        return ExpertStep(Decision(Action(seat, ActionType.EXPLORE, cell), StepKind.OPENING_EXPLORE), memory, None)
    probs = seat_probabilities(view, memory)
    verdict = _classification(view, probs)
    if phase is Phase.EXPLORE:
        decision = _explore(view, probs, verdict, rng)
    elif phase is Phase.PLANT or phase is Phase.OPEN_PLANT:
        decision = _plant(view, probs, rng)
    elif phase is Phase.END_WAIT:
        decision = (
            _end_wait(view, probs, verdict, rng)
            if reserves
            else Decision(Action(seat, ActionType.END_TURN), StepKind.END_TURN, verdict)
        )
    else:
        raise ValueError(f"no CPU step in phase {phase}")
    return ExpertStep(decision, memory, probs)


def _classification(view: SeatView, probs: Probabilities) -> Classification:
    """The exact verdicts in AI1's shape, so the simulator checks them against the truth."""
    unrevealed = view.unrevealed
    safe = probs.safe & ~view.my_mines
    mine = (view.my_mines | probs.certain) & unrevealed
    return Classification(safe=safe, mine=mine, uncertain=unrevealed & ~safe & ~mine)


def _lowest(mask: Mask, probs: Probabilities) -> tuple[Mask, int]:
    """The cells of ``mask`` with the lowest weight (exact ties kept together) and that weight."""
    weights = probs.weights
    best = -1
    out = 0
    for cell in cells(mask):
        w = weights[cell]
        if best < 0 or w < best:
            best, out = w, 1 << cell
        elif w == best:
            out |= 1 << cell
    return out, best


def _pick(mask: Mask, rng: random.Random) -> Cell:
    return nth_cell(mask, rng.randrange(mask.bit_count()))


def _explore(view: SeatView, probs: Probabilities, verdict: Classification, rng: random.Random) -> Decision:
    seat = view.seat
    explorable = view.explorable
    reserves = view.recoverable & verdict.safe
    if not explorable or (reserves and not explorable & verdict.safe):
        # C1.3 (nothing explorable) or a risky board: take back a reserve, else the safest own marker.
        back = reserves or _lowest(view.recoverable, probs)[0]
        if not back:
            raise ValueError("nothing explorable or recoverable: C1 should have ended the match")
        return Decision(Action(seat, ActionType.UNFLAG, _pick(back, rng)), StepKind.RECOVER_UNFLAG, verdict)
    best, weight = _lowest(explorable, probs)
    if weight == probs.total:
        # C3: only certain opponent mines are left to explore.
        if view.quota_left and _marker_makes_draw(view):
            cell = _pick(explorable, rng)
            return Decision(Action(seat, ActionType.FLAG, cell), StepKind.MARK_CHECKMATE, verdict)
        return Decision(Action(seat, ActionType.EXPLORE, _pick(explorable, rng)), StepKind.EXPLORE_MINE, verdict)
    if best & (best - 1):
        best = _tie_break(best, view)
    kind = StepKind.EXPLORE_SAFE if weight == 0 else StepKind.EXPLORE_UNCERTAIN
    return Decision(Action(seat, ActionType.EXPLORE, _pick(best, rng)), kind, verdict)


def _tie_break(best: Mask, view: SeatView) -> Mask:
    """Among exact ties: fewest own mines around, then most unrevealed neighbours."""
    unrevealed = view.unrevealed
    mine = view.my_mines
    top: tuple[int, int] | None = None
    out = 0
    for cell in cells(best):
        nb = NEIGHBOURS[cell]
        key = ((nb & mine).bit_count(), -(nb & unrevealed).bit_count())
        if top is None or key < top:
            top, out = key, 1 << cell
        elif key == top:
            out |= 1 << cell
    return out


def _marker_makes_draw(view: SeatView) -> bool:
    """C3: a marker on the last explorable cell flags every closed cell, a draw (C1.1), not a loss.

    Otherwise the marker itself is recoverable (S2), so C1.3 holds the turn and the cell has to be
    taken back and explored: a marker then only delays the loss.
    """
    explorable = view.explorable
    if explorable & (explorable - 1):
        return False  # more than one cell: the turn goes on and an explore follows (a loss anyway)
    return not view.unrevealed & ~view.markers & ~explorable


def opponent_provable_safe(revealed: Mask, numbers: tuple[int, ...] | list[int], known_mines: Mask) -> Mask:
    """AI1's rules from the opponent's side: unrevealed cells it can prove mine-free.

    ``known_mines`` are the mines the opponent knows for certain (its own, as far as the expert
    can tell: the opponent mines it has proved). Markers are not evidence (AI1).
    """
    unrevealed = FULL & ~revealed
    mine = known_mines & unrevealed
    unknown = unrevealed & ~mine
    safe = 0
    pending = [(NEIGHBOURS[c], numbers[c]) for c in cells(revealed) if NEIGHBOURS[c] & unknown]
    changed = True
    while changed and pending:
        changed = False
        still = []
        for nb, number in pending:
            open_ = nb & unknown
            if not open_:
                continue
            left = number - (nb & mine).bit_count()
            if left <= 0:
                safe |= open_
                unknown &= ~open_
                changed = True
            elif left >= open_.bit_count():
                mine |= open_
                unknown &= ~open_
                changed = True
            else:
                still.append((nb, number))
        pending = still
    return safe


def _plant(view: SeatView, probs: Probabilities, rng: random.Random) -> Decision:
    seat = view.seat
    plantable = view.explorable  # S3 = S1
    if not plantable:
        recoverable = view.recoverable  # C2: take a marker back to plant there
        if not recoverable:
            raise ValueError("nothing plantable or recoverable: C2 should have ended the match")
        worst = _lowest(recoverable, probs)[0]
        return Decision(Action(seat, ActionType.UNFLAG, _pick(worst, rng)), StepKind.PLANT_RECOVER_UNFLAG)
    revealed = view.revealed
    numbers = list(view.numbers)
    known = probs.certain  # the opponent's mines it surely knows: at least the ones the expert proved
    mined = view.my_mines | known
    total = probs.total
    weights = probs.weights
    open_cells = view.unrevealed & ~view.markers
    groups: dict[Mask, int] = {}
    for cell in cells(open_cells):
        key = NEIGHBOURS[cell] & revealed
        groups[key] = groups.get(key, 0) + 1
    best_score = 0.0
    best = 0
    for cell in cells(plantable):
        around = NEIGHBOURS[cell] & revealed
        after = numbers
        if around and not mined >> cell & 1:
            after = numbers.copy()
            for c in cells(around):
                after[c] += 1
        opp_safe = opponent_provable_safe(revealed, after, known) & open_cells & ~(1 << cell)
        score = (
            opp_safe.bit_count()
            + OVERLAP_WEIGHT * weights[cell] / total
            + (LEAK_WEIGHT / groups[around] if around else 0.0)
        )
        if not best or score < best_score - 1e-12:
            best_score, best = score, 1 << cell
        elif abs(score - best_score) <= 1e-12:
            best |= 1 << cell
    return Decision(Action(seat, ActionType.PLANT, _pick(best, rng)), StepKind.PLANT)


def _end_wait(view: SeatView, probs: Probabilities, verdict: Classification, rng: random.Random) -> Decision:
    seat = view.seat
    end = Decision(Action(seat, ActionType.END_TURN), StepKind.END_TURN, verdict)
    if not view.quota_left:
        return end
    candidates = view.explorable & verdict.safe
    if not candidates:
        return end
    # Never leave the opponent without a cell it may explore (a draw by C1.4, or C1.1).
    weights = probs.weights
    open_cells = view.unrevealed & ~view.markers
    not_theirs = 0
    for cell in cells(open_cells):
        if not weights[cell]:
            not_theirs |= 1 << cell
    # Prefer the safe cells the opponent can prove safe itself: those it would explore next.
    theirs = opponent_provable_safe(view.revealed, view.numbers, probs.certain) & candidates
    cell = _pick(theirs or candidates, rng)
    if not not_theirs & ~(1 << cell):
        return end
    return Decision(Action(seat, ActionType.FLAG, cell), StepKind.MARK, verdict)  # no AI5 draw: not counted as one
