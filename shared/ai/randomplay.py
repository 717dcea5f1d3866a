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


def random_legal_action(state: GameState, rng: random.Random) -> Action:
    """One uniformly drawn legal action for the seat to move; ``ValueError`` when over."""
    seat = state.to_move
    if seat is None:
        raise ValueError("the match is over: no legal action")
    phase = state.phase
    markers = state.markers
    quota_left = 0 if state.marker_used else 1  # = state.quota_left wherever targets_of reads it
    explore, plant, flag, unflag = targets_of(
        phase, state.revealed, state.mines[seat], markers[seat], markers[1 - seat], quota_left
    )
    main, main_kind = (explore, ActionType.EXPLORE) if explore else (plant, ActionType.PLANT)
    n_main = main.bit_count()
    n_flag = flag.bit_count()
    n_unflag = unflag.bit_count()
    total = n_main + n_flag + n_unflag + (phase is Phase.END_WAIT)
    if total == 0:
        raise ValueError(f"no legal action in phase {phase} (should not happen: C1/C2/O9)")
    r = rng.randrange(total)
    if r < n_main:
        return Action(seat, main_kind, nth_cell(main, r))
    r -= n_main
    if r < n_flag:
        return Action(seat, ActionType.FLAG, nth_cell(flag, r))
    r -= n_flag
    if r < n_unflag:
        return Action(seat, ActionType.UNFLAG, nth_cell(unflag, r))
    return Action(seat, ActionType.END_TURN)
