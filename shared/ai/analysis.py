"""Post-match analysis from one seat's side (issue 18 item 3's engine; the screens come later).

Everything is computed from a match's actions (a record, CPU or ONLINE) replayed through the engine,
but each figure uses only what ``seat`` could see at that moment (V2): its view after every action so
far — the board is shown live, so all of them are its own earlier views — and the count of the
opponent's plants, which is public (``Planted`` reaches both seats without the cell; ONLINE turns can
time out without one, O5, so the count comes from the actions, not from the turn number).

* :func:`seat_timeline` — the seat's view and memory before every action;
* :func:`probabilities_before` — the heat map before any action (any turn of the record);
* :func:`explore_risks` — for each explore of the seat: the chosen cell's probability, the safest
  explorable cell's, and whether the choice was a risk the seat did not have to take;
* :func:`turn_heat_maps` — the heat map at the start of each of the seat's turns (stepping through);
* :func:`hint` — the safest cells to explore now (issue 18 item 4), from a view and its memory.

Pure: no clock, no randomness; an explore's summary costs one probability count (about a millisecond).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from mineduel.shared.ai.expert import seat_probabilities
from mineduel.shared.ai.memory import Memory, remember
from mineduel.shared.ai.probability import Probabilities
from mineduel.shared.rules.bitboard import Cell, Mask, cells
from mineduel.shared.rules.engine import GameState
from mineduel.shared.rules.views import SeatView
from mineduel.shared.rules.vocabulary import Action, ActionType, Phase, Refusal, Variant

__all__ = [
    "RISK_MARGIN",
    "ExploreRisk",
    "Moment",
    "TurnMap",
    "explore_risks",
    "hint",
    "probabilities_before",
    "seat_timeline",
    "turn_heat_maps",
]

RISK_MARGIN: Final = 0.05
"""An explore is *risky* when its cell's probability exceeds the safest available one by more than this."""


@dataclass(frozen=True, slots=True)
class Moment:
    """The seat's knowledge just before action ``index`` (``index == len(actions)``: after the last)."""

    index: int
    view: SeatView
    memory: Memory


@dataclass(frozen=True, slots=True)
class ExploreRisk:
    """One explore of the seat, judged with what it knew then.

    ``chosen`` is the probability that the explored cell held an opponent mine; ``safest`` the lowest
    over the cells it could explore (S1), reached on ``safest_cells``; ``ko`` whether it lost there.
    ``probabilities`` is the whole heat map at that moment.
    """

    index: int
    turn: int
    cell: Cell
    chosen: float
    safest: float
    safest_cells: Mask
    risky: bool
    ko: bool
    probabilities: Probabilities


@dataclass(frozen=True, slots=True)
class TurnMap:
    """The heat map at the start of one of the seat's turns (its first view in that turn's explore)."""

    index: int
    turn: int
    probabilities: Probabilities


def hint(view: SeatView, memory: Memory) -> Mask:
    """The explorable cells with the lowest probability of an opponent mine (exact ties together)."""
    probs = seat_probabilities(view, memory)
    weights = probs.weights
    best = -1
    out = 0
    for cell in cells(view.explorable):
        w = weights[cell]
        if best < 0 or w < best:
            best, out = w, 1 << cell
        elif w == best:
            out |= 1 << cell
    return out


def seat_timeline(actions: Sequence[Action], seat: int, variant: Variant | str = Variant.CPU) -> list[Moment]:
    """The seat's view and memory before every action and after the last (refused actions change nothing)."""
    state = GameState(variant)
    plants = 0
    memory: Memory | None = None
    moments: list[Moment] = []
    for index in range(len(actions) + 1):
        view = state.view(seat)
        memory = remember(memory, view, plants)
        moments.append(Moment(index, view, memory))
        if index == len(actions) or state.over:
            break
        action = actions[index]
        result = state.apply(action)
        if not isinstance(result, Refusal) and action.type is ActionType.PLANT and action.seat != seat:
            plants += 1
    return moments


def probabilities_before(
    actions: Sequence[Action], seat: int, index: int, variant: Variant | str = Variant.CPU
) -> Probabilities:
    """The seat's exact heat map just before action ``index`` (from its own views only)."""
    moments = seat_timeline(actions[:index], seat, variant)
    moment = moments[-1]
    return seat_probabilities(moment.view, moment.memory)


def turn_heat_maps(
    actions: Sequence[Action], seat: int, variant: Variant | str = Variant.CPU
) -> tuple[TurnMap, ...]:
    """The seat's heat map at the start of each of its turns (opening explore included), in order."""
    out: list[TurnMap] = []
    seen: set[int] = set()
    for moment in seat_timeline(actions, seat, variant):
        view = moment.view
        if view.to_move != seat or view.phase not in (Phase.EXPLORE, Phase.OPEN_EXPLORE) or view.turn in seen:
            continue
        seen.add(view.turn)
        out.append(TurnMap(moment.index, view.turn, seat_probabilities(view, moment.memory)))
    return tuple(out)


def explore_risks(
    actions: Sequence[Action], seat: int, variant: Variant | str = Variant.CPU
) -> tuple[ExploreRisk, ...]:
    """Every explore the seat made, with its risk and the safest alternative at that moment."""
    moments = seat_timeline(actions, seat, variant)
    out: list[ExploreRisk] = []
    for moment in moments[:-1]:
        action = actions[moment.index]
        if action.seat != seat or action.type is not ActionType.EXPLORE or action.cell is None:
            continue
        view = moment.view
        if not view.explorable >> action.cell & 1:
            continue  # refused (not explorable): no explore happened
        probs = seat_probabilities(view, moment.memory)
        chosen = probs.p(action.cell)
        safest = 2.0
        safest_cells = 0
        for cell in cells(view.explorable):
            p = probs.p(cell)
            if p < safest - 1e-12:
                safest, safest_cells = p, 1 << cell
            elif abs(p - safest) <= 1e-12:
                safest_cells |= 1 << cell
        following = moments[moment.index + 1].view if moment.index + 1 < len(moments) else view
        ko = following.outcome is not None and not following.revealed >> action.cell & 1
        out.append(
            ExploreRisk(
                moment.index, view.turn, action.cell, chosen, safest, safest_cells,
                chosen > safest + RISK_MARGIN, ko, probs,
            )
        )
    return tuple(out)
