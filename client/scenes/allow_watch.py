"""*Let others watch*: the player's choice, where a room is created, whether others may watch it (issue 19).

PROTOCOL.md §16: a room created with ``"spectators":false`` refuses every ``spectate``
(``spectating_off``) for as long as it lives, rematches and restarts included. The choice is one
toggle row under *Host a game* (home page) and beside *Rated room* above *Create room* (server
page), on by default; both send what it says when the room is created (lobby_seats.py).

It is remembered (``Settings.allow_watch``, saved like the other settings; a kiosk starts each
player at its ``allow_watch`` key): it is a privacy choice, and a player who turned it off would
otherwise be watched again, unasked, in the next room. The waiting room says which way the room
went from the server's own word (``room.watchable``), so the joiner and a resumed host see it too.

The room's creator may change it in the waiting room, before the first match and between matches
(:func:`add_room_watch`: ``set_spectators``, §16): turned off, whoever watches is sent away and the
count goes to zero. That changes this room only; ``Settings.allow_watch`` stays the default for the
next one. A quick match sends the setting with its request (§17): its room is watchable only if
both players allow it, and neither can change that later, so its screens only say when it is off
(:func:`quick_watch_off`).
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


def hosts(lobby: OnlineScene) -> bool:
    """Whether this client created the room it sits in (``room_created`` in this session): only that
    seat may ``set_spectators`` (§16; the joiner and a quick room's players get ``not_host``)."""
    c = lobby.client
    return c is not None and c.room is not None and c.created is not None and c.created == c.room_code


def add_room_watch(lobby: OnlineScene, buttons: list[Button], y: int) -> int:
    """The waiting room's *Let others watch* for the room's creator, checked from the server's word
    (``room.watchable``); a tap asks the server to flip it. The ``y`` below it (``y`` if not the host)."""
    c = lobby.client
    if c is None or c.room is None or not hosts(lobby):
        return y
    t = lobby.ctx.t
    on = c.room.watchable
    buttons.append(Button(pygame.Rect(LEFT, y, INNER, ROW_H), lambda: t("watch.allow_toggle"),
                          lambda: c.requests.set_spectators(not on),
                          style="selected" if on else "secondary", icon="check" if on else "eye",
                          icon_color=None if on else palette.INK_FAINT, name="room_watch",
                          enabled=c.connected, text_size=15, layout="list"))
    return y + ROW_H + 10


def quick_watch_off(lobby: OnlineScene, matched_room: str | None) -> bool:
    """Whether a quick match's screen says *Watching off*: while searching, the player's own choice;
    once matched, the server's word for that room (off when either player asked for privacy)."""
    c = lobby.client
    if matched_room is None:
        return not lobby.ctx.settings.allow_watch
    room = None if c is None else c.room
    if room is not None and room.room == matched_room:
        return not room.watchable
    return not lobby.ctx.settings.allow_watch


def draw_off_pill(canvas: pygame.Surface, lobby: OnlineScene, *, right: int, y: int) -> None:
    """*Watching off* with the struck eye, right-aligned at ``(right, y)`` (the quick match's title row)."""
    fonts = lobby.ctx.fonts
    text = lobby.ctx.t("watch.allow_off")
    size = fonts.fit_size(text, 13, 150, True)
    r = blit_text(canvas, fonts, text, size, palette.INK_SOFT, bold=True, midright=(right, y))
    canvas.blit(shapes.icon("eye", 18, palette.INK_FAINT), (r.left - 22, y - 9))
    pygame.draw.line(canvas, palette.INK_SOFT, (r.left - 21, y + 7), (r.left - 7, y - 7), 2)


def say_watch_off(lobby: OnlineScene) -> None:
    """The struck eye of a LAN room that refuses spectators (§12 ``watchable``): why, without a connection."""
    lobby.local_notice = ("watch.off_here", {})
    lobby.relayout()


def strike_eye(canvas: pygame.Surface, rect: pygame.Rect) -> None:
    """A diagonal over an eye button's icon: nobody may watch there."""
    cx, cy = rect.center
    pygame.draw.line(canvas, palette.INK_SOFT, (cx - 9, cy + 9), (cx + 9, cy - 9), 2)


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
