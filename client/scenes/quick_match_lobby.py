"""The online screen's way to Quick match, the profile and the leaderboard (issue 20).

Which server: the one the player is connected to. On the server page (a server the player chose:
typed, found on the network or opened by a link), a server that knows players (PROTOCOL.md §17)
shows **Quick match** first and large, then *Profile* | *Leaderboard*; a server that answers
``identify`` with ``unknown_type`` (an older one) shows neither, and the page is as before. The
server of the last search is remembered (``quick-server.json`` beside the session token: address,
TLS and pin only), and the home page — where *Play with a friend* lands — offers *Quick match on
that server* at the top, one click to searching. Kept apart from the lobby scene, which stays
about its pages and the session.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygame

from mineduel.client.localfiles import NOTHING, flag, integer, read_json, text
from mineduel.client.ui import palette
from mineduel.client.ui.widgets import Button
from mineduel.shared.wire.links import normalise_pin

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

log = logging.getLogger(__name__)

LEFT, INNER = 8, 374
LAST_FILE = "quick-server.json"


@dataclass(frozen=True, slots=True)
class QuickServer:
    """Where the player last searched: enough to connect there again, nothing else."""

    host: str
    port: int
    tls: bool = False
    pin: str | None = None

    @property
    def label(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def load_last(folder: Path) -> QuickServer | None:
    """The remembered server, or ``None`` (none yet, or a file that makes no sense: logged)."""
    data = read_json(folder / LAST_FILE, "quick server")
    if data is NOTHING or not isinstance(data, dict):
        return None
    try:
        host = text(data, "host", limit=253)
        pin = data.get("pin")
        server = QuickServer(host, integer(data, "port", 1, 65535), flag(data, "tls", False),
                             None if pin is None else normalise_pin(text(data, "pin", limit=200)))
    except ValueError as exc:
        log.warning("quick server: %s is not usable (%s)", folder / LAST_FILE, exc)
        return None
    if not host or not all(ch.isprintable() and not ch.isspace() for ch in host):
        return None
    return server


def save_last(folder: Path, server: QuickServer) -> bool:
    """Remember ``server`` (atomically); ``False`` (logged) when the folder cannot be written."""
    payload = json.dumps({"version": 1, "host": server.host, "port": server.port, "tls": server.tls, "pin": server.pin})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".quick-server-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, folder / LAST_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.warning("quick server: cannot save %s (%s)", folder / LAST_FILE, exc)
        return False
    return True


def remember(lobby: OnlineScene) -> None:
    """A search begins here: the home page offers this server next time (not this client's own host)."""
    c = lobby.client
    if c is None or c.address is None or lobby.hosting is not None:
        return
    save_last(c.services.tokens.folder, QuickServer(c.address[0], c.address[1], c.tls, c.pin))


def add_home_quick(lobby: OnlineScene, buttons: list[Button], y: int) -> int:
    """The home page's *Quick match on <server>* (the last search's server) from ``y``; the next free ``y``."""
    c = lobby.client
    last = None if c is None or not lobby.tokens_ok else load_last(c.services.tokens.folder)
    if c is None or last is None:
        return y
    t = lobby.ctx.t
    label = last.label
    buttons.append(Button(pygame.Rect(LEFT, y, INNER, 54), lambda: t("quick.home", server=label),
                          lambda: quick_on(lobby, last), style="secondary", icon="online", icon_color=palette.PRIMARY,
                          name="quick_home", text_size=16))
    return y + 54 + 12


def quick_on(lobby: OnlineScene, server: QuickServer) -> None:
    """Connect to ``server``, then search there (the identity is asked for on the way, as always)."""
    c = lobby.client
    if c is None:
        return
    lobby.local_notice = None
    c.connect(server.host, server.port, then=lambda: open_quick(lobby), tls=server.tls, pin=server.pin)


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
    y += 48 + 40
    # The room to create: rated or not, the creator's choice (issue 20); rated needs an identity.
    rated = c.players.rated_room
    buttons.append(Button(pygame.Rect(LEFT, y, INNER, 44), lambda: t("quick.rated_room"), lambda: toggle_rated(lobby),
                          style="selected" if rated else "ghost", icon="check" if rated else None, name="rated_room",
                          enabled=c.players.identity is not None, text_size=15, layout="list"))
    return y + 44 + 10


def toggle_rated(lobby: OnlineScene) -> None:
    c = lobby.client
    if c is not None and c.players.identity is not None:
        c.players.rated_room = not c.players.rated_room
        lobby.relayout()


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
