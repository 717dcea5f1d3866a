"""The window: a logical 390×844 canvas scaled to fit, with scrolling when the window is small (U4).

The canvas keeps its aspect ratio. When fitting the whole height would shrink it below
:data:`MIN_SCALE` of its design size (e.g. 320×568), it is fitted to the width instead (up to
that scale) and scrolls vertically. At scale 1 with no offset the canvas *is* the window
surface, so drawing costs nothing extra; otherwise only the dirty rectangles are scaled across.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pygame

LOGICAL_SIZE = (390, 844)
MIN_SCALE = 0.85
SCROLL_STEP = 64
TILE = (44, 44)  # the canvas is scaled to the window in tiles of this size (see Viewport.align_tiles)
MARGIN_COLOR = (11, 20, 34)  # the letterbox: palette.BACKGROUND_DEEP


@dataclass(frozen=True, slots=True)
class Mapping:
    """How the canvas sits in the window: ``scale``, top-left ``offset`` and vertical ``scroll``."""

    window: tuple[int, int]
    scale: float
    offset: tuple[int, int]
    max_scroll: int

    @classmethod
    def fit(cls, window: tuple[int, int], logical: tuple[int, int] = LOGICAL_SIZE) -> Mapping:
        w, h = max(1, window[0]), max(1, window[1])
        lw, lh = logical
        by_width, by_height = w / lw, h / lh
        scale = min(by_width, by_height)
        if scale < MIN_SCALE and by_width > by_height:
            scale = min(by_width, MIN_SCALE)  # too short: fit the width and scroll
        if abs(scale - 1.0) < 1e-9:
            scale = 1.0
        content_w, content_h = round(lw * scale), round(lh * scale)
        ox = max(0, (w - content_w) // 2)
        oy = max(0, (h - content_h) // 2)
        return cls((w, h), scale, (ox, oy), max(0, content_h - h))

    @property
    def identity(self) -> bool:
        return self.scale == 1.0 and self.offset == (0, 0) and self.max_scroll == 0

    def edge(self, v: float) -> int:
        """A logical coordinate's window coordinate before offset: the same rounding everywhere."""
        return math.floor(v * self.scale + 0.5)


class Viewport:
    """Owns the window surface and the canvas; maps coordinates; presents dirty rectangles."""

    def __init__(self, window: pygame.Surface, logical: tuple[int, int] = LOGICAL_SIZE) -> None:
        self.logical = logical
        self.scroll = 0
        self._window = window
        self.mapping = Mapping.fit(window.get_size(), logical)
        self.canvas = self._make_canvas()
        self._tile_origin = (0, 0)

    def align_tiles(self, origin: tuple[int, int]) -> None:
        """Put a tile corner on ``origin`` (the board's first cell): with 44 px tiles and the
        board's 44 px pitch, a changed cell is then exactly one tile to scale."""
        self._tile_origin = (origin[0] % TILE[0] - TILE[0], origin[1] % TILE[1] - TILE[1])

    def _make_canvas(self) -> pygame.Surface:
        if self.mapping.identity:
            return self._window
        return pygame.Surface(self.logical).convert() if pygame.display.get_surface() else pygame.Surface(self.logical)

    def resize(self, window: pygame.Surface) -> None:
        """The window changed size (or was re-created): remap, keep the canvas content."""
        old = self.canvas
        self._window = window
        self.mapping = Mapping.fit(window.get_size(), self.logical)
        self.scroll = min(self.scroll, self.mapping.max_scroll)
        canvas = self._make_canvas()
        if canvas is not old:
            canvas.blit(old, (0, 0))
        self.canvas = canvas

    @property
    def window(self) -> pygame.Surface:
        return self._window

    # ----- coordinates ---------------------------------------------------------------------
    def to_logical(self, pos: tuple[float, float]) -> tuple[float, float]:
        m = self.mapping
        return ((pos[0] - m.offset[0]) / m.scale, (pos[1] - m.offset[1] + self.scroll) / m.scale)

    def to_window_rect(self, rect: pygame.Rect) -> pygame.Rect:
        m = self.mapping
        x0, x1 = m.edge(rect.left), m.edge(rect.right)
        y0, y1 = m.edge(rect.top), m.edge(rect.bottom)
        return pygame.Rect(x0 + m.offset[0], y0 + m.offset[1] - self.scroll, x1 - x0, y1 - y0)

    def scroll_by(self, dy: float) -> bool:
        """Scroll the canvas by ``dy`` window pixels; True when it moved."""
        new = max(0, min(self.mapping.max_scroll, round(self.scroll + dy)))
        if new == self.scroll:
            return False
        self.scroll = new
        return True

    def ensure_visible(self, rect: pygame.Rect, margin: int = 12) -> bool:
        """Scroll so the logical ``rect`` is inside the window; True when it moved."""
        if not self.mapping.max_scroll:
            return False
        m = self.mapping
        top = m.edge(rect.top - margin) + m.offset[1]
        bottom = m.edge(rect.bottom + margin) + m.offset[1]
        h = m.window[1]
        if top < self.scroll:
            return self.scroll_by(top - self.scroll)
        if bottom > self.scroll + h:
            return self.scroll_by(bottom - (self.scroll + h))
        return False

    # ----- presenting -----------------------------------------------------------------------
    def present(self, areas: list[pygame.Rect] | None) -> list[pygame.Rect]:
        """Copy the canvas ``areas`` (all when ``None``) to the window; the window rects touched.

        When scaled, the canvas is cut into fixed tiles and every touched tile is scaled on its
        own, with a margin that is cut away again. A tile always comes out the same whether the
        whole frame or one cell changed, so partial updates never shift or seam against a full
        redraw (one big smoothscale samples differently from its pieces).
        """
        window = self._window
        full_canvas = pygame.Rect((0, 0), self.logical)
        if self.mapping.identity:
            return [full_canvas] if areas is None else [a.clip(full_canvas) for a in areas]
        if areas is None:
            window.fill(MARGIN_COLOR)
            tiles = self._tiles(full_canvas)
        else:
            tiles = sorted({t for area in areas for t in self._tiles(area.clip(full_canvas))})
        out = []
        ox, oy = self._tile_origin
        for tx, ty in tiles:
            tile = pygame.Rect(ox + tx * TILE[0], oy + ty * TILE[1], TILE[0], TILE[1]).clip(full_canvas)
            grown = tile.inflate(4, 4).clip(full_canvas)
            src = self.to_window_rect(grown)
            dest = self.to_window_rect(tile)
            if dest.width <= 0 or dest.height <= 0:
                continue
            scaled = pygame.transform.smoothscale(self.canvas.subsurface(grown), src.size)
            window.blit(scaled, dest, pygame.Rect(dest.x - src.x, dest.y - src.y, dest.width, dest.height))
            out.append(dest)
        return [window.get_rect()] if areas is None else out

    def _tiles(self, area: pygame.Rect) -> list[tuple[int, int]]:
        if area.width <= 0 or area.height <= 0:
            return []
        ox, oy = self._tile_origin
        return [
            (tx, ty)
            for tx in range((area.left - ox) // TILE[0], (area.right - 1 - ox) // TILE[0] + 1)
            for ty in range((area.top - oy) // TILE[1], (area.bottom - 1 - oy) // TILE[1] + 1)
        ]

    def canvas_copy(self) -> pygame.Surface:
        """The logical canvas as its own surface (screenshots, pixel tests)."""
        return self.canvas.copy() if self.canvas is not self._window else self._window.copy()

    @property
    def scale(self) -> float:
        return self.mapping.scale
