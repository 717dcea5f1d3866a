"""An ASCII board notation, so rule tests and debugging read like the board they describe.

Eight rows of eight space-separated tokens, row 0 on top (B1). Each token is two characters:

* a revealed cell: ``o`` (first revealed by seat 0) or ``x`` (seat 1), then its number
  ``0``–``8``, or ``?`` when writing a board by hand and not checking the number;
* an unrevealed cell: the mine part, then the marker part —
  mine ``.`` none, ``A`` seat 0's, ``B`` seat 1's, ``X`` both (an overlap);
  marker ``.`` none, ``a`` seat 0's, ``b`` seat 1's.

Example: ``A.`` seat 0's mine, ``Bb`` seat 1's mine under its own (bluff) marker,
``.a`` an empty cell marked by seat 0, ``o2`` a cell seat 0 revealed showing 2.
Lines that are empty or start with ``#`` are ignored. A number written in the board is
checked against the mines: a board whose numbers disagree is refused, which turns every
board literal in a test into an assertion about B4.
"""

from __future__ import annotations

from mineduel.shared.rules.bitboard import CELLS, COLS, ROWS
from mineduel.shared.rules.engine import GameState, Phase, Variant
from mineduel.shared.rules.views import SeatView

_MINE_CHARS = {".": (False, False), "A": (True, False), "B": (False, True), "X": (True, True)}
_MARKER_CHARS = {".": None, "a": 0, "b": 1}


def from_ascii(
    board: str,
    *,
    variant: Variant | str = Variant.CPU,
    phase: Phase | str = Phase.EXPLORE,
    to_move: int | None = 0,
    turn: int = 1,
    marker_used: bool = False,
) -> GameState:
    """Build a state from the notation plus the facts a board cannot show."""
    tokens = [
        token
        for line in board.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
        for token in line.split()
    ]
    if len(tokens) != CELLS:
        raise ValueError(f"a board has {CELLS} cells, this one has {len(tokens)}")
    state = GameState(variant)
    expected_numbers: dict[int, int] = {}
    for cell, token in enumerate(tokens):
        if len(token) != 2:
            raise ValueError(f"cell {divmod(cell, COLS)}: token {token!r} is not two characters")
        head, tail = token[0], token[1]
        b = 1 << cell
        if head in "ox":
            state.revealed |= b
            if head == "o":
                state.revealed_by0 |= b
            if tail != "?":
                if not tail.isdigit():
                    raise ValueError(f"cell {divmod(cell, COLS)}: {token!r} needs a number or '?'")
                expected_numbers[cell] = int(tail)
        elif head in _MINE_CHARS and tail in _MARKER_CHARS:
            mine0, mine1 = _MINE_CHARS[head]
            if mine0:
                state.mines[0] |= b
            if mine1:
                state.mines[1] |= b
            owner = _MARKER_CHARS[tail]
            if owner is not None:
                state.markers[owner] |= b
        else:
            raise ValueError(f"cell {divmod(cell, COLS)}: unknown token {token!r}")
    for cell, number in expected_numbers.items():
        actual = state.number(cell)
        if actual != number:
            raise ValueError(f"cell {divmod(cell, COLS)} is written {number} but its number is {actual}")
    state.phase = Phase(phase)
    state.to_move = to_move
    state.turn = turn
    state.marker_used = marker_used
    return state


def to_ascii(state: GameState) -> str:
    """The whole truth of ``state`` in the notation (numbers filled in)."""
    rows = []
    for row in range(ROWS):
        tokens = []
        for col in range(COLS):
            cell = row * COLS + col
            b = 1 << cell
            if state.revealed & b:
                head = "o" if state.revealed_by0 & b else "x"
                tokens.append(f"{head}{state.number(cell)}")
                continue
            mine0 = bool(state.mines[0] & b)
            mine1 = bool(state.mines[1] & b)
            head = "X" if mine0 and mine1 else "A" if mine0 else "B" if mine1 else "."
            tail = "a" if state.markers[0] & b else "b" if state.markers[1] & b else "."
            tokens.append(head + tail)
        rows.append(" ".join(tokens))
    return "\n".join(rows)


def view_to_ascii(view: SeatView) -> str:
    """What one seat saw (V2) in the notation: its own mines only, the numbers shown to it.

    A revealed cell's head says who revealed it (``revealed_by_me`` is all a view knows);
    an unrevealed cell's mine part is ``A`` (seat 0) or ``B`` (seat 1) only for the viewer's
    own mines — never ``X`` and never the opponent's letter, which a view cannot hold.
    """
    me, other = ("o", "x") if view.seat == 0 else ("x", "o")
    own_mine = "A" if view.seat == 0 else "B"
    own_marker, their_marker = ("a", "b") if view.seat == 0 else ("b", "a")
    rows = []
    for row in range(ROWS):
        tokens = []
        for col in range(COLS):
            cell = row * COLS + col
            b = 1 << cell
            if view.revealed & b:
                head = me if view.revealed_by_me & b else other
                tokens.append(f"{head}{view.numbers[cell]}")
                continue
            head = own_mine if view.my_mines & b else "."
            tail = own_marker if view.my_markers & b else their_marker if view.opponent_markers & b else "."
            tokens.append(head + tail)
        rows.append(" ".join(tokens))
    return "\n".join(rows)
