"""The online screen: connect, host, find, create or join a room, and the waiting room (O1–O3, U5).

One scene with pages chosen from the :class:`~mineduel.client.online_client.OnlineClient`'s state:

* **home** — where *Play with a friend* lands (issue 16: two clicks to a friend): *Host a game*
  (a server inside this client; one click seats the player in a listed room), the rooms waiting for
  a player on this network (UDP discovery, scanned when the page opens and every
  :data:`SCAN_EVERY` seconds; one click joins), *Join with a link or code* (one field: an invite
  link, ``host:port`` and a code, ``host:port`` alone, or a code alone when one LAN server is
  known), Return to a stored room, Play vs CPU. When the session token cannot be stored, online
  play is switched off and CPU play is offered instead (O16);
* **server** — connected: Create room, or a room code / pasted invite link and Join;
* **room** — a room seen through a link (``peek``) with its Join button, focused (Enter or one click
  joins): opening a link never seats anyone (O1);
* **waiting** — the waiting room: the code, the invite link and Copy link (a hosted game: the other
  addresses of this machine too, or the note that only loopback exists), both seats with their
  names, connection and ready state, Ready, the fairness seal (the commitment of the next match,
  R1), on a server
  another player's game hosts the sentence that the host's computer referees, Leave;
* **connecting / reconnecting / error** — what is happening, and always a way back.

Taking a seat (host, join) first asks the player's name once (``name_popup.py``), then goes on.
A language selector sits at the top of every page (U5: with nothing saved the screen is Korean).
The session itself is the app's: the frame loop pumps it, and this scene reads its frozen
``SessionSnapshot``, rebuilding a page only when the snapshot changed — and never while the match
screen covers it (it is rebuilt when uncovered). When a match starts the one match screen
(:class:`~mineduel.client.scenes.game.GameScene`) is pushed over this one with an
:class:`OnlineMatchSession`; a new match id gives it the new match (O14), a failed session takes
it down again so this page shows why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pygame

from mineduel.client.i18n import native_name
from mineduel.client.online_client import Conn, FoundServer, HostInfo, LanRoom, OnlineClient, OnlineServices, SessionSnapshot
from mineduel.client.scenes.allow_watch import add_allow_watch, add_room_watch, say_watch_off
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.lobby_paint import LobbyPainter
from mineduel.client.scenes.lobby_seats import Seats, lan_entries
from mineduel.client.scenes.quick_match_lobby import add_home_quick, add_player_buttons
from mineduel.client.scenes.spectate_lobby import WatchEntry
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.client.ui import palette
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, TextEvent
from mineduel.client.ui.text import paragraph_height
from mineduel.client.ui.textfield import TextField
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.wire import links
from mineduel.shared.wire.names import INVITE_SCHEME, ROOM_CODE_ALPHABET

log = logging.getLogger(__name__)

W = 390
LEFT, INNER = 8, 374
TOP_BAR = pygame.Rect(0, 0, W, 60)
TITLE_Y = 84
CONTENT_Y = 112
CODE_CHARS = frozenset(ROOM_CODE_ALPHABET + ROOM_CODE_ALPHABET.lower() + "0o1il")
ADDRESS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]_")
LINK_CHARS = ADDRESS_CHARS | frozenset("/?=")  # "?pin=" on TLS links
RETRYABLE = ("online.server_unreachable", "online.connection_lost", "online.server_closed")  # errors with Retry
def pending_resume(data_dir: Path | None) -> SavedSession | None:
    """A stored seat whose match was running when the client stopped: resume it at start (O12)."""
    saved = TokenStore(data_dir).load()
    return saved if saved is not None and saved.playing else None


class OnlineMatchSession:
    """The match screen's :class:`~mineduel.client.scenes.game.Session` online, and the lobby's
    one match screen: shown when a match runs, given the new match when its id changes (O14),
    taken down when the session fails. Matches start on the server (nothing to begin or restart
    here); after the end the player goes back to the room."""

    difficulty = None
    can_restart = False
    language_button = True

    def __init__(self, lobby: OnlineScene) -> None:
        self.lobby = lobby
        self.scene: GameScene | None = None  # the match screen, while it is on the stack
        self.dismissed: str | None = None  # the finished match the player went back from

    def begin(self, scene: GameScene) -> None:
        pass

    def restart(self, scene: GameScene) -> None:
        pass

    def to_lobby(self, scene: GameScene) -> None:
        """Back to the room (after the end): the waiting room offers Ready (a rematch) or Leave."""
        self.match_left(scene)

    def follow(self, client: OnlineClient) -> None:
        """Show the match screen when a match runs; a new match id replaces its match (O14); a failed
        session takes it down (the lobby's page shows why, with a way back)."""
        ctx = self.lobby.ctx
        match = client.match
        scene = self.scene
        if scene is not None and scene not in ctx.stack.scenes:
            self.scene = scene = None
            if match is not None and match.outcome is None:
                return  # the player left the screen mid-match on purpose: the lobby shows Return
        if client.conn == Conn.FAILED:  # the lobby's error page says why; no match screen over it
            if scene is not None:
                self.match_left(scene)
            return
        if match is None or not match.ready:
            return
        if scene is None:
            if match.end is not None and self.dismissed == match.match_id:
                return
            scene = GameScene(ctx, self)
            self.scene = scene
            ctx.stack.push(scene)
        if scene.controller is not match:
            scene.attach(match)

    def match_left(self, scene: GameScene) -> None:
        """The match screen goes (Back to the room, or the session failed); the lobby shows again."""
        client = self.lobby.client
        self.dismissed = None if scene.controller is None or client is None or client.match is None else client.match.match_id
        self.scene = None
        scene.controller = None  # the session keeps the match; nothing to close here
        stack = self.lobby.ctx.stack
        if scene in stack.scenes:
            while stack.top is not scene:
                stack.pop()
            stack.pop()


def leave_finished_quick(client: OnlineClient) -> None:
    """Out of a finished quick match's room: ``leave`` before closing (§17: the room goes at once,
    not 24 h against the address) and no Return offered for it."""
    if client.connected and client.players.queue.finished_here():
        client.requests.leave()
        client.services.tokens.clear()


class OnlineScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context, *, join: str | None = None, resume: SavedSession | None = None,
                 on_play_cpu: Callable[[], None] | None = None, services: OnlineServices | None = None,
                 watch: str | None = None) -> None:
        super().__init__(ctx)
        self._join = join
        self._watch = watch  # issue 19: `mine-duel --watch LINK` opens the spectator screen at once
        self._resume = resume
        self._on_play_cpu = on_play_cpu
        self.services = services
        self.client: OnlineClient | None = None
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.fields: list[TextField] = []
        self.address_field = TextField(pygame.Rect(0, 0, 10, 52), lambda: self.ctx.t("friend.join_placeholder"),
                                       self._connect_typed, allowed=LINK_CHARS | frozenset(" "), max_len=200, name="address")
        self.code_field = TextField(pygame.Rect(0, 0, 10, 52), lambda: self.ctx.t("online.enter_code"),
                                    lambda text: self.seats.code_typed(text), allowed=LINK_CHARS, max_len=200, name="code")
        self.tokens_ok = True
        self.saved: SavedSession | None = None
        self.found: list[FoundServer] | None = None
        self.searching = False
        self.next_scan: float | None = None  # when the home page scans the LAN again
        self.seal_copied: bool | None = None
        self.local_notice: tuple[str, dict[str, object]] | None = None
        self.copied: bool | None = None
        self.hosting: str | None = None
        self.host_info: HostInfo | None = None  # the server this client started, once hosting
        self.page = ""
        self._seen: SessionSnapshot | None = None
        self._covered = False
        self.matches = OnlineMatchSession(self)
        self.painter = LobbyPainter(self)
        self.seats = Seats(self)
        self.watching = WatchEntry(self)  # issue 19: Watch (spectate_lobby.py)
        self.ys: dict[str, int] = {}  # where the page builder put things (rows) ...
        self.rects: dict[str, pygame.Rect] = {}  # ... and cards, for the painter
        self.rebuilds = 0  # pages built (a test counts them: a ping builds none)
        self.entries: list[tuple[FoundServer, LanRoom | None, pygame.Rect]] = []  # the home page's LAN rows

    # ----- lifecycle ----------------------------------------------------------------------------------
    def enter(self) -> None:
        services = self.services
        if services is None and self.ctx.online_services is not None:
            try:
                services = self.ctx.online_services()
            except Exception:
                log.exception("online services unavailable")
        if services is None:
            self.tokens_ok = False
            self.client = None
        else:
            self.services = services
            opener = self.ctx.open_session
            self.client = opener(services) if opener is not None else OnlineClient(services, self.ctx.clock)
            self.tokens_ok = services.tokens.available()
            self.saved = services.tokens.load()
            if self._resume is not None:
                self.client.resume_saved(self._resume)
            elif self._join is not None:
                self.open_link(self._join)
            self.next_scan = self.ctx.clock()  # the home page scans at once
        self._rebuild()
        if self.client is not None and self._watch is not None:
            self.watching.watch_link(self._watch)

    def leave(self) -> None:
        self.watching.close()
        if self.client is not None:
            leave_finished_quick(self.client)
            self.client.close()

    def pause(self, reason: str) -> None:
        if reason == "covered":
            self._covered = True

    def resume(self, reason: str) -> None:
        if reason == "covered":
            self._covered = False

    def relayout(self) -> None:
        self._rebuild()

    # ----- commands ---------------------------------------------------------------------------------------
    def set_language(self, code: str) -> None:
        """U5: switch and save; nothing about the room or the match changes."""
        self.ctx.tr.set_language(code)
        self.ctx.save_settings(replace(self.ctx.settings, language=code))
        self.ctx.stack.relayout()

    def play_cpu(self) -> None:
        if self.client is not None:
            self.client.close()
        stack = self.ctx.stack
        if len(stack.scenes) > 1:
            while stack.top is not self:
                stack.pop()
            stack.pop()
        elif self._on_play_cpu is not None:
            self._on_play_cpu()

    def back(self) -> None:
        """One step back: from a room or server to the home page; from home to the CPU game."""
        client = self.client
        if client is None or self.page == "home":
            self.play_cpu()
            return
        leave_finished_quick(client)
        client.close()  # a seat stays reserved for its stored token: the home page offers Return
        client.forget_room()
        client.error = None
        client.notice = None
        self.hosting = None
        self.local_notice = None
        self.saved = client.services.tokens.load()
        self.next_scan = self.ctx.clock()  # home again: scan the LAN at once
        self._rebuild()

    def open_link(self, link: str) -> None:
        """An invite link: connect and show the room with a Join button (O1: nobody is seated).

        A ``mineduels://`` link connects over TLS (its ``pin``, if any, names the certificate); a
        link without a room only connects to the server.
        """
        try:
            parsed = links.parse_link(link)
        except ValueError:
            self.local_notice = ("online.error.bad_link", {})
            self._rebuild()
            return
        client = self.client
        assert client is not None
        code = parsed.code
        then = None if code is None else (lambda: client.requests.peek(code))
        client.connect(parsed.host, parsed.port, then=then, tls=parsed.tls, pin=parsed.pin)

    def connect_to(self, host: str, port: int, *, tls: bool = False, pin: str | None = None) -> None:
        assert self.client is not None
        self.local_notice = None
        self.client.connect(host, port, tls=tls, pin=pin)

    def _connect_typed(self, text: str) -> None:
        """The home page's one field (Enter or its Join button): see :meth:`Seats.typed`."""
        self.seats.typed(text)

    def copy_link(self) -> None:
        client = self.client
        if client is None or not client.invite:
            return
        self.copied = bool(client.services.clipboard(client.invite))
        self._rebuild()

    def copy_seal(self) -> None:
        """The whole fairness commitment to the clipboard (the page shows its first 8 digits)."""
        client = self.client
        room = None if client is None else client.room
        if client is None or room is None or not room.next_commitment:
            return
        self.seal_copied = bool(client.services.clipboard(room.next_commitment))
        self._rebuild()

    def resume_saved(self) -> None:
        if self.client is not None and self.saved is not None:
            self.client.resume_saved(self.saved)

    def retry(self) -> None:
        client = self.client
        if client is None or client.address is None:
            return
        if client.token is not None and client.room_code is not None:
            client.resume_saved(SavedSession(client.address[0], client.address[1], client.room_code, client.token,
                                             tls=client.tls, pin=client.pin))
        else:
            client.connect(*client.address, tls=client.tls, pin=client.pin)

    # ----- pages -----------------------------------------------------------------------------------------------
    def _page_for_state(self) -> str:
        c = self.client
        if c is None:
            return "home"
        if c.conn == Conn.FAILED:
            return "error"
        if c.conn == Conn.CONNECTING:
            return "connecting"
        if c.conn == Conn.RECONNECTING:
            return "reconnecting"
        if c.conn == Conn.OPEN:
            if c.seated:
                return "waiting"
            if c.busy == "resume":
                return "connecting"
            if c.room_info is not None:
                return "room"
            return "server"
        return "home"

    def _room_label(self, name: str) -> str:
        """A LAN room's row: "<name>'s game", the name shortened ("...") to leave the code its room;
        anyone on the LAN may answer discovery, so a name is never trusted to be short."""
        t = self.ctx.t
        if not name:
            return t("friend.room_by_nobody")
        label, shown = t("friend.room_by", name=name), name
        while len(shown) > 1 and self.ctx.fonts.width(label, 16, True) > INNER - 56 - 110 - 54:  # 54: the Watch eye
            shown = shown[:-1]
            label = t("friend.room_by", name=shown.rstrip() + "...")
        return label

    def host_notes(self) -> list[tuple[str, bool]]:
        """Lines under a hosted game's link, ``(text, warning)``: where it is hosted, this machine's other
        addresses (a friend on another network may need one), and the note when only loopback
        exists — the friend must then be on this computer (lan_address.py)."""
        if not self.hosting:
            return []
        t = self.ctx.t
        notes = [(t("online.hosting", address=self.hosting), False)]
        info = self.host_info
        if info is None:
            return notes
        if info.only_loopback:
            notes.append((t("friend.only_loopback"), True))
        others = [links.invite_link(a, info.port, None)[len(INVITE_SCHEME) + 3:] for a in info.addresses[1:3]]
        if others:
            notes.append((t("friend.also_at", addresses=", ".join(others)), False))
        return notes

    def notice(self) -> tuple[str, dict[str, object]] | None:
        if self.local_notice is not None:
            return self.local_notice
        if self.client is not None and self.client.notice is not None:
            key, params = self.client.notice
            return key, dict(params)
        return None

    def _rebuild(self) -> None:
        self.page = self._page_for_state()
        self.rebuilds += 1
        if self.client is not None:
            self._seen = self.client.view.snapshot()
        t = self.ctx.t
        buttons: list[Button] = [
            Button(pygame.Rect(LEFT, 8, 46, 46), lambda: "", self.back, style="ghost", icon="back", icon_color=palette.INK,
                   radius=12, name="back"),
        ]
        x, gap = LEFT + 54, 5
        languages = self.ctx.languages
        width = (W - LEFT - x - (len(languages) - 1) * gap) // len(languages)
        current = self.ctx.tr.language
        for code in languages:
            buttons.append(Button(pygame.Rect(x, 10, width, 44), partial(native_name, code), partial(self.set_language, code),
                                  style="selected" if code == current else "ghost", text_size=14, radius=12,
                                  name=f"lang:{code}"))
            x += width + gap
        self.fields = []
        y = CONTENT_Y
        page = self.page
        c = self.client
        full = pygame.Rect(LEFT, 0, INNER, 0)
        bottom = pygame.Rect(LEFT, 844 - 16 - 50, INNER, 50)

        def button(h: int, label: Callable[[], str], action: Callable[[], None], **kw: Any) -> Button:
            nonlocal y
            b = Button(pygame.Rect(LEFT, y, INNER, h), label, action, **kw)
            buttons.append(b)
            y += h + 10
            return b

        self.ys = {}
        self.rects = {}
        self.entries = []
        focus_join = False
        if page == "home":
            if not self.tokens_ok:
                text_h = paragraph_height(self.ctx.fonts, t("online.token_unavailable"), 16, INNER - 40)
                self.rects["warning"] = pygame.Rect(LEFT, y, INNER, text_h + 32 + 60)
                buttons.append(Button(pygame.Rect(LEFT + 16, y + text_h + 28, INNER - 32, 50), lambda: t("online.play_cpu"),
                                      self.play_cpu, style="primary", icon="cpu", name="play_cpu_main"))
                y += text_h + 32 + 60 + 16
            enabled = self.tokens_ok and c is not None
            y = add_home_quick(self, buttons, y)  # issue 20: Quick match on the last search's server
            button(58, lambda: t("friend.host"), self.seats.host, style="primary", icon="online", name="host",
                   enabled=enabled and c.services.start_host is not None if c else False, text_size=19)
            y = add_allow_watch(self, buttons, y - 4)  # issue 19: Let others watch (allow_watch.py)
            y += 6
            self.ys["found_y"] = y
            can_scan = enabled and c is not None and c.services.discover is not None
            buttons.append(Button(pygame.Rect(LEFT + INNER - 46, y - 6, 46, 44), lambda: "", self.seats.scan, style="ghost",
                                  icon="restart", icon_color=palette.ME_LIGHT, radius=12, name="find",
                                  enabled=can_scan))  # pressed during a scan: nothing (the scan under way answers)
            y += 40
            entries = lan_entries(self.found) if enabled else []
            self.ys["list_y"] = y
            for server, lan_room in entries:
                if lan_room is not None:
                    label = self._room_label(lan_room.host_name)
                    row = button(54, partial(str, label), partial(self.seats.join_listed, server, lan_room), style="secondary",
                                 icon="person", icon_color=palette.OPP, layout="list", text_size=16, name=f"room:{lan_room.code}")
                    row.rect.width -= 54  # the eye beside it watches the room (issue 19)
                    # A room that refuses spectators: a faint, struck eye (lobby_paint) whose tap says why at once.
                    watch = (partial(self.watching.watch_listed, server, lan_room) if lan_room.watchable
                             else partial(say_watch_off, self))
                    buttons.append(Button(pygame.Rect(row.rect.right + 8, row.rect.top, 46, 54), lambda: "", watch,
                                          style="ghost", icon="eye",
                                          icon_color=palette.ME_LIGHT if lan_room.watchable else palette.INK_FAINT,
                                          radius=12, name=f"watch:{lan_room.code}"))
                else:
                    label = f"{server.name}  ({server.open_rooms})"
                    button(54, partial(str, label), partial(self.connect_to, server.host, server.port, tls=server.tls,
                                                            pin=server.pin),
                           style="ghost", icon="globe", icon_color=palette.ME_LIGHT, layout="list", text_size=15,
                           name=f"server:{server.host}:{server.port}")
            rows = [b for b in buttons if b.name.startswith(("room:", "server:"))]  # the entries' buttons, just added
            self.entries = [(server, lan_room, b.rect) for (server, lan_room), b in zip(entries, rows, strict=True)]
            if not entries:
                if enabled:  # online off (no token store): nothing to say about the LAN
                    self.ys["empty_y"] = y
                y += 44
            y += 6
            self.ys["connect_y"] = y
            y += 32
            self.address_field.rect = pygame.Rect(LEFT, y, INNER, 52)
            self.fields.append(self.address_field)
            y += 60
            half = (INNER - 10) // 2
            buttons.append(Button(pygame.Rect(LEFT, y, half, 50), lambda: t("online.join"),
                                  lambda: self._connect_typed(self.address_field.text), icon="person", icon_color=palette.OPP,
                                  name="connect", enabled=enabled))
            buttons.append(Button(pygame.Rect(LEFT + half + 10, y, INNER - half - 10, 50), lambda: t("watch.button"),
                                  lambda: self.watching.typed(self.address_field.text), icon="eye", icon_color=palette.ME_LIGHT,
                                  name="watch", enabled=enabled))
            y += 60
            if self.saved is not None and enabled:
                code = self.saved.room
                button(50, lambda: t("online.resume_room", room=code), self.resume_saved, icon="restart",
                       icon_color=palette.ME_LIGHT, name="resume")
            self.ys["notice_y"] = y
            buttons.append(Button(bottom, lambda: t("online.play_cpu"), self.play_cpu, style="ghost", icon="cpu",
                                  icon_color=palette.OPP, name="play_cpu"))
        elif page == "server":
            self.ys["info_y"] = y
            y += 34
            y = add_player_buttons(self, buttons, y)  # issue 20: Quick match, Profile, Leaderboard
            y = add_allow_watch(self, buttons, y - 4)  # issue 19: Let others watch (allow_watch.py)
            button(56, lambda: t("online.create_room"), self.seats.create, style="primary", icon="grid",
                   name="create", enabled=self.tokens_ok and c is not None and c.busy is None, text_size=18)
            self.ys["code_y"] = y + 4
            y += 34
            self.code_field.rect = pygame.Rect(LEFT, y, INNER, 52)
            self.fields.append(self.code_field)
            y += 60
            half = (INNER - 10) // 2
            buttons.append(Button(pygame.Rect(LEFT, y, half, 50), lambda: t("online.join"),
                                  lambda: self.seats.code_typed(self.code_field.text), style="primary", name="join_code",
                                  enabled=self.tokens_ok and c is not None and c.busy is None))
            buttons.append(Button(pygame.Rect(LEFT + half + 10, y, INNER - half - 10, 50), lambda: t("watch.button"),
                                  lambda: self.watching.code_typed(self.code_field.text), icon="eye",
                                  icon_color=palette.ME_LIGHT, name="watch_code", enabled=c is not None))
            y += 60
            self.ys["notice_y"] = y
            if self.notice() is not None:
                y += 64
            y = self.watching.add_live_rows(buttons, y + 6)
            buttons.append(Button(bottom, lambda: t("action.back"), self.back, style="ghost", icon="back", name="disconnect"))
        elif page == "room":
            info = c.room_info if c else None
            self.rects["card"] = pygame.Rect(LEFT, y, INNER, 262)  # three status lines, then the seal
            y += 262 + 14
            room = None if info is None else info.room
            can_join = bool(info and info.open) and self.tokens_ok and c is not None and c.busy is None
            button(56, lambda: t("online.join"), partial(self.seats.join, room) if c and room else (lambda: None),
                   style="primary", icon="person", name="join", enabled=can_join, text_size=18)
            # Issue 19: a room that refuses spectators says so on its Watch (peek's watchable, §5); an
            # older server does not say, and its spectate answers for itself.
            off = info is not None and not info.watchable
            button(52, lambda: t("watch.off_here" if off else "watch.button"), self.watching.watch_room_page, icon="eye",
                   icon_color=palette.INK_FAINT if off else palette.ME_LIGHT, name="watch_room",
                   enabled=room is not None and not off, text_size=15 if off else 17)
            focus_join = can_join
            self.ys["notice_y"] = y
            buttons.append(Button(bottom, lambda: t("action.back"), self.back, style="ghost", icon="back", name="room_back"))
        elif page == "waiting":
            notes = self.host_notes()
            notes_h = sum(paragraph_height(self.ctx.fonts, text, 13, INNER - 36) + 6 for text, _warn in notes)
            self.rects["code_card"] = pygame.Rect(LEFT, y, INNER, 152 + notes_h + (8 if notes else 0))
            card = self.rects["code_card"]
            buttons.append(Button(pygame.Rect(card.right - 14 - 150, card.top + 14, 150, 46), lambda: t("online.copy_link"),
                                  self.copy_link, icon="export", icon_color=palette.ME_LIGHT, name="copy", text_size=15))
            y = card.bottom + 12
            self.ys["seats_y"] = y
            y += 96 + 12
            ready = c is not None and c.room is not None and c.room.me.ready
            has_opponent = c is not None and c.room is not None and c.room.opponent is not None
            toggle_ready = partial(c.requests.ready, not ready) if c else (lambda: None)
            button(56, lambda: t("online.ready_done" if ready else "online.ready"), toggle_ready,
                   style="selected" if ready else "primary", icon="check" if ready else None, name="ready",
                   enabled=has_opponent and c is not None and c.connected, text_size=18)
            self.ys["status_y"] = y
            y += 34
            self.ys["commit_y"] = y
            if c is not None and c.room is not None and c.room.next_commitment:
                buttons.append(Button(pygame.Rect(LEFT + INNER - 10 - 44, y + 6, 44, 44), lambda: "", self.copy_seal,
                                      style="ghost", icon="export", icon_color=palette.ME_LIGHT, radius=12, name="copy_seal"))
            add_room_watch(self, buttons, y + 84 + 12)  # issue 19: the creator turns watching on/off (§16)
            buttons.append(Button(bottom, lambda: t("online.leave"), c.requests.leave if c else (lambda: None), style="ghost",
                                  icon="quit", icon_color=palette.OPP, name="leave"))
        elif page in ("connecting", "reconnecting"):
            self.ys["message_y"] = 300
            buttons.append(Button(bottom, lambda: t("online.back_to_menu"), self.back, style="ghost", icon="back", name="cancel"))
        elif page == "error":
            self.ys["message_y"] = 260
            y = 420
            retryable = c is not None and c.error in RETRYABLE
            if c is not None and c.address is not None and retryable:
                button(52, lambda: t("online.retry"), self.retry, style="primary", icon="restart", name="retry")
            buttons.append(Button(bottom, lambda: t("online.back_to_menu"), self.back, style="ghost", icon="back",
                                  name="to_menu"))
        del full
        self.widgets.set(buttons)
        if focus_join and self.widgets.focused() is None:
            self.widgets.focus_name("join")  # a clicked link lands here: Enter or one click joins
        self.ctx.invalidate(None)

    # ----- the frame -------------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        """Read the session's snapshot (the app's frame loop pumped it): rebuild only when it changed."""
        client = self.client
        if client is None:
            return
        if self.ctx.open_session is None:
            client.update()  # no app pumps it (a scene made on its own)
        client.players.follow_name(self.ctx.settings.player_name)  # identify / rename (issue 20)
        self.matches.follow(client)
        if self._covered:
            return  # rebuilt when uncovered (SceneStack.pop relayouts the new top)
        if self.page == "home" and self.next_scan is not None and now >= self.next_scan and not self.searching:
            self.next_scan = None  # set again when the answers are in
            self.seats.scan()
        snapshot = client.view.snapshot()
        if snapshot != self._seen or self._page_for_state() != self.page:
            if self.page != "waiting" or self._page_for_state() != "waiting":
                self.copied = self.seal_copied = None
            self._rebuild()

    def next_wakeup(self, now: float) -> float | None:
        if self.client is None:
            return None
        wake = self.client.next_wakeup()
        if self.page == "home" and self.next_scan is not None and not self._covered:
            wake = self.next_scan if wake is None else min(wake, self.next_scan)
        if self.searching or self.client.conn in (Conn.CONNECTING, Conn.RECONNECTING) or self.client.busy:
            wake = min(wake or now + 0.1, now + 0.1)
        return wake

    # ----- input -------------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, PointerEvent) and event.kind is PointerKind.DOWN:
            for f in self.fields:
                was = f.focused
                f.handle(event)
                if was != f.focused:
                    self.ctx.invalidate(f.rect.inflate(12, 12))
        if isinstance(event, (KeyEvent, TextEvent)):
            focused = next((f for f in self.fields if f.focused), None)
            if focused is not None:
                used = focused.handle(event)
                self.ctx.invalidate(focused.rect.inflate(12, 12))
                if used:
                    return True
            if isinstance(event, TextEvent):
                return False
            if event.key == pygame.K_ESCAPE:
                self.back()
                return True
            if event.key == pygame.K_TAB and self.fields and self.widgets.focus is None and focused is None:
                self.fields[0].focused = True
                self.ctx.invalidate(None)
                return True
        return self.widgets.handle(event)

    # ----- drawing -------------------------------------------------------------------------------------------------
    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.painter.draw(canvas, area)
