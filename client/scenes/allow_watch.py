"""*Let others watch*: the player's choice, where a room is created, whether others may watch it (issue 19).

PROTOCOL.md §16: a room created with ``"spectators":false`` refuses every ``spectate``
(``spectating_off``) for as long as it lives, rematches and restarts included. The choice is one
toggle row under *Host a game* (home page) and beside *Rated room* above *Create room* (server
page), on by default; both send what it says when the room is created (lobby_seats.py).

It is remembered (``Settings.allow_watch``, saved like the other settings; a kiosk starts each
player at its ``allow_watch`` key): it is a privacy choice, and a player who turned it off would
otherwise be watched again, unasked, in the next room. The waiting room says which way the room
went from the server's own word (``room.watchable``), so the joiner and a resumed host see it too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_text
from mineduel.client.ui.widgets import Button

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

LEFT, INNER = 8, 374
ROW_H = 44


def add_allow_watch(lobby: OnlineScene, buttons: list[Button], y: int, *, gap: int = 10) -> int:
    """The toggle row at ``y`` (checked: others may watch); the ``y`` below it."""
    t = lobby.ctx.t
    on = lobby.ctx.settings.allow_watch
    buttons.append(Button(pygame.Rect(LEFT, y, INNER, ROW_H), lambda: t("watch.allow_toggle"), lambda: toggle(lobby),
                          style="selected" if on else "secondary", icon="check" if on else "eye",
                          icon_color=None if on else palette.INK_FAINT, name="allow_watch",
                          enabled=lobby.client is not None, text_size=15, layout="list"))
    return y + ROW_H + gap


def toggle(lobby: OnlineScene) -> None:
    """Flip the choice and keep it (a kiosk keeps it for this player only: ``Allowed.save_settings``)."""
    settings = lobby.ctx.settings
    lobby.ctx.save_settings(replace(settings, allow_watch=not settings.allow_watch))
    lobby.relayout()


def watch_state(lobby: OnlineScene) -> tuple[str, bool] | None:
    """The waiting room's words beside the invite link, and whether anyone watches now (``None``: no room yet).

    From the server's ``room`` (§16: ``watchable``, ``spectators``), never from what this client asked:
    the joiner and a host who resumed the seat see the same as the host who chose."""
    c = lobby.client
    room = None if c is None else c.room
    if room is None:
        return None
    t = lobby.ctx.t
    if not room.watchable:
        return t("watch.allow_off"), False
    if room.spectators:
        return t("watch.spectators", count=room.spectators), True
    return t("watch.allow_on"), False


def draw_watch_state(canvas: pygame.Surface, lobby: OnlineScene, *, right: int, y: int, width: int) -> None:
    """:func:`watch_state` right-aligned at ``(right, y)`` within ``width``, after an eye (struck through when off)."""
    state = watch_state(lobby)
    if state is None:
        return
    text, watched = state
    c = lobby.client
    off = c is not None and c.room is not None and not c.room.watchable
    fonts = lobby.ctx.fonts
    size = fonts.fit_size(text, 13, width - 22, True)
    r = blit_text(canvas, fonts, text, size, palette.ME_LIGHT if watched else palette.INK_SOFT, bold=True, midright=(right, y))
    canvas.blit(shapes.icon("eye", 18, palette.ME_LIGHT if watched else palette.INK_FAINT), (r.left - 22, y - 9))
    if off:  # the eye struck through: nobody may watch this room
        pygame.draw.line(canvas, palette.INK_SOFT, (r.left - 21, y + 7), (r.left - 7, y - 7), 2)
