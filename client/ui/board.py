"""The 8×8 board: geometry, hit-testing, cell drawing and the small animations (B1–B4, V2).

It draws one seat's :class:`SeatView` and nothing else, so it cannot show what the seat may not
know. What it shows, and how meaning is carried by more than colour:

* a revealed cell keeps its first revealer's colour — blue for me, pink for the opponent — and
  the opponent's cells also carry a corner notch (B3); its number may change later (B4) and then
  pops briefly;
* the seat's own mines are always visible to it; markers show their owner by colour *and* shape
  (my pennant, the opponent's swallow-tail);
* cells the current input mode may act on are raised tiles; the rest are flat (U3);
* the opponent's last cell is ringed for a moment, and keyboard focus is an amber frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import FontBook
from mineduel.shared.rules.bitboard import CELLS, COLS, ROWS
from mineduel.shared.rules.views import SeatView

Invalidate = Callable[[pygame.Rect | None], None]

CELL = 41
GAP = 3
GUTTER = 16
PAD = 6
RADIUS = 7
NUMBER_SIZE = 23

REVEAL_TIME = 0.22
NUMBER_TIME = 0.7
HIGHLIGHT_TIME = 1.6


class BoardView:
    """Draws a seat view on the board card and maps points to cells."""

    def __init__(self, fonts: FontBook, invalidate: Invalidate, top: int, left: int = 6, width: int = 378) -> None:
        self.fonts = fonts
        self._invalidate = invalidate
        grid = ROWS * CELL + (ROWS - 1) * GAP
        height = PAD + GUTTER + grid + PAD + 1
        self.card = pygame.Rect(left, top, width, height)
        x0 = left + (width - (GUTTER + grid)) // 2 + GUTTER
        self.origin = (x0, top + PAD + GUTTER)
        self.grid = pygame.Rect(self.origin, (grid, grid))
        self._rects = [
            pygame.Rect(x0 + col * (CELL + GAP), self.origin[1] + row * (CELL + GAP), CELL, CELL)
            for row in range(ROWS)
            for col in range(COLS)
        ]
        self.view: SeatView | None = None
        self.actionable = 0
        self.mode = "explore"
        self.focus: int | None = None
        self.focus_visible = False
        self.hover: int | None = None
        self.ko_cell: int | None = None
        self.reveal_started: dict[int, float] = {}
        self.number_started: dict[int, float] = {}
        self.highlight: tuple[int, float] | None = None
        self._tiles: dict[str, pygame.Surface] = {}

    # ----- geometry -----------------------------------------------------------------------------
    def cell_rect(self, cell: int) -> pygame.Rect:
        return self._rects[cell].copy()

    def cells_in(self, area: pygame.Rect) -> list[int]:
        """The cells whose rectangle meets ``area`` (found by arithmetic, not by testing all 64)."""
        pitch = CELL + GAP
        x0, y0 = self.origin
        c0 = max(0, (area.left - x0) // pitch)
        c1 = min(COLS - 1, (area.right - 1 - x0) // pitch)
        r0 = max(0, (area.top - y0) // pitch)
        r1 = min(ROWS - 1, (area.bottom - 1 - y0) // pitch)
        return [r * COLS + c for r in range(r0, r1 + 1) for c in range(c0, c1 + 1) if self._rects[r * COLS + c].colliderect(area)]

    def cell_at(self, pos: tuple[float, float]) -> int | None:
        """The cell under ``pos``, counting half the gap around a cell as that cell."""
        x = pos[0] - self.origin[0] + GAP / 2
        y = pos[1] - self.origin[1] + GAP / 2
        pitch = CELL + GAP
        if x < 0 or y < 0:
            return None
        col, row = int(x // pitch), int(y // pitch)
        if 0 <= row < ROWS and 0 <= col < COLS:
            return row * COLS + col
        return None

    def cell_center(self, cell: int) -> tuple[int, int]:
        return self.cell_rect(cell).center

    def _dirty(self, cell: int, grow: int = 0) -> None:
        self._invalidate(self.cell_rect(cell).inflate(grow, grow))

    # ----- state ----------------------------------------------------------------------------------
    def set_view(self, view: SeatView, now: float, animate: bool = True) -> None:
        """Show ``view``; newly revealed cells and changed numbers animate."""
        old = self.view
        self.view = view
        if old is None:
            self._invalidate(self.card)
            return
        changed = (
            (old.revealed ^ view.revealed)
            | (old.my_mines ^ view.my_mines)
            | (old.my_markers ^ view.my_markers)
            | (old.opponent_markers ^ view.opponent_markers)
        )
        for cell in range(CELLS):
            b = 1 << cell
            if view.revealed & b and old.revealed & b and old.numbers[cell] != view.numbers[cell]:
                changed |= b
                if animate:
                    self.number_started[cell] = now
            elif view.revealed & b and not old.revealed & b and animate:
                self.reveal_started[cell] = now
            if changed & b:
                self._dirty(cell)

    def reset(self) -> None:
        """Forget the previous match's board state and animations."""
        self.view = None
        self.ko_cell = None
        self.reveal_started.clear()
        self.number_started.clear()
        self.highlight = None
        self.actionable = 0
        self.hover = None
        self._invalidate(self.card)

    def set_actionable(self, mask: int, mode: str) -> None:
        """Raise the cells the current mode may act on (U3); flat otherwise."""
        if mask == self.actionable and mode == self.mode:
            return
        diff = mask ^ self.actionable if mode == self.mode else mask | self.actionable
        self.actionable = mask
        self.mode = mode
        for cell in range(CELLS):
            if diff >> cell & 1:
                self._dirty(cell)
        if self.hover is not None:
            self._dirty(self.hover)

    def set_focus(self, cell: int | None, visible: bool) -> None:
        if cell == self.focus and visible == self.focus_visible:
            return
        for c in (self.focus, cell):
            if c is not None:
                self._dirty(c, 8)
        self.focus, self.focus_visible = cell, visible

    def set_hover(self, cell: int | None) -> None:
        if cell == self.hover:
            return
        for c in (self.hover, cell):
            if c is not None:
                self._dirty(c)
        self.hover = cell

    def set_highlight(self, cell: int | None, now: float) -> None:
        """Ring the opponent's last cell for a moment."""
        if self.highlight is not None:
            self._dirty(self.highlight[0], 8)
        self.highlight = None if cell is None else (cell, now)
        if cell is not None:
            self._dirty(cell, 8)

    def set_ko(self, cell: int | None) -> None:
        if self.ko_cell is not None:
            self._dirty(self.ko_cell)
        self.ko_cell = cell
        if cell is not None:
            self._dirty(cell)

    # ----- time -----------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        for store, length in ((self.reveal_started, REVEAL_TIME), (self.number_started, NUMBER_TIME)):
            for cell, start in list(store.items()):
                if now - start >= length:
                    del store[cell]
                self._dirty(cell)  # both animations stay inside the cell
        if self.highlight is not None:
            cell, start = self.highlight
            if now - start >= HIGHLIGHT_TIME:
                self.highlight = None
            self._dirty(cell, 8)

    def animating(self) -> bool:
        return bool(self.reveal_started or self.number_started or self.highlight)

    # ----- drawing --------------------------------------------------------------------------------
    def _tile(self, kind: str) -> pygame.Surface:
        tile = self._tiles.get(kind)
        if tile is not None:
            return tile
        size = (CELL, CELL)
        tile = pygame.Surface(size, pygame.SRCALPHA)
        if kind == "raised":
            tile.blit(shapes.rounded(size, RADIUS, palette.TILE_BEVEL), (0, 0))
            tile.blit(shapes.rounded((CELL, CELL - 3), RADIUS, palette.TILE, 1, palette.TILE_EDGE), (0, 0))
        elif kind == "idle":
            tile.blit(shapes.rounded(size, RADIUS, palette.TILE_IDLE, 1, palette.TILE_IDLE_EDGE), (0, 0))
        elif kind == "me":
            tile.blit(shapes.rounded(size, RADIUS, palette.ME_CELL, 1, palette.ME_CELL_EDGE), (0, 0))
        elif kind == "opp":
            tile.blit(shapes.rounded(size, RADIUS, palette.OPP_CELL, 1, palette.OPP_CELL_EDGE), (0, 0))
            # The notch: a corner triangle in the opponent's colour, cut to the tile's shape.
            notch = shapes.rounded(size, RADIUS, palette.OPP).copy()
            mask = pygame.Surface(size, pygame.SRCALPHA)
            pygame.draw.polygon(mask, (255, 255, 255, 255), [(CELL - 15, 0), (CELL, 0), (CELL, 15)])
            notch.blit(mask, (0, 0), special_flags=pygame.BLEND_RGBA_MULT)
            tile.blit(notch, (0, 0))
        self._tiles[kind] = tile
        return tile

    def draw(self, surface: pygame.Surface, area: pygame.Rect, now: float) -> None:
        if not self.card.colliderect(area):
            return
        self._draw_card(surface, area)
        view = self.view
        surface.fill(palette.BOARD, area.clip(self.grid.inflate(2, 2)))
        for cell in self.cells_in(area):
            self._draw_cell(surface, cell, self._rects[cell], view, now)
        # Overlays that may spill over a cell's edge.
        if self.highlight is not None:
            cell, start = self.highlight
            rect = self.cell_rect(cell).inflate(8, 8)
            if rect.colliderect(area):
                t = (now - start) / HIGHLIGHT_TIME
                pulse = 0.5 + 0.5 * math.cos(t * math.pi * 4)
                alpha = round(255 * (1 - t) * (0.55 + 0.45 * pulse))
                alpha = max(0, min(255, alpha)) // 16 * 16
                if alpha:
                    surface.blit(shapes.ring(rect.size, RADIUS + 4, (*palette.OPP, alpha), 3), rect)
        if self.focus is not None and self.focus_visible:
            rect = self.cell_rect(self.focus).inflate(6, 6)
            if rect.colliderect(area):
                surface.blit(shapes.ring(rect.size, RADIUS + 3, palette.FOCUS, 3), rect)

    def _draw_card(self, surface: pygame.Surface, area: pygame.Rect) -> None:
        surface.blit(shapes.rounded(self.card.size, 18, palette.BOARD), self.card)
        labels = pygame.Rect(self.card.left, self.card.top, self.card.width, PAD + GUTTER)
        side = pygame.Rect(self.card.left, self.card.top, self.origin[0] - self.card.left, self.card.height)
        if labels.colliderect(area) or side.colliderect(area):
            for i in range(8):
                x = self.origin[0] + i * (CELL + GAP) + CELL // 2
                y = self.origin[1] + i * (CELL + GAP) + CELL // 2
                digit = self.fonts.render(str(i + 1), 12, palette.INK_SOFT, True)
                surface.blit(digit, digit.get_rect(center=(x, self.origin[1] - GUTTER // 2 - 1)))
                surface.blit(digit, digit.get_rect(center=(self.origin[0] - GUTTER // 2 - 2, y)))

    def _draw_cell(self, surface: pygame.Surface, cell: int, rect: pygame.Rect, view: SeatView | None, now: float) -> None:
        b = 1 << cell
        if view is not None and view.revealed & b:
            mine_cell = bool(view.revealed_by_me & b)
            start = self.reveal_started.get(cell)
            if start is not None:
                t = min(1.0, (now - start) / REVEAL_TIME)
                surface.blit(self._tile("idle"), rect)
                ease = 1 - (1 - t) ** 2
                grown = rect.inflate(-round((1 - ease) * 16), -round((1 - ease) * 16))
                tile = self._tile("me" if mine_cell else "opp")
                surface.blit(pygame.transform.smoothscale(tile, grown.size), grown)
            else:
                surface.blit(self._tile("me" if mine_cell else "opp"), rect)
            self._draw_number(surface, cell, rect, view.numbers[cell], now)
            return
        actionable = bool(self.actionable & b)
        surface.blit(self._tile("raised" if actionable else "idle"), rect)
        lift = -1 if actionable else 0
        if view is None:
            return
        center = (rect.centerx, rect.centery + lift)
        if self.ko_cell == cell:
            burst = shapes.icon("burst", CELL - 4, palette.WARN)
            surface.blit(burst, burst.get_rect(center=center))
            color = palette.ME_LIGHT if view.my_mines & b else palette.MINE
            mine = shapes.icon("mine", 24, color)
            surface.blit(mine, mine.get_rect(center=center))
            return
        has_mine = bool(view.my_mines & b)
        marker = "flag" if view.my_markers & b else "flag_opponent" if view.opponent_markers & b else None
        if has_mine:
            size = 18 if marker else 25
            mine = shapes.icon("mine", size, palette.ME_LIGHT)
            where = (rect.right - size // 2 - 3, rect.bottom - size // 2 - 4) if marker else center
            surface.blit(mine, mine.get_rect(center=where))
        if marker is not None:
            color = palette.ME if marker == "flag" else palette.OPP
            flag = shapes.icon(marker, 28, color)
            where = (center[0] - (4 if has_mine else 0), center[1] - (3 if has_mine else 0))
            surface.blit(flag, flag.get_rect(center=where))
        if self.hover == cell and actionable:
            surface.blit(shapes.ring(rect.size, RADIUS, palette.HOVER, 2), rect)

    def _draw_number(self, surface: pygame.Surface, cell: int, rect: pygame.Rect, number: int, now: float) -> None:
        if number < 0:
            return
        ink = palette.NUMBER_INK[number]
        size = NUMBER_SIZE
        start = self.number_started.get(cell)
        if start is not None:
            t = min(1.0, (now - start) / NUMBER_TIME)
            glow_alpha = round(200 * (1 - t)) // 20 * 20
            if glow_alpha:
                surface.blit(shapes.ring(rect.size, RADIUS, (*palette.GLOW, glow_alpha), 3), rect)
            pop = max(0.0, 1 - t / 0.45)
            size = NUMBER_SIZE + round(9 * pop * pop)
        digit = self.fonts.render(str(number), size, ink, True)
        surface.blit(digit, digit.get_rect(center=(rect.centerx, rect.centery)))
