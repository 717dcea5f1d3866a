"""What a seat remembers of its own earlier views, turned into :class:`Evidence` (issue 18).

A seat may remember everything it was shown (V2), and only the opponent's plants change numbers
behind its back: mines are never removed (B6), so between two views of the same seat every number
grows by the mines that appeared around it — the seat's own plants, which it knows, and the
opponent's, which it does not. Comparing the two views therefore says, for the window between them:

* **a pin** — when the opponent planted once and numbers it could see before went up beyond what
  the seat's own plants explain, the new mine lies on a cell whose revealed neighbours (among the
  cells revealed in the earlier view) are exactly the cells that went up, and on no mine of the seat;
* **an overlap** — when a plant of the seat's own changed fewer numbers than its revealed neighbours,
  the cell already held an opponent mine (V5: "neighbouring numbers do not go up").

Each window's explanation is a choice of which of the seat's new mines were overlaps; a fact is
kept only when every explanation that fits the numbers agrees on it (so the evidence is implied by
what was seen, never guessed). A window whose mine changed nothing ("silent") is not used: it says
the mine is away from the numbers, which weakly touches almost every cell (docs/AI.md).

Pure and incremental: ``memory = remember(memory, view)`` after each view, O(64) per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Final

from mineduel.shared.ai.probability import NO_EVIDENCE, Evidence, cpu_opponent_plants
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, Mask, cells
from mineduel.shared.rules.views import SeatView

__all__ = ["Memory", "remember"]

MAX_OWN_PLANTS: Final = 3
"""More of the seat's own plants in one window than this: the window is not read (never in play)."""


@dataclass(frozen=True, slots=True)
class Memory:
    """The last view's board (revealed cells, numbers, own mines, opponent plants) and the evidence."""

    seat: int
    revealed: Mask
    numbers: tuple[int, ...]
    my_mines: Mask
    opponent_plants: int
    evidence: Evidence = NO_EVIDENCE


def remember(memory: Memory | None, view: SeatView, opponent_plants: int | None = None) -> Memory:
    """``memory`` updated with ``view``, the seat's next view of the same match.

    ``opponent_plants`` is how many mines the opponent had planted by ``view``; the CPU variant
    derives it from the view (:func:`cpu_opponent_plants`), ONLINE callers count ``Planted`` events.
    """
    plants = cpu_opponent_plants(view) if opponent_plants is None else opponent_plants
    if (
        memory is None
        or memory.seat != view.seat
        or memory.revealed & ~view.revealed  # cells closed again, mines gone: another match (B6)
        or memory.my_mines & ~view.my_mines
        or plants < memory.opponent_plants
    ):
        return Memory(view.seat, view.revealed, view.numbers, view.my_mines, plants)
    evidence = memory.evidence
    new_plants = plants - memory.opponent_plants
    if view.revealed != memory.revealed or view.numbers != memory.numbers or view.my_mines != memory.my_mines:
        found = _read_window(memory, view, new_plants)
        if found is not None:
            certain, pin = found
            pins = evidence.pins + ((pin,) if pin else ())
            evidence = Evidence(evidence.certain | certain, pins)
    return Memory(view.seat, view.revealed, view.numbers, view.my_mines, plants, evidence)


def _read_window(before: Memory, after: SeatView, opponent_plants: int) -> tuple[Mask, Mask] | None:
    """``(overlaps, pin)`` every explanation of the window agrees on; ``None`` when none fits."""
    if opponent_plants not in (0, 1):
        return None  # several plants (or a count going back): nothing is read
    own = after.my_mines & ~before.my_mines
    if own.bit_count() > MAX_OWN_PLANTS:
        return None
    seen = before.revealed
    old, new = before.numbers, after.numbers
    rises = {cell: new[cell] - old[cell] for cell in cells(seen)}
    if any(rise < 0 for rise in rises.values()):
        return None  # numbers never go down (B6): not the same match
    unrevealed = FULL & ~after.revealed
    own_cells = list(cells(own))
    explanations: list[tuple[Mask, Mask | None]] = []  # (overlaps, pin or None when silent)
    for size in range(len(own_cells) + 1):
        for overlap in combinations(own_cells, size):
            rest = dict(rises)
            for cell in own_cells:
                if cell in overlap:
                    continue
                for c in cells(NEIGHBOURS[cell] & seen):
                    rest[c] -= 1
            if any(r < 0 or r > 1 for r in rest.values()):
                continue
            up = 0
            for c, r in rest.items():
                if r:
                    up |= 1 << c
            overlap_mask = sum(1 << c for c in overlap)
            if not up:
                explanations.append((overlap_mask, None))
                continue
            if opponent_plants == 0:
                continue
            # The opponent's mine: a cell whose neighbours among ``seen`` are exactly ``up``.
            candidates = 0
            for cell in cells(unrevealed & ~after.my_mines):
                if NEIGHBOURS[cell] & seen == up:
                    candidates |= 1 << cell
            if candidates:
                explanations.append((overlap_mask, candidates))
    if not explanations:
        return None
    overlaps = FULL
    pin: Mask | None = 0
    for found_overlap, found_pin in explanations:
        overlaps &= found_overlap
        if found_pin is None or pin is None:
            pin = None
        else:
            pin |= found_pin
    return overlaps, pin or 0
