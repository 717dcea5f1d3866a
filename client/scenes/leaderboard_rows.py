"""A scrolling list of rows drawn by its screen (issue 20: the leaderboard's top 100, a profile's
recent matches): the wheel, a finger or mouse drag (a press that moves 8 px becomes a drag and taps
nothing), PageUp/PageDown/Home/End and the arrows; a tap on a row names it. Rows are drawn, not
buttons, so 100 of them cost nothing until they are in view; a fade at each edge with more, and
a thin bar, say that there is more. :class:`RowsScene` is what the two screens showing such a list
share: the way back, the failed-session exit, the rebuild when the session's answer changes and the
keys that scroll the list."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pygame

from mineduel.client.online_client import Conn
from mineduel.client.player_session import PlayerSession
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, WheelEvent
from mineduel.client.ui.widgets import WidgetGroup

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

SCROLL_KEYS = frozenset({pygame.K_UP, pygame.K_DOWN, pygame.K_PAGEUP, pygame.K_PAGEDOWN, pygame.K_HOME, pygame.K_END})
SLOP = 8  # canvas pixels a press moves before it becomes a drag
WHEEL_STEP = 48


class ScrollRows:
    """``count`` rows of ``row_h`` pixels (``gap`` between) shown in ``rect``, scrolled by ``offset``."""

    def __init__(self, rect: pygame.Rect, row_h: int, *, gap: int = 4, on_tap: Callable[[int], None] | None = None,
                 invalidate: Callable[[pygame.Rect | None], None] = lambda rect: None) -> None:
        self.rect = rect
        self.row_h = row_h
        self.gap = gap
        self.count = 0
        self.offset = 0
        self.on_tap = on_tap
        self.invalidate = invalidate
        self._press: tuple[float, float] | None = None
        self._start_offset = 0
        self._dragging = False

    @property
    def step(self) -> int:
        return self.row_h + self.gap

    def limit(self) -> int:
        return max(0, self.count * self.step - self.gap - self.rect.height)

    def scroll_to(self, offset: int) -> bool:
        offset = max(0, min(self.limit(), int(offset)))
        if offset == self.offset:
            return False
        self.offset = offset
        self.invalidate(self.rect)
        return True

    def row_rect(self, index: int) -> pygame.Rect:
        """Where row ``index`` is drawn now (it may be outside ``rect``)."""
        return pygame.Rect(self.rect.left, self.rect.top + index * self.step - self.offset, self.rect.width, self.row_h)

    def visible(self) -> range:
        first = max(0, self.offset // self.step)
        last = min(self.count, (self.offset + self.rect.height) // self.step + 1)
        return range(first, last)

    def row_at(self, pos: tuple[float, float]) -> int | None:
        if not self.rect.collidepoint(pos):
            return None
        index = int((pos[1] - self.rect.top + self.offset) // self.step)
        if 0 <= index < self.count and self.row_rect(index).collidepoint(pos):
            return index
        return None

    def handle(self, event: InputEvent) -> bool:
        """Scroll or tap; ``True`` when the event was the list's."""
        if isinstance(event, WheelEvent):
            if self.rect.collidepoint(event.pos):
                self.scroll_to(self.offset - int(event.dy * WHEEL_STEP))
                return True
            return False
        if isinstance(event, PointerEvent):
            if event.kind is PointerKind.DOWN and self.rect.collidepoint(event.pos):
                self._press, self._start_offset, self._dragging = event.pos, self.offset, False
                return True
            if self._press is None:
                return False
            if event.kind is PointerKind.MOVE and event.pressed:
                dy = event.pos[1] - self._press[1]
                if abs(dy) >= SLOP:
                    self._dragging = True
                if self._dragging:
                    self.scroll_to(self._start_offset - int(dy))
                return True
            if event.kind in (PointerKind.UP, PointerKind.CANCEL):
                tapped = None if self._dragging or event.kind is PointerKind.CANCEL else self.row_at(event.pos)
                self._press = None
                self._dragging = False
                if tapped is not None and self.on_tap is not None:
                    self.on_tap(tapped)
                return True
            return False
        if isinstance(event, KeyEvent):
            page = max(self.step, self.rect.height - self.step)
            moves = {pygame.K_PAGEDOWN: page, pygame.K_PAGEUP: -page, pygame.K_DOWN: self.step, pygame.K_UP: -self.step}
            if event.key in moves:
                self.scroll_to(self.offset + moves[event.key])
                return True
            if event.key == pygame.K_HOME:
                self.scroll_to(0)
                return True
            if event.key == pygame.K_END:
                self.scroll_to(self.limit())
                return True
        return False

    def draw(self, canvas: pygame.Surface, draw_row: Callable[[pygame.Surface, int, pygame.Rect], None]) -> None:
        """Each row in view through ``draw_row(canvas, index, rect)``, clipped; the edge fades and the bar."""
        old = canvas.get_clip()
        canvas.set_clip(self.rect.clip(old) if old.width else self.rect)
        try:
            for index in self.visible():
                draw_row(canvas, index, self.row_rect(index))
            if self.offset > 0:
                canvas.blit(_fade(self.rect.width, True), self.rect.topleft)
            if self.offset < self.limit():
                canvas.blit(_fade(self.rect.width, False), (self.rect.left, self.rect.bottom - 18))
        finally:
            canvas.set_clip(old)
        if self.limit() > 0:
            total = self.count * self.step - self.gap
            h = max(24, self.rect.height * self.rect.height // total)
            y = self.rect.top + (self.rect.height - h) * self.offset // self.limit()
            bar = pygame.Rect(self.rect.right - 3, y, 3, h)
            canvas.blit(shapes.rounded(bar.size, 2, palette.INK_FAINT), bar)


def _fade(width: int, top: bool) -> pygame.Surface:
    """18 px from the background colour to transparent, towards the list."""
    surface = pygame.Surface((width, 18), pygame.SRCALPHA)
    for y in range(18):
        alpha = int(230 * (1 - y / 18)) if top else int(230 * (y / 18))
        surface.fill((*palette.BACKGROUND, alpha), pygame.Rect(0, y, width, 1))
    return surface


class RowsScene(Scene):
    """A players' screen over the lobby's session with a :class:`ScrollRows` list (the leaderboard, a
    profile). Subclasses set ``rows`` and say what they show (``_state``), how they lay it out
    (``_rebuild``) and what they ask the server (``refresh``)."""

    rows: ScrollRows

    def __init__(self, ctx: Context, lobby: OnlineScene) -> None:
        super().__init__(ctx)
        self.lobby = lobby
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self._seen: object = None

    @property
    def players(self) -> PlayerSession | None:
        client = self.lobby.client
        return None if client is None else client.players

    def enter(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        raise NotImplementedError

    def back(self) -> None:
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()

    def _state(self) -> object:
        """What the screen shows of the session: a change rebuilds it."""
        raise NotImplementedError

    def _rebuild(self) -> None:
        raise NotImplementedError

    def relayout(self) -> None:
        self._rebuild()

    def update(self, now: float) -> None:
        client = self.lobby.client
        if (client is None or client.conn == Conn.FAILED) and self.ctx.stack.top is self and self.ctx.stack.popup is None:
            self.back()  # the lobby's error page says why (a broken answer, a lost server), with Retry
            return
        if self._state() != self._seen:
            self._rebuild()

    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            self.back()
            return True
        if isinstance(event, KeyEvent) and event.key in SCROLL_KEYS:  # the list's, not the buttons' focus (Tab is)
            return self.rows.handle(event)
        if self.widgets.handle(event):
            return True
        return self.rows.handle(event)
