"""The online screen's way to Quick match, the profile and the leaderboard (issue 20).

On the server page (connected to a server the player chose: typed, found on the network or
opened by a link), a server that knows players (PROTOCOL.md §17) shows **Quick match** first and
large, then *Profile* | *Leaderboard*; a server that answers ``identify`` with ``unknown_type`` (an
older one) shows neither, and the page is as before. Kept apart from the lobby scene, which stays
about its pages and the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.ui import palette
from mineduel.client.ui.widgets import Button

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

LEFT, INNER = 8, 374


def add_player_buttons(lobby: OnlineScene, buttons: list[Button], y: int) -> int:
    """Quick match (prominent) and the Profile | Leaderboard row from ``y``; the next free ``y``."""
    c = lobby.client
    if c is None or c.players.supported is False or not lobby.tokens_ok:
        return y
    t = lobby.ctx.t
    buttons.append(Button(pygame.Rect(LEFT, y, INNER, 64), lambda: t("quick.button"), lambda: open_quick(lobby),
                          style="primary", icon="online", name="quick", enabled=c.busy is None and c.connected,
                          text_size=20))
    y += 64 + 10
    half = (INNER - 10) // 2
    buttons.append(Button(pygame.Rect(LEFT, y, half, 48), lambda: t("profile.open"), lambda: open_profile(lobby),
                          icon="person", icon_color=palette.ME_LIGHT, name="profile",
                          enabled=c.players.identity is not None, text_size=15))
    buttons.append(Button(pygame.Rect(LEFT + half + 10, y, INNER - half - 10, 48), lambda: t("leaderboard.open"),
                          lambda: open_leaderboard(lobby), icon="trophy", icon_color=palette.PRIMARY, name="leaderboard",
                          enabled=c.connected, text_size=15))
    lobby.ys["quick_y"] = y + 48 + 8  # the painter's "or play with a friend" line
    return y + 48 + 40


def open_quick(lobby: OnlineScene) -> None:
    from mineduel.client.scenes.quick_match import QuickMatchScene

    scene = QuickMatchScene(lobby.ctx, lobby)
    lobby.ctx.stack.push(scene)
    scene.begin()


def open_profile(lobby: OnlineScene) -> None:
    from mineduel.client.scenes.profile import ProfileScene

    lobby.ctx.stack.push(ProfileScene(lobby.ctx, lobby))


def open_leaderboard(lobby: OnlineScene) -> None:
    from mineduel.client.scenes.leaderboard import LeaderboardScene

    lobby.ctx.stack.push(LeaderboardScene(lobby.ctx, lobby))


def reconnect_for_identity(lobby: OnlineScene) -> None:
    """A new identity on this computer (imported, or made over a damaged key): a new connection
    identifies with it (one identity per connection); a seat keeps its connection until it is left."""
    c = lobby.client
    if c is None or c.address is None or c.seated or c.match is not None:
        return
    c.connect(*c.address, tls=c.tls, pin=c.pin)
