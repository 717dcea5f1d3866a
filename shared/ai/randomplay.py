"""A uniformly random legal player, for property tests, benchmarks and load generators.

It picks uniformly among all legal actions of the seat to move (the same set as
``GameState.legal_actions``) without building that list: it counts each kind's cells with
popcounts and selects one cell with :func:`nth_cell`.
"""

from __future__ import annotations

import random

from mineduel.shared.rules.bitboard import FULL, nth_cell
from mineduel.shared.rules.engine import NORMAL_PHASES, Action, ActionType, GameState, Phase


def random_legal_action(state: GameState, rng: random.Random) -> Action:
    """One uniformly drawn legal action for the seat to move; ``ValueError`` when over."""
    seat = state.to_move
    if seat is None:
        raise ValueError("the match is over: no legal action")
    phase = state.phase
    if phase is Phase.EXPLORE or phase is Phase.OPEN_EXPLORE:
        main_kind = ActionType.EXPLORE
    elif phase is Phase.PLANT or phase is Phase.OPEN_PLANT:
        main_kind = ActionType.PLANT
    else:
        main_kind = None
    main_mask = state.explorable(seat) if main_kind is not None else 0
    flag_mask = unflag_mask = 0
    end = 0
    if phase in NORMAL_PHASES:
        if not state.marker_used:
            flag_mask = FULL & ~state.revealed & ~(state.markers[0] | state.markers[1])
        unflag_mask = state.markers[seat]
        end = 1 if phase is Phase.END_WAIT else 0
    n_main = main_mask.bit_count()
    n_flag = flag_mask.bit_count()
    n_unflag = unflag_mask.bit_count()
    total = n_main + n_flag + n_unflag + end
    if total == 0:
        raise ValueError(f"no legal action in phase {phase} (should not happen: C1/C2/O9)")
    r = rng.randrange(total)
    if r < n_main:
        return Action(seat, main_kind, nth_cell(main_mask, r))  # type: ignore[arg-type]
    r -= n_main
    if r < n_flag:
        return Action(seat, ActionType.FLAG, nth_cell(flag_mask, r))
    r -= n_flag
    if r < n_unflag:
        return Action(seat, ActionType.UNFLAG, nth_cell(unflag_mask, r))
    return Action(seat, ActionType.END_TURN)
