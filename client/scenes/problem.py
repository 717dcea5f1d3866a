"""The screen shown when something failed inside a frame (issue 15): never a dead window.

:meth:`mineduel.client.app.App.frame` catches any exception escaping a scene's ``update``/``draw``,
an input handler or the online session's callbacks, logs it with its traceback, closes the online
connection (the server then counts the seat as dropped and keeps it for its grace, O12, instead of
hearing a frozen window answer pings) and replaces every scene with this one. It says that the
connection (online) or the game had a problem and offers:

* **Reconnect** (online only): the seat back with its saved token (``resume``, O12), or the same
  server again when no seat was held;
* **Back**: a fresh CPU game (its start popups: the menu of the CPU mode).

It draws with nothing but the drawing kit and the catalogs, and its content stays in the top 680
canvas pixels, so that a 320×568 window (width-fit, 692 canvas pixels visible) shows it all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.base import Context, Scene
from mineduel.client.tokens import SavedSession
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button, WidgetGroup

if TYPE_CHECKING:
    from mineduel.client.online_client import OnlineClient

W = 390
LEFT, INNER = 24, 342
ICON_Y = 120
TITLE_Y = 236
TEXT_Y = 272
TEXT_SIZE = 17


@dataclass(frozen=True, slots=True)
class ReconnectTo:
    """Where *Reconnect* goes: a seat to resume (``saved``), or else a server to connect to."""

    saved: SavedSession | None = None
    host: str = ""
    port: int = 0
    tls: bool = False
    pin: str | None = None


def reconnect_target(session: OnlineClient | None) -> ReconnectTo | None:
    """Where *Reconnect* should go for the session that was running: its seat if it held one (its
    token, as stored in ``online-session.json``), else the server it was connected to."""
    if session is None or session.address is None:
        return None
    host, port = session.address
    if session.room_code is not None and session.token is not None:
        return ReconnectTo(SavedSession(host, port, session.room_code, session.token, tls=session.tls, pin=session.pin))
    return ReconnectTo(None, host, port, session.tls, session.pin)


class ProblemScene(Scene):
    """See the module docstring. ``on_reconnect`` is ``None`` when there is nothing to reconnect to."""

    def __init__(self, ctx: Context, *, online: bool, on_back: Callable[[], None],
                 on_reconnect: Callable[[], None] | None = None) -> None:
        super().__init__(ctx)
        self.online = online
        self.on_back = on_back
        self.on_reconnect = on_reconnect
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.text_rect = pygame.Rect(LEFT, TEXT_Y, INNER, 0)
        self.relayout()

    @property
    def message_key(self) -> str:
        return "problem.online" if self.online else "problem.game"

    def relayout(self) -> None:
        """Lay out for the current language: the message's height decides where the buttons go."""
        t = self.ctx.t
        height = paragraph_height(self.ctx.fonts, t(self.message_key), TEXT_SIZE, INNER)
        self.text_rect = pygame.Rect(LEFT, TEXT_Y, INNER, height + 4)
        y = self.text_rect.bottom + 28
        buttons: list[Button] = []
        if self.on_reconnect is not None:
            buttons.append(Button(pygame.Rect(LEFT, y, INNER, 56), lambda: t("problem.reconnect"), self.on_reconnect,
                                  style="primary", icon="restart", name="reconnect", text_size=18))
            y += 56 + 12
        buttons.append(Button(pygame.Rect(LEFT, y, INNER, 52), lambda: t("action.back"), self.on_back,
                              style="ghost" if buttons else "primary", icon="back", name="back"))
        self.widgets.set(buttons)
        self.widgets.focus_name(buttons[0].name)
        self.ctx.invalidate(None)

    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            self.on_back()
            return True
        return self.widgets.handle(event)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        canvas.fill(palette.BACKGROUND, area)
        canvas.blit(shapes.circle(96, palette.CARD_RAISED), (W // 2 - 48, ICON_Y - 48))
        canvas.blit(shapes.icon("warning", 52, palette.WARN), (W // 2 - 26, ICON_Y - 26))
        title = ctx.t("problem.title")
        size = ctx.fonts.fit_size(title, 24, INNER, True)
        blit_text(canvas, ctx.fonts, title, size, palette.INK, bold=True, center=(W // 2, TITLE_Y))
        blit_paragraph(canvas, ctx.fonts, ctx.t(self.message_key), TEXT_SIZE, palette.INK_SOFT, self.text_rect,
                       align="center")
        self.widgets.draw(canvas, ctx.fonts, area)
