"""*Watch* on the online screen (issue 19): the lobby's ways into the spectator screen.

* the home page's one field (an invite link, ``host:port CODE``, a code a LAN server lists, or
  ``host:port`` alone — that server's page, which lists its live matches) has *Watch* beside *Join*;
* each waiting room the LAN scan lists has an eye button beside its row;
* a room seen through a link (the room page) offers *Watch* under *Join* — also when it is full,
  which is exactly when a friend's match is worth watching;
* the server page lists the server's live matches (``live_rooms``, PROTOCOL.md §16, asked on the
  lobby's own connection when the page shows, and by its refresh button), one tap each, and its
  code field has *Watch* beside *Join*;
* ``mine-duel --watch LINK`` opens the spectator screen straight away (client/cli.py, app.py).

Watching never takes a seat and needs no name: it opens the spectator screen
(:class:`~mineduel.client.scenes.spectate.SpectateScene`) on a connection of its own
(:class:`~mineduel.client.spectate_client.Watcher`); the lobby's own session is left as it was, and
Leave comes back to the same page.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

import pygame

from mineduel.client.errors import error_key
from mineduel.client.online_client import FoundServer, LanRoom
from mineduel.client.scenes.lobby_seats import as_code, is_link, read_join_input
from mineduel.client.scenes.spectate import SpectateScene, display_name
from mineduel.client.spectate_client import Watcher
from mineduel.client.ui import palette
from mineduel.client.ui.widgets import Button
from mineduel.shared.wire import codec, links
from mineduel.shared.wire.messages import LiveRoom, LiveRooms, LiveRoomsRequest, ServerMessage
from mineduel.shared.wire.names import ErrorCode

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

log = logging.getLogger(__name__)

__all__ = ["LIVE_ROWS", "WatchEntry"]

LIVE_ROWS = 4  # live matches the server page lists


class WatchEntry:
    """The lobby's Watch commands and the server page's live list (see the module docstring)."""

    def __init__(self, lobby: OnlineScene) -> None:
        self.lobby = lobby
        self.live: str = "idle"  # the live list: idle, asking, done or failed
        self.rooms: tuple[LiveRoom, ...] = ()
        self.error: str | None = None  # why the list failed (a catalog key)
        self.asked_on: object = None  # the connection it was asked on (a new one asks again)
        self.scene: SpectateScene | None = None
        self.entries: list[tuple[LiveRoom, pygame.Rect]] = []  # the server page's live rows, as laid out
        self.hidden = 0  # live matches the page had no room for

    # ----- opening the spectator screen ---------------------------------------------------------------
    def watch_at(self, host: str, port: int, code: str, *, tls: bool = False, pin: str | None = None) -> None:
        """Watch ``code`` on ``host:port``: the spectator screen over the lobby; Leave comes back here."""
        lobby = self.lobby
        services = lobby.services
        if services is None:
            return
        code = as_code(code) or ""
        if not code:
            self._say("online.bad_code")
            return
        lobby.local_notice = None
        watcher = Watcher(lambda: services.connect, lobby.ctx.clock, services.client_name)
        watcher.watch(host, port, code, tls=tls, pin=pin)
        scene = SpectateScene(lobby.ctx, watcher, on_leave=self._back)
        self.scene = scene
        lobby.ctx.stack.push(scene)

    def watch_link(self, text: str) -> None:
        """An invite link (``mine-duel --watch LINK`` too): watch its room; a link without one cannot be watched."""
        try:
            parsed = links.parse_link(text.strip())
        except ValueError:
            self._say("online.error.bad_link")
            return
        if parsed.code is None:
            self._say("watch.error.needs_code")
            return
        self.watch_at(parsed.host, parsed.port, parsed.code, tls=parsed.tls, pin=parsed.pin)

    def typed(self, text: str) -> None:
        """The home page's field, Watch pressed: read as Join reads it (lobby_seats.read_join_input)."""
        lobby = self.lobby
        wanted = read_join_input(text, lobby.found or [])
        if wanted.kind == "link":
            self.watch_link(text)
        elif wanted.kind == "join":
            server = wanted.server
            self.watch_at(wanted.host, wanted.port, wanted.code, tls=server.tls if server else False,
                          pin=server.pin if server else None)
        elif wanted.kind == "server":
            lobby.connect_to(wanted.host, wanted.port)  # its page lists the live matches
        elif wanted.kind == "needs_address":
            self._say("friend.code_needs_address")
        elif not text.strip():
            self._say("watch.error.needs_code")
        else:
            self._say("friend.bad_input")

    def code_typed(self, text: str) -> None:
        """The server page's field, Watch pressed: a code (or a link) on the connected server."""
        client = self.lobby.client
        text = text.strip()
        if is_link(text):
            self.watch_link(text)
            return
        code = as_code(text)
        if client is None or client.address is None:
            return
        if code is None:
            self._say("watch.error.needs_code" if not text else "online.bad_code")
            return
        self.watch_at(*client.address, code, tls=client.tls, pin=client.pin)

    def watch_listed(self, server: FoundServer, room: LanRoom) -> None:
        """The eye beside a LAN room's row."""
        self.watch_at(server.host, server.port, room.code, tls=server.tls, pin=server.pin)

    def watch_room_page(self) -> None:
        """The room page's Watch (a room seen through a link)."""
        client = self.lobby.client
        info = None if client is None else client.room_info
        if client is None or info is None or client.address is None:
            return
        self.watch_at(*client.address, info.room, tls=client.tls, pin=client.pin)

    def watch_live(self, room: LiveRoom) -> None:
        client = self.lobby.client
        if client is not None and client.address is not None:
            self.watch_at(*client.address, room.room, tls=client.tls, pin=client.pin)

    def _back(self) -> None:
        self.scene = None
        self.refresh()  # the list may have changed while watching

    def _say(self, key: str) -> None:
        self.lobby.local_notice = (key, {})
        self.lobby.relayout()

    # ----- the server page's live list ----------------------------------------------------------------------
    def live_rows(self) -> list[LiveRoom]:
        return list(self.rooms[:LIVE_ROWS]) if self.live == "done" else []

    def live_state(self) -> str:
        """``loading``, ``none``, ``rooms`` or ``failed`` (the server page's words for its list)."""
        if self.live in ("idle", "asking"):
            return "loading"
        if self.live == "failed":
            return "failed"
        return "rooms" if self.rooms else "none"

    def refresh(self, *, relayout: bool = True) -> None:
        """Ask the connected server which matches are live, on the lobby's own connection."""
        lobby = self.lobby
        client = lobby.client
        if client is None or not client.connected:
            return
        self.live, self.error = "asking", None
        self.asked_on = client.connection.link
        client.requests.send(lambda rid: LiveRoomsRequest(id=rid), on_ok=self._answered, on_error=self._refused)
        if relayout and lobby.page == "server":
            lobby.relayout()

    def _answered(self, msg: ServerMessage) -> None:
        if isinstance(msg, LiveRooms):
            self.rooms = tuple(r for r in msg.rooms if _is_code(r.room))
            self.live = "done"
        if self.lobby.page == "server":
            self.lobby.relayout()

    def _refused(self, code: str) -> None:
        self.live = "failed"
        self.error = "watch.live_unsupported" if code == ErrorCode.UNKNOWN_TYPE else error_key(code)
        if self.lobby.page == "server":
            self.lobby.relayout()

    def add_live_rows(self, buttons: list[Button], y: int) -> int:
        """The server page's live matches from ``y``: a refresh button, then a row each (or room for
        the words saying why none); the ``y`` below them. Asked once when the page shows a server."""
        lobby = self.lobby
        c = lobby.client
        if c is not None and c.connected and self.asked_on is not c.connection.link:
            self.refresh(relayout=False)
        left, inner = 8, 374
        lobby.ys["live_y"] = y
        buttons.append(Button(pygame.Rect(left + inner - 46, y - 6, 46, 44), lambda: "", self.refresh, style="ghost",
                              icon="restart", icon_color=palette.ME_LIGHT, radius=12, name="live_refresh"))
        y += 40
        self.entries = []
        self.hidden = 0
        bottom = 844 - 16 - 50 - 10  # above the page's Back button
        rows = self.live_rows()
        for n, live in enumerate(rows):
            if y + 48 > bottom:
                self.hidden = len(self.rooms) - n  # said beside the title ("2 more")
                break
            a, b = (display_name(live.players[0])[:12], display_name(live.players[1])[:12])
            label = lobby.ctx.t("watch.live_row", a=a, b=b)
            row = Button(pygame.Rect(left, y, inner, 48), partial(str, label), partial(self.watch_live, live), icon="eye",
                         icon_color=palette.ME_LIGHT, layout="list", text_size=15, name=f"live:{live.room}")
            buttons.append(row)
            self.entries.append((live, row.rect))
            y += 54
        else:
            self.hidden = max(0, len(self.rooms) - len(rows))
        if not self.entries:
            lobby.ys["live_empty_y"] = y
            y += 44
        return y

    def close(self) -> None:
        self.live, self.asked_on = "idle", None


def _is_code(text: str) -> bool:
    try:
        codec.room_code(text)
    except ValueError:
        return False
    return True
