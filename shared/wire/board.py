"""A seat's board on the wire (docs/PROTOCOL.md §5 ``state``, ``match_end``), both ways.

Built only from a :class:`~mineduel.shared.rules.views.SeatView` or, after the end, a
:class:`~mineduel.shared.rules.views.FinalReveal`: a view has no field that could hold the
opponent's mines (V2, V4), so the filter is the type. Read back into a ``SeatView`` by bots
and the game client.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from mineduel.shared.rules.bitboard import CELLS, COLS
from mineduel.shared.rules.engine import Outcome, Phase, Reason, Variant
from mineduel.shared.rules.views import FinalReveal, SeatView, seat_result
from mineduel.shared.wire.messages import Board, Result, Reveal, Scores, SpectateBoard, State

# Board layers ------------------------------------------------------------------------------
# The server builds two ``state`` messages after every accepted action, so a layer is not
# spelled cell by cell: each row of 8 cells is one byte of a mask, and a table built once here
# turns the byte (or a pair of bytes, as a base-3 number) into the row's 8-character string.
# The strings are shared, not built per message. benchmarks/bench_views.py measures this
# against the per-cell loops it replaced; tests/shared/test_views_fast.py checks the two agree.

_ROW_SLICES = tuple(slice(s, s + COLS) for s in range(0, CELLS, COLS))


def _spelled_rows(symbols: str) -> tuple[str, ...]:
    """Entry ``i``: the row whose cell ``k`` is ``symbols[digit k of i]`` in base ``len(symbols)``."""
    rows = [""]
    for _ in range(COLS):  # cell k appended: its digit is worth len(rows) == base**k
        rows = [row + symbol for symbol in symbols for row in rows]
    return tuple(rows)


_ROW_X = _spelled_rows(".x")
"""256 rows: ``x`` where the byte has a bit."""

_ROW_MO = _spelled_rows(".om")
"""6561 rows (3**8, about 0.4 MB): base-3 digit 2 ``m``, 1 ``o``, 0 ``.``."""

def _byte_sums(weights: list[int]) -> tuple[int, ...]:
    """Entry ``byte``: the sum of ``weights[i]`` over the bits ``i`` of ``byte``."""
    sums = [0]
    for weight in weights:  # bit i added: the entries with it are the second half
        sums += [v + weight for v in sums]
    return tuple(sums)


_BASE3 = _byte_sums([3**i for i in range(COLS)])
"""A byte read as base-3 digits: bit ``i`` becomes digit ``i`` = 1."""

_BASE3_TWICE = tuple(2 * v for v in _BASE3)


def _rows(text: str) -> list[str]:
    """A 64-character string, cell 0 first, cut into its 8 rows."""
    return list(map(text.__getitem__, _ROW_SLICES))


def _layer(mask: int) -> list[str]:
    """The rows of one mask: ``x`` on its cells, ``.`` elsewhere."""
    x = _ROW_X
    return [
        x[mask & 255], x[mask >> 8 & 255], x[mask >> 16 & 255], x[mask >> 24 & 255],
        x[mask >> 32 & 255], x[mask >> 40 & 255], x[mask >> 48 & 255], x[mask >> 56 & 255],
    ]


def _mo_layer(m: int, o: int) -> list[str]:
    """The rows of two disjoint masks: ``m`` on the cells of ``m``, ``o`` on those of ``o``.

    Row ``r`` is entry ``2 * base3(byte r of m) + base3(byte r of o)`` of :data:`_ROW_MO`
    (written out: a comprehension over the 8 rows costs a third more).
    """
    row, m3, o3 = _ROW_MO, _BASE3_TWICE, _BASE3
    return [
        row[m3[m & 255] + o3[o & 255]], row[m3[m >> 8 & 255] + o3[o >> 8 & 255]],
        row[m3[m >> 16 & 255] + o3[o >> 16 & 255]], row[m3[m >> 24 & 255] + o3[o >> 24 & 255]],
        row[m3[m >> 32 & 255] + o3[o >> 32 & 255]], row[m3[m >> 40 & 255] + o3[o >> 40 & 255]],
        row[m3[m >> 48 & 255] + o3[o >> 48 & 255]], row[m3[m >> 56 & 255] + o3[o >> 56 & 255]],
    ]


_NUMBER_BYTES = struct.Struct(f"{CELLS}b")
_NUMBER_CHARS = bytes.maketrans(bytes(range(256)), b"0123456789" + bytes(range(10, 128)) + b"." * 128)
"""Byte ``n`` (0-9) to the digit ``n``, a negative byte (-1 closed) to ``.``."""

_numbers_memo: tuple[tuple[int, ...], list[str]] = ((), [])
"""The last ``numbers`` and their rows: the other seat's view, and every action that opens no
cell and plants no mine, have the same numbers (compared by value, so it is only a cache)."""


def _number_rows(numbers: tuple[int, ...]) -> list[str]:
    """``.`` for a closed cell (``-1``), the digit of an open one; a fresh list each call."""
    global _numbers_memo
    memo = _numbers_memo
    # ``is`` first: the engine hands both seats' views the same tuple (its own memo), and
    # comparing 64 items twice per action costs more than this whole hit.
    if numbers is memo[0] or numbers == memo[0]:
        return memo[1].copy()
    text = _NUMBER_BYTES.pack(*numbers).translate(_NUMBER_CHARS).decode("ascii")
    rows = list(map(text.__getitem__, _ROW_SLICES))
    _numbers_memo = (tuple(numbers), rows)
    return rows.copy()


def board_of(view: SeatView) -> Board:
    """The seat-relative board: four layers of 8 strings of 8 characters (row 0 first).

    ``numbers`` ``.`` closed, ``0``–``8`` open (B4); ``opened_by`` ``m`` me / ``o`` opponent
    (B3); ``markers`` ``m`` mine / ``o`` the opponent's; ``my_mines`` ``x`` my own mines.
    """
    revealed = view.revealed
    by_me = view.revealed_by_me & revealed
    mine = view.my_markers
    return Board(
        _number_rows(view.numbers),
        _mo_layer(by_me, revealed & ~by_me),
        _mo_layer(mine, view.opponent_markers & ~mine),
        _layer(view.my_mines),
    )


def spectator_board(view: SeatView) -> SpectateBoard:
    """The public board a spectator sees (PROTOCOL.md §16), from seat 0's view minus its mines.

    ``m`` is seat 0, ``o`` seat 1 (seat 0's spelling); ``view.my_mines`` is never read, and
    the numbers of open cells and the markers are public (B3, B4).
    """
    if view.seat != 0:
        raise ValueError("a spectator's board is spelled from seat 0's view")
    revealed = view.revealed
    by_zero = view.revealed_by_me & revealed
    zero = view.my_markers
    return SpectateBoard(
        _number_rows(view.numbers),
        _mo_layer(by_zero, revealed & ~by_zero),
        _mo_layer(zero, view.opponent_markers & ~zero),
    )


def result_of(outcome: Outcome, me: int) -> Result:
    """The seat-relative result the server sends (C4, O9–O12), from the engine's one rule.

    The server's ``state.result`` and ``match_end.result``, and what a verifier recomputes from a
    record to compare with what a player was shown (``fairness.verify``'s ``end_shown``).
    """
    seen = seat_result(outcome, me)
    scores = seen.scores
    return Result(
        seen.outcome._value_,
        seen.winner,
        seen.reason._value_, None if scores is None else Scores(scores[0], scores[1]),
    )


def reveal_of(reveal: FinalReveal, me: int) -> Reveal:
    """O13, seat-relative: every mine with its owner, overlaps, each marker right or wrong.

    Sent once per seat at the end of a match. ``markers`` is spelled like the board's; the
    other two layers are octal digits (one per cell, see :func:`_octal`) and ``str.translate``.
    """
    op = 1 - me
    mine_me, mine_op = reveal.mines[me], reveal.mines[op]
    marker_me = reveal.markers[me]
    marker_op = reveal.markers[op] & ~marker_me  # a cell shows its own seat's marker first
    marked = marker_me | marker_op
    right = (marker_me & reveal.correct_markers[me]) | (marker_op & reveal.correct_markers[op])
    return Reveal(
        _rows(format(_octal(mine_me) + 2 * _octal(mine_op), "064o").translate(_MINE_DIGITS)),
        _mo_layer(marker_me, marker_op),
        _rows(format(_octal(marked) + _octal(right), "064o").translate(_CORRECT_DIGITS)),
        list(divmod(reveal.ko_cell, COLS)) if reveal.ko_cell is not None else None,
    )


_REVERSED_OCTAL = _byte_sums([1 << 3 * (COLS - 1 - i) for i in range(COLS)])
_MINE_DIGITS = str.maketrans("0123", ".mox")
_CORRECT_DIGITS = str.maketrans("012", ".ny")


def _octal(mask: int) -> int:
    """``mask`` with cell ``c`` as octal digit ``63 - c``: ``format(.., "064o")`` lists cell 0 first."""
    t = _REVERSED_OCTAL
    return (
        t[mask & 255] << 168 | t[mask >> 8 & 255] << 144 | t[mask >> 16 & 255] << 120
        | t[mask >> 24 & 255] << 96 | t[mask >> 32 & 255] << 72 | t[mask >> 40 & 255] << 48
        | t[mask >> 48 & 255] << 24 | t[mask >> 56 & 255]
    )


# Reading server messages (client side) ----------------------------------------------------


_BITS_OF: dict[str, dict[int, int]] = {}
"""Per set of characters, the ``str.translate`` table that spells a layer as bits ('1' where set)."""


def mask_of(rows: Sequence[str], chars: str) -> int:
    """The cells of a layer holding one of ``chars`` (cell 0 is the first character of row 0).

    The 64 characters become '0'/'1' through one ``translate`` and are read as a base-2 number,
    reversed so that cell 0 is the lowest bit: no Python loop per cell (bots and the client read
    every ``state``). Rows must be 8 characters each (``messages.Board.parse`` checks that).
    """
    table = _BITS_OF.get(chars)
    if table is None:
        table = _BITS_OF[chars] = {c: ord("1") if chr(c) in chars else ord("0") for c in range(128)}
    bits = "".join(rows).translate(table)
    return int(bits[::-1], 2) if bits else 0


_NUMBER_OF = {ord("."): None}


def numbers_of(rows: Sequence[str]) -> tuple[int, ...]:
    """The ``numbers`` layer as the engine's per-cell tuple: ``-1`` closed, ``0``-``8`` open (B4)."""
    return tuple(-1 if ch == "." else ord(ch) - 48 for ch in "".join(rows))


def outcome_of(result: Result, me: int) -> Outcome:
    """A seat-relative result back in record seats (the inverse of ``seat_result``)."""
    winner = None if result.winner is None else (me if result.winner == "me" else 1 - me)
    scores = None
    if result.scores is not None:
        mine, theirs = result.scores.me, result.scores.opponent
        scores = (mine, theirs) if me == 0 else (theirs, mine)
    return Outcome(winner, Reason(result.reason), scores)


def view_of(state: State) -> SeatView:
    """Rebuild the engine's :class:`SeatView` from a ``state`` message (bots, the CPU AI, the client)."""
    me = state.seat
    board = state.board
    to_move = state.to_move
    return SeatView(
        seat=me,
        variant=Variant.ONLINE,
        phase=Phase(state.phase),
        to_move=None if to_move is None else (me if to_move == "me" else 1 - me),
        turn=state.turn,
        revealed=mask_of(board.numbers, "012345678"),
        revealed_by_me=mask_of(board.opened_by, "m"),
        numbers=numbers_of(board.numbers),
        my_mines=mask_of(board.my_mines, "x"),
        my_markers=mask_of(board.markers, "m"),
        opponent_markers=mask_of(board.markers, "o"),
        quota_left=state.quota_left,
        outcome=None if state.result is None else outcome_of(state.result, me),
        deadline=None if state.deadline is None else state.deadline.at,
    )
