"""Exact probabilities that each unrevealed cell holds an opponent mine, from one seat's view.

The model (docs/AI.md has the argument): the opponent's ``K`` mines are ``K`` distinct unrevealed
cells, every such set equally likely a priori — what "each plant uniform over the cells the opponent
could plant on" gives when it is conditioned on nothing else (markers and the opponent's strategy
are ignored; docs/AI.md). The seat then conditions, exactly, on:

* every revealed number (B4): it counts the neighbours holding *at least one* mine, so an
  opponent mine on the seat's own mine (an overlap) changes no number, and the seat subtracts
  the mines it knows, its own;
* :class:`Evidence` its memory gathered (``shared/ai/memory.py``): cells known to hold an opponent
  mine (a plant of its own that changed no number, V5) and *pins* — one per opponent plant whose
  number changes located it — each pin a set that holds that plant's mine, distinct plants on
  distinct cells (a system of distinct representatives).

The standard Minesweeper technique makes the count fast and exact: the unknown cells that some
constraint touches are split into independent components; each component's arrangements are
enumerated and counted by number of mines; the cells no constraint touches (the *pool*) are
interchangeable, so they enter as a binomial coefficient; the components are combined through the
known total ``K``. All counts are Python integers, so "probability 0" and "probability 1" are exact
(:attr:`Probabilities.safe`, :attr:`Probabilities.certain`). Cells are bits of a 64-bit mask as in
``rules/bitboard.py``; a component's state during the search is two masks (mines, free cells).

Pure: no clock, no randomness, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Final

from mineduel.shared.rules.bitboard import CELLS, FULL, NEIGHBOURS, Mask, cells
from mineduel.shared.rules.views import SeatView
from mineduel.shared.rules.vocabulary import Phase, Variant

__all__ = [
    "Evidence",
    "InconsistentEvidence",
    "Probabilities",
    "cpu_opponent_plants",
    "mine_probabilities",
    "probabilities_of",
]


class InconsistentEvidence(ValueError):
    """No arrangement of the opponent's mines agrees with the view and the evidence."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a seat's memory adds to its current view (``shared/ai/memory.py`` builds it).

    * ``certain`` — cells known to hold an opponent mine;
    * ``pins`` — one mask per located opponent plant: that plant's mine is a cell of the mask,
      and different pins are different plants, so on different cells.
    """

    certain: Mask = 0
    pins: tuple[Mask, ...] = ()


NO_EVIDENCE: Final = Evidence()


@dataclass(frozen=True, slots=True)
class Probabilities:
    """Exact weights: cell ``i`` holds an opponent mine with probability ``weights[i] / total``.

    ``total`` is the number of opponent mine sets that agree with everything the seat knows
    (each equally likely under the model); ``weights[i]`` how many of them have a mine on ``i``.
    Revealed cells weigh 0.
    """

    weights: tuple[int, ...]
    total: int
    unrevealed: Mask

    def p(self, cell: int) -> float:
        """The probability that ``cell`` holds an opponent mine."""
        return self.weights[cell] / self.total

    @property
    def values(self) -> tuple[float, ...]:
        """All 64 probabilities, cell by cell (a heat map)."""
        total = self.total
        return tuple(w / total for w in self.weights)

    @property
    def safe(self) -> Mask:
        """Unrevealed cells that certainly hold no opponent mine (exact zero)."""
        mask = 0
        weights = self.weights
        for cell in cells(self.unrevealed):
            if not weights[cell]:
                mask |= 1 << cell
        return mask

    @property
    def certain(self) -> Mask:
        """Cells that certainly hold an opponent mine (weight equal to the total)."""
        mask = 0
        weights, total = self.weights, self.total
        for cell in cells(self.unrevealed):
            if weights[cell] == total:
                mask |= 1 << cell
        return mask


def cpu_opponent_plants(view: SeatView) -> int:
    """How many mines the opponent has planted at ``view``, by the CPU variant's flow (F1, F2).

    Every plant is mandatory there: one in the opening (F1 steps 3, 4) and one per normal turn,
    after that turn's explore. ONLINE turns can time out without a plant (O5), so an online
    caller counts the public ``Planted`` events instead (the cell is hidden, the event is not).
    """
    if view.variant is not Variant.CPU:
        raise ValueError("the plant count follows from the view only in the CPU variant (O5)")
    if view.phase is Phase.OVER:
        raise ValueError("after the end the view no longer says whether the last turn planted")
    other = 1 - view.seat
    turn = view.turn
    if turn == 0:
        # F1: seat 0 plants first (step 3), then seat 1 (step 4).
        return 1 if view.phase is Phase.OPEN_PLANT and view.to_move == 1 and other == 0 else 0
    before = turn // 2 if other == 0 else (turn - 1) // 2  # the opponent's normal turns before this one
    current = (turn - 1) % 2 == other and view.phase is Phase.END_WAIT
    return 1 + before + current


def mine_probabilities(view: SeatView, opponent_mines: int, evidence: Evidence = NO_EVIDENCE) -> Probabilities:
    """The exact probabilities for ``view`` (V2: only what this seat may know) and its evidence."""
    return probabilities_of(view.revealed, view.numbers, view.my_mines, opponent_mines, evidence)


# ----- the count --------------------------------------------------------------------------------------


def probabilities_of(
    revealed: Mask,
    numbers: tuple[int, ...],
    my_mines: Mask,
    opponent_mines: int,
    evidence: Evidence = NO_EVIDENCE,
) -> Probabilities:
    """The count behind :func:`mine_probabilities`, from masks (for callers without a view).

    Raises :class:`InconsistentEvidence` when nothing agrees (a wrong count, a wrong pin).
    """
    unrevealed = FULL & ~revealed
    my_mines &= unrevealed
    fixed = evidence.certain & unrevealed
    if evidence.certain & revealed:
        raise InconsistentEvidence("a cell known to hold a mine is revealed")
    known = my_mines | fixed
    unknown = unrevealed & ~fixed  # cells whose opponent mine is not settled
    exact: dict[Mask, int] = {}
    for cell in cells(revealed):
        nb = NEIGHBOURS[cell]
        need = numbers[cell] - (nb & known).bit_count()
        free = nb & unknown & ~my_mines  # a mine of the opponent's here would show in the number
        if need < 0 or need > free.bit_count():
            raise InconsistentEvidence(f"cell {cell} shows {numbers[cell]}: impossible")
        if free and exact.setdefault(free, need) != need:
            raise InconsistentEvidence("two numbers disagree about the same cells")
    pins: list[Mask] = []
    for pin in evidence.pins:
        if pin & fixed:
            continue  # a known mine may be this plant's: the pin says nothing more (sound, weaker)
        pin &= unrevealed
        if not pin:
            raise InconsistentEvidence("a pinned plant has no unrevealed cell left")
        pins.append(pin)
    k = opponent_mines - fixed.bit_count()
    if k < 0:
        raise InconsistentEvidence("more known opponent mines than plants")
    # Components: constraints that share a cell belong together.
    groups: list[tuple[Mask, list[tuple[Mask, int]], list[Mask]]] = []
    for mask, need in exact.items():
        groups = _join(groups, mask, [(mask, need)], [])
    for pin in pins:
        groups = _join(groups, pin, [], [pin])
    covered = 0
    for mask, _, _ in groups:
        covered |= mask
    pool = unknown & ~covered
    pool_size = pool.bit_count()
    solved = [_solve(mask, cons, group_pins) for mask, cons, group_pins in groups]
    # Combine: polynomial by number of mines, the pool as binomial coefficients.
    polys = [counts for counts, _ in solved]
    prefix: list[list[int]] = [[1]]
    for poly in polys:
        prefix.append(_convolve(prefix[-1], poly))
    suffix: list[list[int]] = [[1]]
    for poly in reversed(polys):
        suffix.append(_convolve(suffix[-1], poly))
    suffix.reverse()
    everything = prefix[-1]
    total = sum(ways * comb(pool_size, k - m) for m, ways in enumerate(everything) if 0 <= k - m <= pool_size)
    if total == 0:
        raise InconsistentEvidence("no arrangement of the opponent's mines fits the numbers and the count")
    weights = [0] * CELLS
    for index, (_counts, per_cell) in enumerate(solved):
        others = _convolve(prefix[index], suffix[index + 1])
        # g[a]: weight of everything outside this component when it holds a mines.
        g = [
            sum(ways * comb(pool_size, k - a - b) for b, ways in enumerate(others) if 0 <= k - a - b <= pool_size)
            for a in range(len(per_cell))
        ]
        for a, cell_counts in enumerate(per_cell):
            weight = g[a]
            if weight:
                for cell, count in cell_counts.items():
                    weights[cell] += count * weight
    if pool_size:
        each = sum(
            ways * comb(pool_size - 1, k - m - 1) for m, ways in enumerate(everything) if 0 <= k - m - 1 <= pool_size - 1
        )
        for cell in cells(pool):
            weights[cell] = each
    for cell in cells(fixed):
        weights[cell] = total
    return Probabilities(tuple(weights), total, unrevealed)


def _join(
    groups: list[tuple[Mask, list[tuple[Mask, int]], list[Mask]]],
    mask: Mask,
    cons: list[tuple[Mask, int]],
    pins: list[Mask],
) -> list[tuple[Mask, list[tuple[Mask, int]], list[Mask]]]:
    """Add a constraint on ``mask`` to the components, merging every component it touches."""
    kept = []
    for group in groups:
        if group[0] & mask:
            mask |= group[0]
            cons = cons + group[1]
            pins = pins + group[2]
        else:
            kept.append(group)
    kept.append((mask, cons, pins))
    return kept


def _convolve(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _solve(
    component: Mask, cons: list[tuple[Mask, int]], pins: list[Mask]
) -> tuple[list[int], list[dict[int, int]]]:
    """Every arrangement of one component: counts by number of mines, and per cell.

    Cells that lie in exactly the same constraints are interchangeable, so the search runs over
    those *groups* (how many mines each holds, weighted by a binomial coefficient) instead of over
    cells. After every choice the bounds propagate (AI1's two rules at group level: a constraint
    with no mine left to place empties its open groups, one with exactly as many mines left as
    open cells fills them), so most groups are forced rather than branched on.
    """
    bounds = [(mask, need, need) for mask, need in cons] + [(pin, 1, pin.bit_count()) for pin in pins]
    signature: dict[tuple[int, ...], Mask] = {}
    for cell in cells(component):
        bit = 1 << cell
        key = tuple(i for i, (mask, _, _) in enumerate(bounds) if mask & bit)
        signature[key] = signature.get(key, 0) | bit
    groups = list(signature.values())
    sizes = [g.bit_count() for g in groups]
    n_groups = len(groups)
    members = [[g for g in range(n_groups) if groups[g] & mask] for mask, _, _ in bounds]
    lows = [lo for _, lo, _ in bounds]
    highs = [hi for _, _, hi in bounds]
    n_bounds = len(bounds)
    overlapping = _pins_overlap(pins)
    size = component.bit_count()
    counts = [0] * (size + 1)
    group_weights: list[list[int]] = [[0] * n_groups for _ in range(size + 1)]  # by mines: ways x share

    def propagate(assigned: list[int]) -> bool:
        changed = True
        while changed:
            changed = False
            for i in range(n_bounds):
                total = 0
                room = 0
                for g in members[i]:
                    c = assigned[g]
                    if c < 0:
                        room += sizes[g]
                    else:
                        total += c
                if total > highs[i] or total + room < lows[i]:
                    return False
                if room and (total == highs[i] or total + room == lows[i]):
                    fill = total != highs[i]
                    for g in members[i]:
                        if assigned[g] < 0:
                            assigned[g] = sizes[g] if fill else 0
                    changed = True
        return True

    def search(assigned: list[int]) -> None:
        if not propagate(assigned):
            return
        # The open group of the tightest constraint (least room) is branched on.
        best_g = -1
        best_room = 1 << 30
        for i in range(n_bounds):
            room = 0
            first = -1
            for g in members[i]:
                if assigned[g] < 0:
                    room += sizes[g]
                    if first < 0:
                        first = g
            if first >= 0 and room < best_room:
                best_room, best_g = room, first
        if best_g < 0:
            leaf(assigned)
            return
        for c in range(sizes[best_g] + 1):
            branch = assigned.copy()
            branch[best_g] = c
            search(branch)

    def leaf(assigned: list[int]) -> None:
        if overlapping:
            mine = 0
            for g in range(n_groups):
                rest = groups[g]
                for _ in range(assigned[g]):  # any cells of a group will do: they are interchangeable
                    low = rest & -rest
                    mine |= low
                    rest ^= low
            if not _distinct_representatives(pins, mine):
                return
        ways = 1
        for g in range(n_groups):
            ways *= comb(sizes[g], assigned[g])
        m = sum(assigned)
        counts[m] += ways
        row = group_weights[m]
        for g in range(n_groups):
            c = assigned[g]
            if c:
                row[g] += ways * c  # divided by the group size below: each cell's share
    search([-1] * n_groups)
    per_cell: list[dict[int, int]] = []
    for m in range(size + 1):
        row = group_weights[m]
        out: dict[int, int] = {}
        for g in range(n_groups):
            if row[g]:
                share = row[g] // sizes[g]  # exact: C(n, c) * c / n = C(n - 1, c - 1)
                for cell in cells(groups[g]):
                    out[cell] = share
        per_cell.append(out)
    return counts, per_cell


def _pins_overlap(pins: list[Mask]) -> bool:
    seen = 0
    for pin in pins:
        if seen & pin:
            return True
        seen |= pin
    return False


def _distinct_representatives(pins: list[Mask], mine: Mask) -> bool:
    """Hall's condition by augmenting paths: each pin gets its own mine cell."""
    owner: dict[int, int] = {}

    def assign(index: int, visited: set[int]) -> bool:
        for cell in cells(pins[index] & mine):
            if cell in visited:
                continue
            visited.add(cell)
            if cell not in owner or assign(owner[cell], visited):
                owner[cell] = index
                return True
        return False

    return all(assign(i, set()) for i in range(len(pins)))
