"""Small builders shared by the rule tests: cells by (row, col) and actions by name."""

from __future__ import annotations

from mineduel.shared.rules.bitboard import cell_of
from mineduel.shared.rules.engine import Action, ActionType

at = cell_of
"""The cell index of ``(row, col)`` (B1), refusing cells off the board."""


def act(seat: int, kind: str, row: int | None = None, col: int | None = None) -> Action:
    """An action of ``kind`` (a record ``type`` name) by ``seat``, on ``(row, col)`` if given."""
    cell = None if row is None or col is None else at(row, col)
    return Action(seat, ActionType(kind), cell)
