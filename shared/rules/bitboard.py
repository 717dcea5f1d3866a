"""The 8×8 board as 64-bit integers (B1, B2).

Cell index ``i = row * 8 + col``; bit ``i`` of a mask is that cell. Every set the rules
talk about (revealed, mines, markers, S1–S3) is one ``int``, so a rule check is a handful
of ``&``/``|`` operations and a popcount instead of a loop over 64 cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

ROWS: Final = 8
COLS: Final = 8
CELLS: Final = ROWS * COLS
FULL: Final = (1 << CELLS) - 1

Cell = int
"""A cell index ``row * 8 + col`` (B1)."""

Mask = int
"""A set of cells: bit ``i`` is cell ``i``."""


def cell_of(row: int, col: int) -> Cell:
    """The index of ``(row, col)``; raises ``ValueError`` off the board (B1)."""
    if not (0 <= row < ROWS and 0 <= col < COLS):
        raise ValueError(f"cell ({row}, {col}) is off the 8x8 board")
    return row * COLS + col


def row_col(cell: Cell) -> tuple[int, int]:
    """``(row, col)`` of a cell index."""
    return divmod(cell, COLS)


def bit(cell: Cell) -> Mask:
    """The one-cell mask of ``cell``."""
    return 1 << cell


def _neighbours(cell: Cell) -> Mask:
    row, col = row_col(cell)
    mask = 0
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            r, c = row + dr, col + dc
            if (dr or dc) and 0 <= r < ROWS and 0 <= c < COLS:
                mask |= 1 << (r * COLS + c)
    return mask


NEIGHBOURS: Final[tuple[Mask, ...]] = tuple(_neighbours(c) for c in range(CELLS))
"""``NEIGHBOURS[i]``: the up-to-8 cells around cell ``i`` (B2: corner 3, edge 5, inside 8)."""


def popcount(mask: Mask) -> int:
    """Number of cells in ``mask``."""
    return mask.bit_count()


def cells(mask: Mask) -> Iterator[Cell]:
    """The cells of ``mask`` in ascending order (the canonical order of R2)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


_POP8: Final = tuple(b.bit_count() for b in range(256))
_SELECT8: Final = tuple(tuple(i for i in range(8) if b >> i & 1) for b in range(256))

BYTE_BITS: Final[tuple[tuple[int, ...], ...]] = _SELECT8
"""``BYTE_BITS[b]``: the set bits of byte ``b`` in ascending order, so a loop over a mask's
cells can walk it a row (8 cells) at a time without a generator step per cell."""


def nth_cell(mask: Mask, n: int) -> Cell:
    """The ``n``-th cell (0-based, ascending) of ``mask``; ``IndexError`` if there is none.

    Walks a byte at a time with lookup tables, so a uniform pick (R2) costs at most eight
    steps instead of one per cell.
    """
    if n < 0:
        raise IndexError(n)
    base = 0
    while mask:
        byte = mask & 0xFF
        count = _POP8[byte]
        if n < count:
            return base + _SELECT8[byte][n]
        n -= count
        mask >>= 8
        base += 8
    raise IndexError(n)


def mask_of(cell_list: Iterator[Cell] | list[Cell] | tuple[Cell, ...] | set[Cell]) -> Mask:
    """The mask holding exactly the given cells."""
    mask = 0
    for cell in cell_list:
        mask |= 1 << cell
    return mask


def neighbourhood(mask: Mask) -> Mask:
    """Every cell next to at least one cell of ``mask`` (cells of ``mask`` itself only if adjacent)."""
    out = 0
    for cell in cells(mask):
        out |= NEIGHBOURS[cell]
    return out
