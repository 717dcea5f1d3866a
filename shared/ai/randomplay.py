"""A uniformly random legal player, for property tests, benchmarks and load generators.

It picks uniformly among all legal actions of the seat to move (the same set as
``GameState.legal_actions``) without building that list: the legal cells of each kind come
from :func:`~mineduel.shared.rules.views.targets_of` (the rule ``SeatView.targets`` reads),
counted with popcounts; :func:`nth_cell` selects one.
"""

from __future__ import annotations

import random

from mineduel.shared.rules.bitboard import nth_cell
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase
from mineduel.shared.rules.views import targets_of

_KINDS = (ActionType.EXPLORE, ActionType.PLANT, ActionType.FLAG, ActionType.UNFLAG)


def random_legal_action(state: GameState, rng: random.Random) -> Action:
    """One uniformly drawn legal action for the seat to move; ``ValueError`` when over."""
    seat = state.to_move
    if seat is None:
        raise ValueError("the match is over: no legal action")
    phase = state.phase
    masks = targets_of(
        phase, state.revealed, state.mines[seat], state.markers[seat], state.markers[1 - seat], state.quota_left
    )
    counts = [m.bit_count() for m in masks]
    end = 1 if phase is Phase.END_WAIT else 0
    total = sum(counts) + end
    if total == 0:
        raise ValueError(f"no legal action in phase {phase} (should not happen: C1/C2/O9)")
    r = rng.randrange(total)
    for kind, mask, n in zip(_KINDS, masks, counts):
        if r < n:
            return Action(seat, kind, nth_cell(mask, r))
        r -= n
    return Action(seat, ActionType.END_TURN)
